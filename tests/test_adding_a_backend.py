"""A new backend is one package and one registry line: add the toy backend (`tests/support/toy_backend.py`) to a copy
of the project as `harness/models/toy/__init__.py` and its line to `harness/models/registry.py`, and `harness` runs,
screens and reports with it, with no other edit (docs/ADDING_A_BACKEND.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.project_copy import add_registry_line, changed_lines, copy_and_add, run_in_copy
from tests.support.toy_benchmark import build_toy, write_toy_tasks
from tests.test_adding_a_benchmark import code_lines

PACKAGES = ("builders", "harness", "tasks")
TOY_BACKEND = PROJECT / "tests" / "support" / "toy_backend.py"
REGISTRY = Path("harness") / "models" / "registry.py"
REGISTRY_LINE = '    "toy": "harness.models.toy",\n'


def add_toy_backend(root: Path) -> None:
    """The backend guide's two: the toy backend's package and its line in the backends' registry."""
    package = root / "harness" / "models" / "toy" / "__init__.py"
    package.parent.mkdir()
    shutil.copy(TOY_BACKEND, package)
    (root / REGISTRY).write_text(add_registry_line((root / REGISTRY).read_text(), "BACKENDS", REGISTRY_LINE))


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's packages copied, then the toy backend's package and registry line added; nothing else touched."""
    root = tmp_path_factory.mktemp("project")
    before, after = copy_and_add(root, PACKAGES, add_toy_backend)
    assert set(after) - set(before) == {Path("harness", "models", "toy", "__init__.py")}
    assert [path for path in before if before[path] != after[path]] == [REGISTRY]
    assert changed_lines(before[REGISTRY], after[REGISTRY]) == ["+ " + REGISTRY_LINE]
    return root


def run(root: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`harness ARGV` in the copy at `root`, in a child process."""
    return run_in_copy(root, tmp_path, "harness.run.cli", *argv)


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
    added = add_registry_line(source, "BACKENDS", REGISTRY_LINE)
    table = added[added.index("BACKENDS: dict[str, str] = {") :].split("}")[0]
    assert table.rstrip().endswith(REGISTRY_LINE.rstrip()) and added.count(REGISTRY_LINE) == 1
