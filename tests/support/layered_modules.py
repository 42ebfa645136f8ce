"""The modules of the layered packages, which the repository-wide checks read (`test_layers.py`,
`test_module_size.py`, `test_function_size.py`); scripts (`scripts/`, `bench/`) stand alone and are not among them."""

from __future__ import annotations

from pathlib import Path

LAYERED = ("builders", "harness", "tasks")


def layered_modules(root: Path) -> list[Path]:
    """Every `.py` file of the layered packages under `root`, package by package, each package's sorted."""
    return [path for package in LAYERED for path in sorted((root / package).rglob("*.py"))]
