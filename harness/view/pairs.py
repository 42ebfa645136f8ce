"""The two-model view of a task (`/pairs?task=T&a=A&b=B`): the rows two models disagree on, paired as `harness compare`
pairs them (`harness.outputs.compare.paired_runs`: `pair_task` on sample ids, `paired_rows` of one metric, `discordant`).
`way=a` lists the rows A got right and B wrong (A higher, for a metric that is not 0/1): McNemar's b; `way=b` the
reverse, its c. Both counts are shown, and the rows scored in one run alone are counted, never dropped unsaid.

The rows come from the viewer's own bounded index of each journal (`sample_index`: latest record per sample, its
status, numeric metrics and cluster keys), not from reading the journals whole, and are paired in Arrow and numpy
over its columns (`pair_indexes`, the same rows as `pair_task` and `paired_rows`): a million rows a model pair in well
under a second, and only the rows listed become Python objects."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from harness.api import SCORED
from harness.outputs.compare.paired_runs import PairedRow
from harness.view.samples.sample_index import SampleIndex
from harness.view.viewer import Viewer

ROWS_MOST = 1000  # rows listed on one page (the counts are of all)


@dataclass(frozen=True)
class Paired:
    """Two indexes of one task paired on a metric: the rows each way (`a`, `b`: row numbers of A's index, in A's
    document order), the ties, and the rows scored in one run alone."""

    rows: np.ndarray  # A's rows paired with a value in both, in A's document order
    partners: np.ndarray  # B's row of each
    values_a: np.ndarray
    values_b: np.ndarray
    a_only: int
    b_only: int


def pair_indexes(a: SampleIndex, b: SampleIndex, metric: str) -> Paired:
    """`pair_task` and `paired_rows` (`harness.outputs.compare.paired_runs`) over the two indexes' columns: a sample scored in
    both runs is paired by its sample id, in A's order of (doc id, sample id), and kept where `metric` is a number in
    both; one scored in a single run is counted. Array work in Arrow and numpy, no record per row."""
    scored_a, scored_b = a.statuses.isin(SCORED), b.statuses.isin(SCORED)
    in_b, in_a = a.rows_in(b), b.rows_in(a)
    both = scored_a & (in_b >= 0) & scored_b[np.maximum(in_b, 0)]
    b_both = scored_b & (in_a >= 0) & scored_a[np.maximum(in_a, 0)]
    order = a.doc_order()
    rows = order[both[order]]
    partners = in_b[rows]
    missing = np.full(len(rows), math.nan)
    values_a = a.metrics[metric][rows] if metric in a.metrics else missing
    values_b = b.metrics[metric][partners] if metric in b.metrics else missing
    numbers = ~np.isnan(values_a) & ~np.isnan(values_b)
    return Paired(
        rows[numbers],
        partners[numbers],
        values_a[numbers],
        values_b[numbers],
        int(np.count_nonzero(scored_a & ~both)),
        int(np.count_nonzero(scored_b & ~b_both)),
    )


def shown_rows(paired: Paired, a: SampleIndex, b: SampleIndex, task: str, way: np.ndarray) -> list[PairedRow]:
    """The first `ROWS_MOST` rows that differ the given way (`way`: a mask over the paired rows), as `paired_rows`
    gives them."""
    out = []
    for i in np.flatnonzero(way)[:ROWS_MOST].tolist():
        row, partner = int(paired.rows[i]), int(paired.partners[i])
        sample_id = a.sample_ids[row]
        keys = tuple(dict.fromkeys([*a.clusters[row], *b.clusters[partner]])) or (f"{task}/{sample_id}",)
        value_a, value_b = float(paired.values_a[i]), float(paired.values_b[i])
        out.append(PairedRow(sample_id, int(a.doc_ids[row]), int(b.doc_ids[partner]), value_a, value_b, keys))
    return out


def pairs(viewer: Viewer, request: Request) -> Response:
    params = request.query_params
    task = params.get("task", "")
    model_a, model_b = (viewer.catalog.model_named(params.get(side, "")) for side in ("a", "b"))
    run_a, run_b = viewer.catalog.task_run(model_a, task), viewer.catalog.task_run(model_b, task)
    if run_a is None or run_b is None or model_a == model_b:
        return viewer.not_found("no such task run by both models in this results folder")
    index_a, index_b = viewer.index(run_a), viewer.index(run_b)
    metrics = [m for m in index_a.metrics if m in index_b.metrics]
    default = viewer.catalog.sample_metric(model_a, task)
    metric = params.get("metric") or default or ""
    metric = metric if metric in metrics else (default if default in metrics else (metrics[0] if metrics else ""))
    way = params.get("way", "a") if params.get("way") in ("a", "b") else "a"
    paired = pair_indexes(index_a, index_b, metric)  # no metric: nothing paired, the one-run rows counted
    values_a, values_b = paired.values_a, paired.values_b
    ways = {"a": values_a > values_b, "b": values_b > values_a}
    counts = {w: int(np.count_nonzero(mask)) for w, mask in ways.items()}
    binary = bool(len(values_a)) and bool(np.isin(values_a, (0.0, 1.0)).all() and np.isin(values_b, (0.0, 1.0)).all())
    return viewer.render(
        "pairs.html",
        task=task,
        a=model_a,
        b=model_b,
        metric=metric,
        metrics=metrics,
        way=way,
        binary=binary,
        n_paired=len(values_a),
        count_b=counts["a"],
        count_c=counts["b"],
        ties=len(values_a) - counts["a"] - counts["b"],
        a_only=paired.a_only,
        b_only=paired.b_only,
        rows=shown_rows(paired, index_a, index_b, task, ways[way]),
        more=max(0, counts[way] - ROWS_MOST),
    )
