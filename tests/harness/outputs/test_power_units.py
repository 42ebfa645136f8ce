"""Issue 63 item 5: `harness power --effect` in one unit in every mode and benchmark, points on the 0-100 scale
report.md shows (MMNeedle's proportions and MMLongBench's percentages alike), said in the header; the table grouped
by benchmark, at most a screen per benchmark unless `--all`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from builders.mmlongbench import build_mmlongbench
from harness.run.cli import main

VH = "mmlongbench_niah_vh_single_8k"
NEEDLE = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k2_pos"]
Z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """The random baseline on MMNeedle tasks (proportions) and an MMLongBench one (0-100), in one folder."""
    root = tmp_path_factory.mktemp("power_units")
    build_mmlongbench(source="fixture", out_dir=root / "data", configs=["niah_vh_single_8k"])
    out = root / "results"
    common = ["--model", "random", "--output_path", str(out), "--no_progress"]
    assert main(["--tasks", VH, "--data_dir", str(root / "data"), *common]) == 0
    assert main(["--tasks", ",".join(NEEDLE), "--data_dir", str(data_dir), *common]) == 0
    return out


def _power(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    capsys.readouterr()
    assert main(["power", *map(str, argv)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("mode", ["--paired", "--unpaired", "--one_sample"])
def test_effect_3_is_3_points_on_every_benchmark(
    mixed_run: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    found = json.loads(_power(capsys, mixed_run, "--effect", "3", mode, "--json"))
    rows = [row for row in found["rows"] if isinstance(row["mde"], float)]
    assert {row["benchmark"] for row in rows} == {"mmneedle", "mmlongbench"}
    for row in rows:
        assert row["unit"] == "points (0-100)"
        # a random 0/1 score has an sd of tens of points, whichever scale its benchmark records
        assert 10 < row["sd"] < 60, row
        needed = math.ceil(row["design_effect"] * (Z * row["comparison_sd"] / 3) ** 2)
        assert row["rows_needed"] == needed > row["n"], row  # 3 points need more rows than these few
    # the same effect as a proportion would have been 0.03: 100 times the difference, 10,000 times fewer rows
    small = json.loads(_power(capsys, mixed_run, "--effect", "0.03", mode, "--json"))
    assert all(
        a["rows_needed"] > 1000 * b["rows_needed"]
        for a, b in zip(small["rows"], found["rows"], strict=True)
        if b["rows_needed"]
    )


def test_the_table_says_its_unit_and_groups_rows_by_benchmark_a_screen_each(
    mixed_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.outputs.power import command as power_command

    text = _power(capsys, mixed_run, "--effect", "3")
    assert "Unit: points on the 0-100 scale report.md shows, for every benchmark" in text
    assert "rows needed for a difference of 3 points" in text
    lines = text.splitlines()
    heads = [line for line in lines if line.startswith(("mmneedle (", "mmlongbench ("))]
    assert len(heads) == 2
    monkeypatch.setattr(power_command, "SCREEN_ROWS", 2)  # a screen of two rows: the cut and `--all` seen here
    cut = _power(capsys, mixed_run, "--effect", "3")
    assert "more rows of mmneedle (--all shows every row" in cut
    every = _power(capsys, mixed_run, "--effect", "3", "--all")
    assert "more rows of" not in every and len(every.splitlines()) > len(cut.splitlines())
