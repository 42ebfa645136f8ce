"""Progress of a run: besides one bar per task, one bar over every task's samples with the ETA of the whole run
(counting only samples still to generate), one bar while the tasks' data loads, and none of the lines
`datasets` prints itself ("Generating test split", per split)."""

from __future__ import annotations

import re
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.inputs.build_files import datasets_quiet
from harness.run.cli import main
from harness.running.progress import LOADING, OVERALL

TASKS = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k2_pos"]


def _lines(err: str) -> list[str]:
    """Every state a bar was drawn in (tqdm redraws with carriage returns)."""
    return [line.strip() for line in re.split(r"[\r\n]", err) if line.strip()]


def _run(capsys, data_dir: Path, out: Path, tasks: list[str]) -> list[str]:
    code = main(
        ["--tasks", ",".join(tasks), "--model", "random", "--data_dir", str(data_dir), "--output_path", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    return _lines(err)


def test_a_multi_task_run_shows_one_overall_bar_with_an_eta_and_no_datasets_lines(
    tmp_path: Path, data_dir: Path, capsys
) -> None:
    lines = _run(capsys, data_dir, tmp_path / "out", TASKS)
    assert not [line for line in lines if "Generating" in line or line.startswith(("Map", "Filter"))]
    overall = [line for line in lines if line.startswith(f"{OVERALL}:")]
    totals = {re.search(r"\d+/(\d+) \[", line).group(1) for line in overall}
    assert totals == {"36"}  # one bar: every task's 12 samples
    assert sum(1 for line in overall if re.match(rf"{OVERALL}: 100%.* 36/36 \[\d\d:\d\d<\d\d:\d\d", line)) >= 1
    for task in TASKS:  # each task's own bar is still there
        assert any(line.startswith(f"{task}: 100%") for line in lines), task
    loading = {re.search(r"\d+/(\d+) \[", line).group(1) for line in lines if line.startswith(f"{LOADING}:")}
    assert loading == {"3"}  # tasks


def test_the_overall_total_leaves_out_samples_resumed_from_the_journal(tmp_path: Path, data_dir: Path, capsys) -> None:
    out = tmp_path / "out"
    _run(capsys, data_dir, out, TASKS[:1])  # one task: its own bar only
    lines = _run(capsys, data_dir, out, TASKS)
    finals = [line for line in lines if line.startswith(f"{OVERALL}: 100%")]
    assert finals and all(" 24/24 [" in line for line in finals), finals  # the first task's 12 were done


def _tiny_parquet_folder(root: Path) -> Path:
    folder = root / "tiny"
    folder.mkdir()
    pq.write_table(pa.table({"x": list(range(5))}), folder / "test-00000-of-00001.parquet")
    return folder


def test_datasets_own_lines_are_quiet_inside_and_back_after(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = _tiny_parquet_folder(tmp_path)
    was = datasets.is_progress_bar_enabled()  # a run with --no_progress in this process turns them off for good
    datasets.enable_progress_bars()
    try:
        with datasets_quiet():
            datasets.load_dataset(str(folder), split="test", cache_dir=str(tmp_path / "a"))
        assert "Generating test split" not in capsys.readouterr().err
        assert datasets.is_progress_bar_enabled()
        datasets.load_dataset(str(folder), split="test", cache_dir=str(tmp_path / "b"))
        assert "Generating test split" in capsys.readouterr().err  # what the harness's calls no longer print
    finally:
        if not was:
            datasets.disable_progress_bars()
