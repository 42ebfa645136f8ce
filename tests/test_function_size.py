"""No function of the layered packages runs to 80 lines (issue 62): a function that long does more than one thing,
and the step it hides deserves a name.

Lines from `def` (decorators not counted) to the function's last line, after `ruff format`, as a reader scrolls
through them; a nested function counts inside the one that holds it and on its own. Scripts (`scripts/`, `bench/`)
stand alone and are not counted, as in `test_module_size.py`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.layered_modules import layered_modules

ROOT = Path(__file__).resolve().parent.parent
MOST_LINES = 79


def long_functions(root: Path, most: int = MOST_LINES) -> dict[str, int]:
    """Each function under `root`'s packages longer than `most` lines, as `path:line name`, with its line count."""
    counts = {}
    for path in layered_modules(root):
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > most:
                    counts[f"{path.relative_to(root).as_posix()}:{node.lineno} {node.name}"] = lines
    return counts


def test_no_function_is_80_lines_or_more() -> None:
    assert long_functions(ROOT) == {}


def test_a_long_function_is_named_with_its_length(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    body = "    x = 1\n"
    (tmp_path / "harness" / "short.py").write_text("def short():\n" + body * 78)
    (tmp_path / "harness" / "long.py").write_text("x = 0\n\n\nasync def long():\n" + body * 79)
    assert long_functions(tmp_path) == {"harness/long.py:4 long": 80}
