"""The judge's metrics joined to a task's sample index (`SampleIndex`): `judge_<task>.jsonl` read in batches, each
line matched to the journal's sample ids and none held (`harness.running.task.judge_log.JudgeLog`)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.running.task.judge_log import JudgeLog, JudgeLogLine, judge_metrics_of
from harness.view.samples.safe_files import JOURNAL_LINES_MOST, METRICS_MOST, refusal
from harness.view.samples.sample_index import SampleIndex

JUDGE_BATCH = 8_192  # judge log lines matched against the index's sample ids at once


def add_judged(index: SampleIndex, log: Path) -> None:
    """The judge's metrics of `judge_<task>.jsonl` (`log`, a regular file inside the results folder) joined to the
    index, as they join the task's before aggregation and as `harness compare` joins them: each number a column
    beside the journal's metrics, and every value on its sample's record (its page reads the line again, from where
    the index keeps it). A line of another document, or of a sample the journal did not score, is another run's: left
    out, never held. No more lines are read than a journal's (`JOURNAL_LINES_MOST`), a line whose metrics hold more
    than `JUDGE_NUMBERS_MOST` numbers is left out, and no more than `METRICS_MOST` columns are made (a metric past
    them is on its samples' pages alone); each of these, and a log that cannot be read, is said in `limited`."""
    judge_log = JudgeLog(log, JOURNAL_LINES_MOST)
    lines = judge_log.located()
    index.judge_log = log
    past_columns = 0
    try:
        while batch := [(offset, length, _slim(line)) for offset, length, line in itertools.islice(lines, JUDGE_BATCH)]:
            past_columns += _join_judged(index, batch)
    except OSError as err:
        index.limited = "; ".join(filter(None, [index.limited, f"{refusal(err)}: its judge metrics are not shown"]))
        return
    notes = judge_log.notes()
    if past_columns:
        notes.append(
            f"{past_columns:,} judge metric value(s) past the {METRICS_MOST} columns a table makes: on their samples' pages alone"
        )
    if notes:
        index.limited = "; ".join(filter(None, [index.limited, f"{log.name}: {'; '.join(notes)}"]))


def _slim(line: JudgeLogLine) -> JudgeLogLine:
    """What the join reads of a line (not its replies)."""
    return {
        "sample_id": line["sample_id"],
        "doc_id": line["doc_id"],
        "status": line["status"],
        "metrics": line.get("metrics") or {},
    }


def _join_judged(index: SampleIndex, batch: list[tuple[int, int, JudgeLogLine]]) -> int:
    """`add_judged` for a batch of lines; the number of values left without a column."""
    ids = pa.array([line["sample_id"] for _, _, line in batch], pa.string())
    rows = pc.index_in(ids, value_set=index.sample_ids.array).to_pylist()
    past_columns = 0
    for (offset, length, line), row in zip(batch, rows, strict=True):
        if row is None:
            continue
        metrics = judge_metrics_of(line, int(index.doc_ids[row]), index.statuses[row])
        index.judge_offsets[row], index.judge_lengths[row] = offset, length if metrics else 0
        for name, value in metrics.items():
            if not isinstance(value, float):  # a list (a score and the flags beside it) is shown on its page alone
                continue
            if name not in index.metrics and len(index.metrics) >= METRICS_MOST:
                past_columns += 1
                continue
            index.metrics.setdefault(name, np.full(len(index), math.nan))[row] = value
    return past_columns
