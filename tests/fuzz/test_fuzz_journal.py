"""Fuzz: journal lines (issue 30). Whatever a journal holds (integers past 2**70 and past Python's 4,300-digit limit
included, issue 41), reading it, aggregating what was read, writing the results JSON and compacting the journal end
without a traceback; a line that cannot be used is skipped, and what is kept is what an aggregation can read."""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harness.api import SCORED
from harness.config.task_config import MetricSpec
from harness.errors import UserError
from harness.outputs.results.results_file import strict_values
from harness.running.journal.journal_file import fingerprint
from harness.running.journal.sample_store import SampleStore
from harness.running.task.aggregation import aggregate_metrics
from harness.running.task.metric_errors import ScoredRow
from harness.running.task.metrics import AGGREGATIONS

from .conftest import JSON, bounded, budget, counted, deep, mutated, with_long_integers

TASK = "t"
AGGREGATIONS_OF = {"acc": "mean", "ratio": "ratio_of_sums", "cells": "mean_by_key", "total": "sum"}
SPECS = [MetricSpec(metric, aggregation) for metric, aggregation in AGGREGATIONS_OF.items()]
PARTS = {"model": {"model": "constant"}, "task": {"task": TASK}, "task_docs": 4}
GOOD = {
    "type": "sample",
    "task": TASK,
    "fingerprint": fingerprint(PARTS),
    "doc_id": 0,
    "sample_id": "s0",
    "status": "ok",
    "response": "red",
    "input_sha256": "ab",
    "metrics": {"acc": 1.0, "ratio": [1, 2], "cells": [["a", 1.0], [3, 0.5]], "total": 2},
    "usage": {"prompt_tokens": 5},
    "cluster": ['bench:{"item":"7"}', 'bench:{"image":"ab"}'],
}


def _line(record: object) -> bytes:
    return json.dumps(record).encode()


LINES = st.one_of(
    mutated(GOOD).map(_line),
    st.builds(lambda d, s: _line({**GOOD, "doc_id": d, "sample_id": f"s{s}"}), st.integers(-3, 6), st.integers(0, 5)),
    JSON.map(_line),
    with_long_integers(GOOD).map(str.encode),
    st.binary(max_size=40),
    st.sampled_from([deep(5000).encode(), deep(3000, "{").encode(), b"\xff\xfe{}", b'{"type": "header"}', b""]),
)
HEADERS = st.one_of(
    st.just(_line({"type": "header", "task": TASK, "fingerprint": fingerprint(PARTS), "parts": PARTS})),
    mutated({"type": "header", "task": TASK, "fingerprint": fingerprint(PARTS), "parts": PARTS}).map(_line),
)


@budget(fuzz=2500, ci=40)
@given(header=HEADERS, lines=st.lists(LINES, max_size=8), cut=st.booleans())
def test_any_journal_is_read_aggregated_and_compacted_without_a_traceback(
    header: bytes, lines: list[bytes], cut: bool
) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(20, "journal"):
        path = Path(folder) / "journal_t.jsonl"
        text = b"\n".join([header, *lines]) + (b"" if cut else b"\n")
        path.write_bytes(text)
        try:
            store = SampleStore(path, TASK, PARTS, AGGREGATIONS_OF)
        except UserError:
            return  # a header that is not this run's, or unreadable with records behind it: one line
        rows = [o.metrics for o in store.outcomes.values() if o.status in SCORED and o.metrics is not None]
        for row in rows:  # every value kept fits a float: an aggregation reads it (a longer one is a skipped line)
            assert all(abs(n) <= sys.float_info.max for value in row.values() for n in _values(value)), row
        scored = [  # as the runner reads them: each row keyed by its journalled cluster keys, or by itself
            ScoredRow(f"{TASK}/{s}", o.metrics, tuple(store.records[s].get("cluster") or [f"{TASK}/{s}"]))
            for s, o in store.outcomes.items()
            if o.status in SCORED and o.metrics is not None
        ]
        functions = {metric: AGGREGATIONS[aggregation] for metric, aggregation in AGGREGATIONS_OF.items()}
        aggregated = aggregate_metrics(TASK, SPECS, functions, (), scored, bootstrap_iters=20)
        results = {
            metric: [value, aggregated.stderrs[metric], aggregated.errors[metric].stderr_clustered]
            for metric, value in aggregated.values.items()
        }
        assert set(results) | set(aggregated.breakdowns) == set(AGGREGATIONS_OF)
        json.dumps(strict_values([results, aggregated.breakdowns]), allow_nan=False)  # the results file: strict JSON
        store.compact()
        store.close()
        again = SampleStore(path, TASK, PARTS, AGGREGATIONS_OF)
        assert again.outcomes == store.outcomes
        again.close()


def _values(metric: object) -> list[float]:
    """The numbers a metric's value holds: itself, a list's items, or a breakdown's values (not its keys)."""
    items = metric if isinstance(metric, list) else [metric]
    values = [item[1] if isinstance(item, list) and len(item) == 2 else item for item in items]
    return [v for v in values if isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v)]
