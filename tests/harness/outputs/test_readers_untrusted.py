"""The readers of a results folder (`harness compare`, `harness power RESULTS`, `harness report`) over a copy of a run
with a value planted where its schema left room: a results folder may come from anyone, so each ends in a result or in
one line naming the file and what was expected, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.outputs.results.journal_rows import task_rows
from harness.outputs.results.model_results import load_results
from harness.run.cli import main
from tests.support.deadline import within

TASK = "mmneedle_m1_n2_k1_pos"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """`a/` and `b/`: two runs of the constant model on one MMNeedle task."""
    root = tmp_path_factory.mktemp("untrusted_readers")
    for name, answer in (("a", "GUESS"), ("b", "1")):
        argv = ["--tasks", TASK, "--model", "constant", "--model_args", f"answer={answer}", "--data_dir", str(data_dir)]
        assert main([*argv, "--output_path", str(root / name), "--no_progress"]) == 0
    return root


@pytest.fixture
def runs(two_runs: Path, tmp_path: Path) -> Path:
    """A copy of both runs to plant things in."""
    return Path(shutil.copytree(two_runs, tmp_path / "runs"))


def plant(folder: Path, change: Callable[[dict], None]) -> Path:
    """`change` applied to the results file of the one model in `folder`; the file."""
    (path,) = folder.glob("*/results_*.json")
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """`harness ARGV`'s error: exit 2, one line, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("judge", [{"judges": 5}, {"judges": [{"tasks": 5, "model": {}}]}])
def test_a_judge_record_the_results_file_garbles_is_one_line(
    runs: Path, judge: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """`config.judge` (which judge scored which task: `judges`, each with its `tasks`) is read by `harness compare`
    and `harness power RESULTS` for every task; a number where a list belongs was a TypeError out of both."""
    path = plant(runs / "a", lambda data: data["config"].update(judge=judge))
    for argv in (["compare", str(runs / "a"), str(runs / "b"), "--out", str(runs)], ["power", str(runs / "a")]):
        err = one_line(capsys, argv)
        assert str(path) in err and "config.judge" in err, err


@pytest.fixture
def compared(runs: Path) -> Path:
    """The folder of compare.json: the two runs (of one model) compared."""
    out = runs / "compared"
    assert main(["compare", str(runs / "a"), str(runs / "b"), "--out", str(out), "--bootstrap_iters", "0"]) == 0
    return out


@pytest.mark.parametrize("n_paired", [10**400, -5])
def test_a_count_a_compare_json_garbles_is_one_line(
    runs: Path, compared: Path, n_paired: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare.json's rows count rows; an integer past a float's range, or below 0, was an OverflowError or a math
    domain error out of `harness power --pair` and `harness report --run_to_run`."""
    path = compared / "compare.json"
    data = json.loads(path.read_text())
    for row in data["rows"]:
        row["n_paired"] = n_paired
    path.write_text(json.dumps(data))
    capsys.readouterr()
    for argv in (
        ["power", "--pair", str(compared)],
        ["report", str(runs / "a"), "--no_figures", "--out", str(runs / "report"), "--run_to_run", str(compared)],
    ):
        err = one_line(capsys, argv)
        assert str(path) in err and "rows[0].n_paired" in err, err


def test_a_fifo_planted_as_compare_json_is_refused_at_once(compared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`harness power --pair DIR` reads DIR/compare.json: a FIFO there was waited on forever."""
    path = compared / "compare.json"
    path.unlink()
    os.mkfifo(path)
    with within(30, "harness power --pair over a FIFO planted as compare.json"):
        err = one_line(capsys, ["power", "--pair", str(compared)])
    assert str(path) in err, err


def test_a_journal_value_past_a_float_s_range_is_no_number_to_a_report_section(runs: Path) -> None:
    """`harness report`'s benchmark sections read a task's rows from its journal (`journal_rows.task_rows`: MMLongBench's
    length trend, LoCoVQA's intervals); an integer metric past a float's range, a valid journal line, was an
    OverflowError that lost the whole section. It is no number, as a value of another type is."""
    journal = runs / "a" / "constant" / f"journal_{TASK}.jsonl"
    lines = journal.read_text().splitlines()
    record = json.loads(lines[-1])
    far = {**record, "sample_id": "far", "metrics": {"exact_acc": 0, "by_cell": [["1,1", 0]]}}
    planted = json.dumps(far).replace('"exact_acc": 0', f'"exact_acc": {10**400}').replace("0]]", f"{10**400}]]")
    journal.write_text("\n".join([*lines, planted]) + "\n")
    rows = {row.sample_id: row for row in task_rows(load_results(runs / "a")["constant"], TASK) or []}
    assert rows["far"].value("exact_acc") is None and rows["far"].pairs("by_cell") == []
    assert rows[record["sample_id"]].value("exact_acc") is not None


def test_a_group_the_results_files_make_its_own_member_is_not_compared(runs: Path) -> None:
    """`group_subtasks` is the results files': a group they make a member of itself (in both runs, so the members
    agree) sent `harness compare`'s group aggregation round the cycle until a RecursionError. The group is named
    among those not compared, with why; its tasks are compared."""

    def grouped(data: dict) -> None:
        data["groups"] = {"mmneedle": {"alias": "mmneedle", "exact_acc,none": 0.5}}
        data["group_subtasks"] = {"mmneedle": ["mmneedle", TASK]}

    for side in ("a", "b"):
        plant(runs / side, grouped)
    assert main(["compare", str(runs / "a"), str(runs / "b"), "--out", str(runs), "--bootstrap_iters", "0"]) == 0
    compared = json.loads((runs / "compare.json").read_text())
    (group,) = [n for n in compared["not_compared"] if n["name"] == "mmneedle"]
    assert "member of itself" in group["reason"]
    assert any(row["name"] == TASK for row in compared["rows"])


@pytest.mark.parametrize("tags", [[["<think>"]], [["<think>", "</think>", "<x>"]]])
def test_reasoning_tags_a_shard_garbles_are_one_line(
    tmp_path: Path, data_dir: Path, tags: list, capsys: pytest.CaptureFixture[str]
) -> None:
    """`config.reasoning_tags` holds [start, end] pairs, which `harness merge` unpacks from the shards' results files;
    one of another length was a ValueError out of the merge."""
    argv = ["--tasks", TASK, "--model", "constant", "--model_args", "answer=1", "--data_dir", str(data_dir)]
    shards = [tmp_path / f"shard{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        assert main([*argv, "--output_path", str(shard), "--shard", f"{i}/2", "--no_progress"]) == 0
        path = plant(shard, lambda data: data["config"].update(reasoning_tags=tags))
    capsys.readouterr()
    err = one_line(capsys, ["merge", str(tmp_path / "merged"), *map(str, shards)])
    assert "results_" in err and "config.reasoning_tags[0]" in err and str(path.parent.parent.parent) in err, err
