"""The two-model view of a task (`/pairs?task=T&a=A&b=B`): the rows two models disagree on, paired as `harness compare`
pairs them (`harness.outputs.paired_runs`: `pair_task` on sample ids, `paired_rows` of one metric, `discordant`).
`way=a` lists the rows A got right and B wrong (A higher, for a metric that is not 0/1): McNemar's b; `way=b` the
reverse, its c. Both counts are shown, and the rows scored in one run alone are counted, never dropped unsaid.

The rows come from the viewer's own bounded index of each journal (`sample_index`: latest record per sample, its
status, numeric metrics and cluster keys), not from reading the journals whole."""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

from starlette.requests import Request
from starlette.responses import Response

from harness.api import SCORED
from harness.outputs.paired_runs import PairedRow, TaskJournal, discordant, pair_task, paired_rows
from harness.running.journal import SampleRecord
from harness.view.sample_index import SampleIndex
from harness.view.viewer import Viewer

ROWS_MOST = 1000  # rows listed on one page (the counts are of all)


def journal_of(index: SampleIndex, task: str) -> TaskJournal:
    """The index's rows as the pairing reads a journal: each sample's latest status, metrics and cluster keys."""
    records: dict[str, SampleRecord] = {}
    for row, sample_id in enumerate(index.sample_ids):
        status = index.statuses[row]
        values = {name: float(v[row]) for name, v in index.metrics.items() if not math.isnan(v[row])}
        record = {
            "type": "sample",
            "task": task,
            "doc_id": int(index.doc_ids[row]),
            "sample_id": sample_id,
            "status": status,
            "metrics": values if status in SCORED else None,
            "cluster": list(index.clusters[row]) if row < len(index.clusters) else [],
        }
        records[sample_id] = cast(SampleRecord, record)
    return TaskJournal(Path(index.path), {}, records)


def pairs(viewer: Viewer, request: Request) -> Response:
    params = request.query_params
    task, model_a, model_b = params.get("task", ""), params.get("a", ""), params.get("b", "")
    run_a, run_b = viewer.catalog.task_run(model_a, task), viewer.catalog.task_run(model_b, task)
    if run_a is None or run_b is None or model_a == model_b:
        return viewer.not_found("no such task run by both models in this results folder")
    index_a, index_b = viewer.index(run_a), viewer.index(run_b)
    metrics = [m for m in index_a.metrics if m in index_b.metrics]
    default = viewer.catalog.primary_metric(model_a, task)
    metric = params.get("metric") or default or ""
    metric = metric if metric in metrics else (default if default in metrics else (metrics[0] if metrics else ""))
    way = params.get("way", "a") if params.get("way") in ("a", "b") else "a"
    paired = pair_task(task, journal_of(index_a, task), journal_of(index_b, task))
    rows = paired_rows(paired, metric) if metric else []
    found: dict[str, list[PairedRow]] = {w: discordant(rows, w) for w in ("a", "b")}
    binary = bool(rows) and all(r.a in (0.0, 1.0) and r.b in (0.0, 1.0) for r in rows)
    return viewer.render(
        "pairs.html",
        task=task,
        a=model_a,
        b=model_b,
        metric=metric,
        metrics=metrics,
        way=way,
        binary=binary,
        n_paired=len(rows),
        count_b=len(found["a"]),
        count_c=len(found["b"]),
        ties=len(rows) - len(found["a"]) - len(found["b"]),
        a_only=len(paired.a_only),
        b_only=len(paired.b_only),
        rows=found[way][:ROWS_MOST],
        more=max(0, len(found[way]) - ROWS_MOST),
    )
