"""A copy of the project for the guides' tests (docs/ADDING_A_BACKEND.md, ADDING_A_BENCHMARK.md,
ADDING_A_MODEL_FAMILY.md): its packages copied, every file's bytes read before and after a guide's files are added,
a registry line added at the end of its table, the toy benchmark and the toy family added as their guides show, and
a module of the copy run in a child process."""

from __future__ import annotations

import ast
import difflib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.support.paths import PROJECT
from tests.support.toy_benchmark import CARD_TEMPLATE, write_toy_tasks

FileBytes = dict[Path, bytes]
TOY_BUILDER = PROJECT / "tests" / "support" / "toy_builder.py"
TOY_FAMILY = PROJECT / "tests" / "support" / "toy_family.py"
TOY_TEMPLATE = PROJECT / "tests" / "support" / "toy_chat.jinja"
FAMILY_REGISTRY = Path("harness") / "models" / "families" / "__init__.py"
FAMILY_REGISTRY_LINE = '    "toy": "harness.models.families.toy",\n'


def _file_bytes(root: Path) -> FileBytes:
    """Every file below `root`, by its path relative to it, with its bytes."""
    return {path.relative_to(root): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def copy_and_add(root: Path, packages: Iterable[str], add: Callable[[Path], None]) -> tuple[FileBytes, FileBytes]:
    """The project's `packages` copied into `root`, then `add(root)`: every file's bytes before and after it."""
    for package in packages:
        shutil.copytree(PROJECT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    before = _file_bytes(root)
    add(root)
    return before, _file_bytes(root)


def changed_lines(before: bytes, after: bytes) -> list[str]:
    """The lines added (`+ `) and removed (`- `) from one file's text `before` to `after`."""
    diff = difflib.ndiff(before.decode().splitlines(True), after.decode().splitlines(True))
    return [line for line in diff if line[:2] in ("+ ", "- ")]


def add_registry_line(source: str, table: str, line: str) -> str:
    """`line` as the last entry of the module-level table `table` (`BACKENDS: dict[str, str] = {...}`) of `source`."""
    found = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == table
    )
    assert found.value is not None and found.value.end_lineno is not None
    lines = source.splitlines(keepends=True)
    closing = found.value.end_lineno - 1  # the line of the table's closing brace
    return "".join(lines[:closing] + [line] + lines[closing:])


def add_toy_benchmark(root: Path) -> None:
    """The benchmark guide's three: the toy's builder package, its card template and its task folder."""
    (root / "builders" / "toy").mkdir()
    shutil.copy(TOY_BUILDER, root / "builders" / "toy" / "__init__.py")
    (root / "dataset_cards" / "toy").mkdir()
    (root / "dataset_cards" / "toy" / "card.md.jinja").write_text(CARD_TEMPLATE)
    write_toy_tasks(root / "tasks" / "toy")


def add_toy_family(root: Path) -> None:
    """The family guide's: the toy family's module, its template and its line in the families' registry."""
    folder = root / "harness" / "models" / "families"
    shutil.copy(TOY_FAMILY, folder / "toy.py")
    shutil.copy(TOY_TEMPLATE, folder / "toy_chat.jinja")
    registry = (root / FAMILY_REGISTRY).read_text()
    (root / FAMILY_REGISTRY).write_text(add_registry_line(registry, "FAMILIES", FAMILY_REGISTRY_LINE))


def run_in_copy(root: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m ARGV` in the copy at `root` (its packages first on the path), offline, its datasets cache under
    `tmp_path`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(tmp_path / "hf_cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False
    )
