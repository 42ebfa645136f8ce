"""A task's scored samples judged (`judge:` in its YAML, `--judge_model`): the judge's metrics joined to the samples'
own, its decisions written to `judge_<task>.jsonl`, and its failures said once."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from harness.api import SCORED, Model, Response
from harness.running.journal.sample_store import Outcome, SampleStore
from harness.running.task.judge import FAILED as JUDGE_FAILED
from harness.running.task.judge import judge_counts, judge_samples
from harness.running.task.judge_log import judge_log_name, write_judge_log
from harness.running.task.task import Task


def judge_task(
    task: Task,
    store: SampleStore,
    current: list[str],
    judge: Model,
    output_dir: Path | None,
    progress: bool,
    usage: list[dict[str, int]] | None = None,
    paid: Callable[[Sequence[Response]], None] | None = None,
) -> tuple[list[Outcome], dict[str, int]]:
    """The judge's metrics joined to the scored samples' (in memory: the journal keeps the model's answers,
    the response cache the judge's replies, `judge_<task>.jsonl` what it decided); `paid`: `--max_cost`'s budget,
    charged with each batch of the judge's replies."""
    assert task.judge is not None
    scored = [s for s in current if store.outcomes[s].status in SCORED]
    samples = [
        (s, store.outcomes[s].doc_id, task.doc(store.outcomes[s].doc_id), store.records[s]["response"] or "")
        for s in scored
    ]
    judged = judge_samples(task.judge, task.name, judge, samples, progress, usage, paid, task.some_rows)
    by_sample = {j.sample_id: j for j in judged}
    outcomes = []
    for s in current:
        outcome = store.outcomes[s]
        extra = by_sample[s].metrics if s in by_sample else {}
        outcomes.append(replace(outcome, metrics={**(outcome.metrics or {}), **extra}) if extra else outcome)
    if output_dir is not None:
        write_judge_log(output_dir / judge_log_name(task.name), (j.to_json() for j in judged))
    failed = [j for j in judged if j.status == JUDGE_FAILED]
    if failed:
        print(
            f"harness: {task.name}: the judge failed on {len(failed)} sample(s) (first: {failed[0].sample_id}: "
            f"{failed[0].error}); they are left out of the judge metrics; run the same command again to judge "
            "them (judged samples come from the cache)",
            file=sys.stderr,
        )
    return outcomes, judge_counts([j.status for j in judged])
