"""No benchmark is named in shared code (issue 50, done-when): outside docstrings and comments, nothing in `harness/`
or `builders/core/` holds the name of a benchmark (each folder of `builders/`), in any case. What a benchmark knows lives in its own
`builders/<benchmark>/` and `tasks/<benchmark>/`, found through the registry and the task configuration; a docstring
or a comment may still cite a paper or its code.

Read from the source with `tokenize`: a comment token, and a string that is a docstring (an expression statement of
its own, as a module's, class's or function's first), are left out; every other token (a name, a string, an f-string
part) counts.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ("harness", "builders/core")


def _names() -> re.Pattern[str]:
    """Each benchmark's name, as the `builders` package's folders give them (a new benchmark is found, not listed)."""
    from builders.core.benchmark import benchmark_names as installed

    return re.compile("|".join(re.escape(name) for name in installed()), re.IGNORECASE)


NAMES = _names()


def _docstring_lines(source: str) -> set[int]:
    """The lines of every string that stands as a statement of its own (docstrings, and strings used as notes)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def benchmark_names(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line: token` for each token of `path` naming a benchmark, outside comments and docstrings."""
    source = path.read_text(encoding="utf-8")
    docstrings = _docstring_lines(source)
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        if NAMES.search(token.string):
            found.append(f"{path.relative_to(root).as_posix()}:{token.start[0]}: {token.string[:80]}")
    return found


def shared_modules(root: Path = ROOT) -> list[Path]:
    return sorted(path for folder in SHARED for path in (root / folder).rglob("*.py"))


def test_no_shared_module_names_a_benchmark() -> None:
    found = [hit for path in shared_modules() for hit in benchmark_names(path)]
    assert not found, "benchmark names in shared code:\n" + "\n".join(found)


def test_the_check_finds_a_name_in_code_and_passes_docstrings_and_comments(tmp_path: Path) -> None:
    module = tmp_path / "harness" / "x.py"
    module.parent.mkdir()
    module.write_text(
        '"""Cites MMLongBench\'s run_eval.sh."""\n'
        "# as MileBench's worker does\n"
        "def f(task):\n"
        '    """A note on MMNeedle."""\n'
        '    return task.startswith("mmlongbench_")  # here\n'
        'NOTE = f"{1} LoCoVQA"\n'
    )
    found = benchmark_names(module, tmp_path)
    assert [hit.split(": ")[0] for hit in found] == ["harness/x.py:5", "harness/x.py:6"]  # each named by file:line
    assert '"mmlongbench_"' in found[0] and "LoCoVQA" in found[1]
