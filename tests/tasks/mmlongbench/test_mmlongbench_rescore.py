"""A run is identified by what it sent (issue 62): an MMLongBench journal written before `score_nonempty` was added
to the task's metrics resumes and is rescored, nothing generated again, through the real `harness` run on a fixture
build. The journal is written as today's code wrote it: the header's `task` part digests the whole config
(`config_sha256`), with no `scoring` part of its own."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from builders.mmlongbench.build import build_mmlongbench
from harness.config.task_index import TaskIndex, default_tasks_dir
from harness.running.journal.journal_file import fingerprint
from harness.running.task.task import Task, _digest

CONFIG = "docvqa_slidevqa_8k"
TASK = f"mmlongbench_{CONFIG}"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_rescore")
    build_mmlongbench(source="fixture", out_dir=root, configs=[CONFIG])
    return root


def _task_before_the_metric(folder: Path) -> Path:
    """The task as it was before `score_nonempty`: its metric list and its scorer without it."""
    folder.mkdir()
    (folder / "before.py").write_text(
        textwrap.dedent(
            """\
            from tasks.mmlongbench.utils import row_scores


            def process_results(doc, results):
                return row_scores(doc, results[0])
            """
        )
    )
    (folder / f"{TASK}.yaml").write_text(
        textwrap.dedent(
            f"""\
            include: {default_tasks_dir() / "mmlongbench" / "_docvqa_score.yaml"}
            task: {TASK}
            dataset_name: {CONFIG}
            process_results: !function before.process_results
            metric_list:
              - metric: score
                aggregation: mean
              - metric: docvqa_score
                aggregation: mean
            """
        )
    )
    return folder


def _as_written_before_issue_62(journal: Path, task: Task) -> None:
    """The journal's header as the code before the scoring had a part of its own wrote it, line for line: the task's
    `config_sha256` over the whole config and every hook (`Task.identity` then), the fingerprint over those parts."""
    header, *records = (json.loads(line) for line in journal.read_text().splitlines())
    parts = header["parts"]
    del parts["scoring"]
    hooks = {**task._hook_sources(scoring=False), **task._hook_sources(scoring=True)}
    sent = parts["task"].pop("sent_sha256")
    parts["task"] = {**parts["task"], "config_sha256": _digest(task._config_identity(), hooks)}
    assert parts["task"]["config_sha256"] != sent
    header["fingerprint"] = fingerprint(parts)
    for record in records:
        record["fingerprint"] = header["fingerprint"]
    journal.write_text("".join(json.dumps(line) + "\n" for line in (header, *records)))


def _results(out: Path) -> dict:
    (path,) = (out / "constant").glob("results_*.json")
    return json.loads(path.read_text())


def test_a_journal_written_before_a_metric_was_added_resumes_and_is_rescored(
    harness, data_dir: Path, tmp_path: Path
) -> None:
    before = _task_before_the_metric(tmp_path / "before")
    out = tmp_path / "out"
    args = ("--tasks", TASK, "--model", "constant", "--model_args", "answer=Yes", "--data_dir", data_dir)
    first = harness(*args, "--include_path", before, "--output_path", out)
    assert first.code == 0, first.err
    journal = out / "constant" / f"journal_{TASK}.jsonl"
    _as_written_before_issue_62(journal, Task(TaskIndex([before]).tasks[TASK]))
    replies = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert replies and all("score_nonempty" not in r["metrics"] for r in replies)
    for result in out.glob("constant/results_*.json"):
        result.unlink()

    again = harness(*args, "--output_path", out)  # the task as it is now: `score_nonempty` added
    assert again.code == 0, again.err
    rescoring = [line for line in again.err.splitlines() if "rescoring" in line]
    assert rescoring == [
        f"harness: {journal}: rescoring {len(replies)} stored replies: the journal is from before its scoring was "
        "recorded apart from what was sent; the task's metrics changed (added score_nonempty)"
    ]
    assert f"{len(replies)} samples resumed from the journal, 0 generated now" in again.err
    results = _results(out)
    assert results["rescored"] == {TASK: f"{len(replies)} stored replies rescored: {rescoring[0].split(': ', 3)[3]}"}
    # the new metric, computed from the stored replies, as a fresh run computes it
    fresh = harness(*args, "--output_path", tmp_path / "fresh")
    assert fresh.code == 0, fresh.err
    assert "score_nonempty,none" in results["results"][TASK]
    assert results["results"][TASK] == _results(tmp_path / "fresh")["results"][TASK]
    stored = [json.loads(line) for line in journal.read_text().splitlines()]
    assert "scoring" in stored[0]["parts"]
    assert [r["response"] for r in stored[1:]] == [r["response"] for r in replies]
    assert all("score_nonempty" in r["metrics"] for r in stored[1:])

    third = harness(*args, "--output_path", out)  # rescored once: the header says the task's scoring now
    assert third.code == 0 and "rescoring" not in third.err, third.err
    # the metric taken out again: the journal's replies are rescored, not refused
    removed = harness(*args, "--include_path", before, "--output_path", out)
    assert removed.code == 0, removed.err
    assert f"rescoring {len(replies)} stored replies: the task's metrics changed (removed score_nonempty)" in (
        removed.err
    )
    assert "0 generated now" in removed.err
    # what the task sends changed: the journal is another run's
    asked = tmp_path / "asked"
    asked.mkdir()
    (asked / f"{TASK}.yaml").write_text(
        (before / f"{TASK}.yaml").read_text().replace("process_results:", "system_prompt: Be brief.\nprocess_results:")
    )
    (asked / "before.py").write_text((before / "before.py").read_text())
    refused = harness(*args, "--include_path", asked, "--output_path", out)
    assert refused.code == 2 and "holds samples of a different run (differs in: task)" in refused.err
