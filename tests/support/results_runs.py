"""Results folders made in process for the tests of what reads them (`harness report`, `view`, `merge`): a `harness`
run into a folder (for a module-scoped fixture, which cannot take the function-scoped `harness` fixture), the two
baselines side by side, the random baseline on a synthetic LoCoVQA build, and task code planted where a results
file's `--include_path` points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def harness_run(out: Path, data_dir: Path, tasks: str, model: str, *args: str) -> Path:
    """`harness --tasks TASKS --model MODEL ARGS --data_dir DATA_DIR --output_path OUT`, in process; asserts it
    exits 0 and returns `out`."""
    from harness.run.cli import main

    argv = ["--tasks", tasks, "--model", model, *args, "--data_dir", str(data_dir), "--output_path", str(out)]
    assert main([*argv, "--no_progress"]) == 0
    return out


def run_both_baselines(out: Path, data_dir: Path, tasks: str) -> Path:
    """The `random` baseline and the `constant` one (answering -1, never right) on `tasks`, into `out`."""
    harness_run(out, data_dir, tasks, "random")
    return harness_run(out, data_dir, tasks, "constant", "--model_args", "answer=-1")


def locovqa_random_run(tmp_path_factory: pytest.TempPathFactory, name: str, configs: list[str], limit: int) -> Path:
    """The random baseline's results folder over a synthetic LoCoVQA build of `configs`, `limit` items each."""
    from builders.locovqa import build_locovqa

    data = tmp_path_factory.mktemp(f"{name}_data")
    build_locovqa(["synthetic"], data, configs, limit=limit, cell_size=16)
    tasks = ",".join(f"locovqa_{config}" for config in configs)
    return harness_run(tmp_path_factory.mktemp(f"{name}_results"), data, tasks, "random")


def planted_task_code(toy_tasks: Path, folder: Path, mark: Path, benchmark: str) -> Path:
    """A copy of the toy task folder at `folder` whose `utils.py` writes `mark` when imported and declares the
    benchmark `benchmark` (a report hook); the hooks' own source is unchanged, so the copy is the same task."""
    import shutil

    planted = Path(shutil.copytree(toy_tasks, folder))
    (planted / "utils.py").write_text(
        f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n"
        + (planted / "utils.py").read_text()
        + "\nfrom harness.config.benchmark import BenchmarkDeclaration\nfrom harness.outputs.report.hooks import ReportHooks\n"
        + "\ndef report(model, data, out_dir):\n    return []\n"
        + f"\nBENCHMARK = BenchmarkDeclaration({benchmark!r}, report=ReportHooks(section=report))\n"
    )
    (planted / "_toy.yaml").write_text((planted / "_toy.yaml").read_text() + "benchmark: !function utils.BENCHMARK\n")
    return planted


def record_include_path(results: Path, tasks: Path) -> None:
    """Every results file under `results` made to record `tasks` as the run's `--include_path`."""
    for path in results.rglob("results_*.json"):
        run = json.loads(path.read_text())
        run["config"]["include_path"] = [str(tasks)]
        path.write_text(json.dumps(run))


def results_copy(run: Path, tmp_path: Path) -> Path:
    """A copy of the results folder `run` (links kept as links) at `tmp_path / "results"`, to plant things in."""
    import shutil

    return Path(shutil.copytree(run, tmp_path / "results", symlinks=True))


def model_folder(results: Path) -> Path:
    """The one model folder of `results`: where its results files are."""
    (folder,) = {path.parent for path in results.rglob("results_*.json")}
    return folder
