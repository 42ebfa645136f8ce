"""No module of the layered packages runs past 400 lines (issue 35): a module that long has grown a second job.

Physical lines as `wc -l` counts them, after `ruff format` (which `make lint` checks), so the figure is the one a
reader scrolls through. Scripts (`scripts/`, `bench/`) stand alone and are not counted.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.layered_modules import layered_modules

ROOT = Path(__file__).resolve().parent.parent
MOST_LINES = 400


def long_modules(root: Path, most: int = MOST_LINES) -> dict[str, int]:
    """Each module under `root`'s packages longer than `most` lines, with its line count."""
    counts = {}
    for path in layered_modules(root):
        lines = len(path.read_bytes().splitlines())
        if lines > most:
            counts[path.relative_to(root).as_posix()] = lines
    return counts


def test_no_module_is_over_400_lines() -> None:
    assert long_modules(ROOT) == {}


def test_a_long_module_is_named_with_its_length(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "short.py").write_text("x = 1\n" * 400)
    (tmp_path / "harness" / "long.py").write_text("x = 1\n" * 401)
    assert long_modules(tmp_path) == {"harness/long.py": 401}
