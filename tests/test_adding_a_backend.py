"""A new backend is one package and one registry line: add the toy backend (`tests/support/toy_backend.py`) to a copy
of the project as `harness/models/toy/__init__.py` and its line to `harness/models/registry.py`, and `harness` runs,
screens and reports with it, with no other edit (docs/ADDING_A_BACKEND.md)."""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.toy_benchmark import build_toy, write_toy_tasks
from tests.test_adding_a_benchmark import code_lines

PACKAGES = ("builders", "harness", "tasks")
TOY_BACKEND = PROJECT / "tests" / "support" / "toy_backend.py"
REGISTRY = Path("harness") / "models" / "registry.py"
REGISTRY_LINE = '    "toy": "harness.models.toy",\n'


def add_registry_line(source: str, line: str) -> str:
    """`line` as the last entry of the registry's `BACKENDS` table."""
    table = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "BACKENDS"
    )
    assert table.value is not None and table.value.end_lineno is not None
    lines = source.splitlines(keepends=True)
    closing = table.value.end_lineno - 1  # the line of the table's closing brace
    return "".join(lines[:closing] + [line] + lines[closing:])


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's packages copied, then the toy backend's package and registry line added; nothing else touched."""
    root = tmp_path_factory.mktemp("project")
    for package in PACKAGES:
        shutil.copytree(PROJECT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    package = root / "harness" / "models" / "toy" / "__init__.py"
    package.parent.mkdir()
    shutil.copy(TOY_BACKEND, package)
    (root / REGISTRY).write_text(add_registry_line((root / REGISTRY).read_text(), REGISTRY_LINE))
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert set(after) - set(before) == {package.relative_to(root)}
    assert [path for path in before if before[path] != after[path]] == [REGISTRY]
    diff = difflib.ndiff(before[REGISTRY].decode().splitlines(True), after[REGISTRY].decode().splitlines(True))
    assert [line for line in diff if line[:2] in ("+ ", "- ")] == ["+ " + REGISTRY_LINE]
    return root


def run(root: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(tmp_path / "hf_cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow  # copies the project, then runs, screens and reports in child processes
def test_a_new_backend_needs_only_its_package_and_one_registry_line(project_copy: Path, tmp_path: Path) -> None:
    data, tasks = build_toy(tmp_path / "data").parent, write_toy_tasks(tmp_path / "toy_tasks")
    listed = run(project_copy, tmp_path, "models")
    assert listed.returncode == 0 and "  toy\n" in listed.stdout.split("Aliases")[0], listed.stderr

    common = ["--tasks", "toy", "--data_dir", str(data), "--include_path", str(tasks), "--no_progress"]
    out = tmp_path / "results"
    evaluated = run(project_copy, tmp_path, *common, "--model", "toy", "--output_path", str(out), "--device", "cpu")
    assert evaluated.returncode == 0, evaluated.stderr
    # What its declaration says, where the harness reads it: --device means nothing to it, its folder is its name.
    assert "--device cpu: the toy backend places itself; the flag changes nothing" in evaluated.stderr
    (results_file,) = (out / "toy").glob("results_*.json")
    results = json.loads(results_file.read_text())
    # It names each square's colour, and whether two squares match: every answer of both tasks right.
    assert results["results"]["toy_colors"]["acc,none"] == 1.0 and results["results"]["toy_pairs"]["acc,none"] == 1.0
    assert results["config"]["model"] == "toy" and results["config"]["model_args"] == {}

    screened = run(project_copy, tmp_path, *common, "--model", "toy", "--model_args", "max_images=1", "--screen_only")
    assert screened.returncode == 0, screened.stderr
    assert "Screen only (toy): context limit none given, image cap 1." in screened.stdout
    pairs = next(line for line in screened.stdout.splitlines() if line.startswith("| toy_pairs |"))
    samples = int(pairs.split("|")[2])
    assert pairs.startswith(f"| toy_pairs | {samples} | 0 | 0 | {samples} | 0 |") and samples > 0

    refused = run(project_copy, tmp_path, *common, "--model", "toy", "--model_args", "colour=red")
    assert refused.returncode == 2 and "unknown model argument 'colour'" in refused.stderr, refused.stderr

    report = run(project_copy, tmp_path, "report", str(out), "--no_figures")
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "toy" in text and "(toy)" not in text  # a plain backend: labelled with its name alone


def test_the_guide_shows_the_toy_backend_as_it_is_and_it_is_short() -> None:
    backend = TOY_BACKEND.read_text()
    guide = (PROJECT / "docs" / "ADDING_A_BACKEND.md").read_text()
    assert backend in re.findall(r"^```python\n(.*?)^```", guide, flags=re.S | re.M)
    assert f"`{REGISTRY_LINE.strip()}`" in guide
    assert code_lines(backend) <= 50


def test_the_registry_line_goes_at_the_end_of_the_table() -> None:
    source = (PROJECT / REGISTRY).read_text()
    added = add_registry_line(source, REGISTRY_LINE)
    table = added[added.index("BACKENDS: dict[str, str] = {") :].split("}")[0]
    assert table.rstrip().endswith(REGISTRY_LINE.rstrip()) and added.count(REGISTRY_LINE) == 1
