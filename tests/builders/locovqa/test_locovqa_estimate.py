"""LoCoVQA's build plan: the size it announces is close to the size the build then takes, for the drawn
stand-in at a small cell (whose grids compress far better than COCO photos) as for larger ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builders.locovqa import build_locovqa

CONFIGS = ["okvqa_cmp_9", "okvqa_int_4", "mmstar_int_9", "mnist_cmp_4", "needle_int_4"]
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def _announced(err: str) -> float:
    ((value, unit),) = re.findall(r"^plan: .*?; about ([\d.]+) (B|kB|MB|GB) and", err, flags=re.M)
    return float(value) * UNITS[unit]


@pytest.mark.parametrize("cell_size", [112, 336])
def test_the_planned_size_is_within_a_third_of_the_built_size(tmp_path: Path, capsys, cell_size: int) -> None:
    assert build_locovqa(None, tmp_path, CONFIGS, limit=2, cell_size=cell_size, num_proc=1, dry_run=True) is None
    announced = _announced(capsys.readouterr().err)
    folder = build_locovqa(None, tmp_path, CONFIGS, limit=2, cell_size=cell_size, num_proc=1)
    built = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert built / 1.33 < announced < built * 1.33, (announced, built)
