"""The names users type: a dataset config runs all of its tasks, lm-eval's `--tasks list`, `--version`,
and a `--help` that imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.config.task_index import TaskIndex


@pytest.mark.slow  # harness runs end to end
def test_a_config_name_runs_its_positives_and_negatives(tmp_path: Path, harness, needle_run) -> None:
    run = needle_run("mmneedle_m1_n2_k1", "constant", tmp_path, model_args="answer=-1")
    assert run.code == 0, run.err
    assert set(run.results("constant")["results"]) == {"mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg"}
    typo = harness("--tasks", "mmneedle_m1_n2_k3", "--model", "constant", "--model_args", "answer=-1")
    assert typo.code == 2 and "did you mean: mmneedle_m1_n2_k5, mmneedle_m1_n2_k2, mmneedle_m1_n2_k1," in typo.err


def test_tasks_list_and_version(harness) -> None:
    listed = harness("--tasks", "list")
    total = len(TaskIndex().tasks)  # every benchmark's leaves: the count grows as benchmarks are added
    assert listed.code == 0 and f"Tasks ({total}):" in listed.out and "mmneedle_m10_n4_k1 " in listed.out
    assert f"Dataset configs ({len(TaskIndex().dataset_configs())};" in listed.out  # read from the index, as tasks
    groups = harness("--tasks", "list_groups")
    assert groups.code == 0 and "mmneedle_k1" in groups.out and "Tasks (" not in groups.out
    proc = subprocess.run(
        [sys.executable, "-m", "harness.run.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.startswith("harness (mmlongeval) 0.")


def test_python_dash_m_harness_is_the_harness_command() -> None:
    by_module = subprocess.run(
        [sys.executable, "-m", "harness", "--version"], capture_output=True, text=True, timeout=60
    )
    by_cli = subprocess.run(
        [sys.executable, "-m", "harness.run.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert by_module.returncode == 0, by_module.stderr
    assert by_module.stdout == by_cli.stdout and by_module.stdout.startswith("harness (mmlongeval) 0.")


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\nfrom harness.run.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit as e:\n"
        "    assert e.code == 0\nheavy = [m for m in ('datasets', 'pandas', 'pyarrow', 'torch', 'PIL') if m in sys.modules]\n"
        "print(','.join(heavy) or 'none')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "none"
