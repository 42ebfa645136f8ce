"""Issue 44, item 2: a bigger MMNeedle build is not scored by half silently. A `--full` build holds more rows than the
paper's subset the tasks score by default (`metadata.subset: paper`): the run says so in one line with the flag that
scores them all, before the model loads, and records it in the results (`datasets[task].rows_left_out`) and the
report. A build that writes fewer rows than `--limit` asks (the paper's subset without `--full`) says so too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.cli import main as builders_main
from harness.config.task_index import TaskIndex
from harness.running.task.task import Task

ALL = '--metadata \'{"subset": "full"}\''
LINE = (
    "harness: 2 tasks score fewer rows than the build holds for them, as their metadata picks "
    f"(mmneedle_m1_n2_k2_neg 100 of 120, mmneedle_m1_n2_k2_pos 100 of 120); {ALL} scores all of them"
)


@pytest.fixture(scope="module")
def full_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """m1_n2_k2 (K=2: the paper evaluated 100 + 100) built with --full --limit 120: 120 + 120 rows."""
    out = tmp_path_factory.mktemp("needle_full")
    argv = ["build", "mmneedle", "--source", "synthetic", "--configs", "m1_n2_k2", "--full", "--limit", "120"]
    assert builders_main([*argv, "--out", str(out), "--quiet", "--num-proc", "1"]) == 0
    return out


@pytest.mark.slow  # a 240-row MMNeedle build, then runs on it
def test_a_full_build_scored_on_the_paper_subset_is_said_recorded_and_reported(
    tmp_path: Path, full_build: Path, harness
) -> None:
    run = harness(
        "--tasks", "mmneedle_m1_n2_k2", "--model", "random", "--data_dir", full_build, "--output_path", tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert LINE in run.err.splitlines(), run.err
    results = run.results("random")
    for task in ("mmneedle_m1_n2_k2_pos", "mmneedle_m1_n2_k2_neg"):
        assert results["n-samples"][task]["original"] == 100
        assert results["datasets"][task]["rows_left_out"] == {"scored": 100, "held": 120, "all_with": ALL}
    report = harness("report", tmp_path, "--no_figures")
    assert report.code == 0, report.err
    text = (tmp_path / "report.md").read_text()
    assert (
        "> **Fewer rows than the build holds.** 2 of 2 tasks scored 200 of the 240 rows the build holds for them, "
        f"as the tasks' metadata picks (the default); `{ALL}` scores all of them." in text
    )
    assert "build rows `full`" not in text  # the rows scored are the paper's subset, as by default


@pytest.mark.slow  # runs on the 240-row build
def test_the_flag_it_names_scores_every_row_and_nothing_is_said(tmp_path: Path, full_build: Path, harness) -> None:
    run = harness(
        "--tasks", "mmneedle_m1_n2_k2", "--model", "random", "--data_dir", full_build, "--output_path", tmp_path,
        "--metadata", '{"subset": "full"}',
    )  # fmt: skip
    assert run.code == 0, run.err
    assert "fewer rows than the build holds" not in run.err
    results = run.results("random")
    assert results["n-samples"]["mmneedle_m1_n2_k2_pos"]["original"] == 120
    assert "rows_left_out" not in results["datasets"]["mmneedle_m1_n2_k2_pos"]


def test_all_rows_is_not_part_of_the_tasks_identity() -> None:
    """Declaring `all_rows` changed no MMNeedle task's identity: journals written before it still resume."""
    task = Task(TaskIndex([]).tasks["mmneedle_m1_n2_k2_pos"])
    assert task.metadata["all_rows"] == {"subset": "full"}
    identity = task.identity()
    assert "all_rows" not in identity["metadata"]
    assert "all_rows" not in json.dumps(identity)


@pytest.mark.parametrize(
    ("flags", "note"),
    [
        (
            ["--limit", "150"],
            "note: --limit 150 asks for 150 positives + 150 negatives per config, and without --full the build keeps "
            "to the paper's subset: m1_n2_k2 100 + 100; add --full for up to 150 + 150",
        ),
        (
            ["--limit", "6000", "--full"],
            "note: --limit 6000 asks for 6,000 positives + 6,000 negatives per config; there are only m10_n2_k1, "
            "m1_n2_k2 5,000 + 5,000, all built",
        ),
        (["--limit", "90"], None),
    ],
)
def test_a_build_that_writes_fewer_rows_than_its_limit_asks_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], note: str | None
) -> None:
    argv = ["build", "mmneedle", "--source", "synthetic", "--configs", "m1_n2_k2,m10_n2_k1", *flags]
    assert builders_main([*argv, "--out", str(tmp_path), "--dry-run"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ([note] if note else [])
