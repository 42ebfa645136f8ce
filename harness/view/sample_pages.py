"""A task's pages: its samples in a table filtered and sorted on the server (`/samples`; `&vs=B`: a second model's
number, scores and answers beside, `versus`), and one sample with its prompt rebuilt from the verified build, beside
another model's answer (`/sample`).

A sample's siblings are the rows of the same model that share one of its cluster keys (the journal's `cluster`, from
its task's `cluster_key:`), in its task and in the other tasks of its benchmark. MMLongBench's same `source_id` at its
other depths and lengths, LoCoVQA's item at its other context lengths, MMNeedle's stitched image across K: the rows
its clustered standard error counts as one item. Read from the viewer's journal indexes (their `clusters`), never
the journals whole.

A task's metrics with their errors as its results file records them: the value, the plain standard error
(`<metric>_stderr,<filter>`), the one clustered on the task's `cluster_key:` (`<metric>_stderr_clustered,<filter>`),
and from the file's `uncertainty` section (`harness.outputs.results.results_file.MetricUncertainty`) its rows, clusters,
design effect and method. Nothing is re-computed here: the viewer shows what the run wrote.

One scale a table, as report.md keeps it: a metric on a scale (its benchmark's, else 0-1 where every model's value
lies there: `report.row_scale`) is shown on report.md's 0-100, its errors and interval with it; any other (a count, a
mean on no 0-100 scale) as recorded, in a table of its own. A metric whose scored rows are all 0 or full marks (its
scale's, where it has one) is a proportion, and the task's headline metric is on the scale report.md shows it on: each
gets the interval report.md gives it (`harness.outputs.results.estimates.Estimate.interval`:
Wilson's on the effective n, p(1 - p) / SE² with SE the larger of the clustered and plain errors, with Korn and
Graubard's degrees-of-freedom factor where the error rests on few clusters: `Estimate.interval_n`; docs/statistics.md),
which never collapses at 0 % or 100 %, where "± 0.0" would say a 0 of 12 is certain. The effective n shown is n_eff,
before that factor.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from harness.outputs.report.report_md import PERCENT, row_scale
from harness.outputs.results.estimates import estimate_behind
from harness.outputs.results.results_file import MetricUncertainty
from harness.view import groups
from harness.view.catalog import TaskRun
from harness.view.pages import THUMB
from harness.view.sample_table import beside, others_of, sample_table, versus_of
from harness.view.samples.journal_columns import as_float
from harness.view.samples.sample_index import SampleIndex, natural_key
from harness.view.shown import answer_fields, gold_text, grid_place, heat_cell, image_marks, shown
from harness.view.task_data import header_of
from harness.view.viewer import Viewer

SIBLINGS_MOST = 200  # listed on a page (the count is of all)


def samples(viewer: Viewer, request: Request) -> Response:
    """A task's samples; a group's (`groups`); the models to choose from when no model is named."""
    params = request.query_params
    model, task = viewer.catalog.model_named(params.get("model", "")), params.get("task", "")
    if not model:
        return groups.choose_model(viewer, request)
    run = viewer.catalog.task_run(model, task)
    if run is None:
        return groups.group_samples(viewer, request, model)
    data = viewer.data(run)
    catalog = viewer.catalog
    others = others_of(viewer, run.model, [run.task])
    versus = versus_of(params, others)
    headline = catalog.primary_metric(run.model, run.task)
    state = {"model": run.model, "task": run.task, "vs": versus or ""}
    table = sample_table(viewer.index(run), params, data.axes(), catalog.sample_metric(run.model, run.task), state)
    if versus:
        beside(viewer, versus, table["rows"], lambda _: table["metric"])
    heads = [(m, shown(catalog, m, run.task, headline)) for m in (run.model, versus) if m]
    return viewer.render(
        "samples.html",
        run=run,
        problem=data.problem,
        cells=_cells(run, table["wanted"]),
        group=None,
        heads=heads,
        metric_shown=headline,
        vs=versus or "",
        others=others,
        errors=task_errors(
            run,
            table["index"],
            (headline, heads[0][1].scale) if headline else None,
            lambda metric: row_scale(catalog.everyone, run.task, metric, catalog.declared),
        ),
        pairs=others,
        **table,
    )


def _cells(run: TaskRun, wanted: dict[str, str]) -> list[dict[str, Any]]:
    """The results' breakdowns the benchmark maps onto an axis (`sample_cells`), each a grid whose cells link to
    their samples: MMNeedle's accuracy per needle cell and per depth. A cell the results file holds in another shape
    is left out."""
    out = []
    breakdowns = run.run.get("breakdowns")
    breakdowns = breakdowns.get(run.task) if isinstance(breakdowns, dict) else None
    for name, axis in (run.hooks.sample_cells if run.hooks is not None else {}).items():
        found = breakdowns.get(name) if isinstance(breakdowns, dict) else None
        cells = {k: cell for k, v in found.items() if (cell := heat_cell(k, v))} if isinstance(found, dict) else {}
        if not cells:
            continue
        places = {key: grid_place(key) for key in cells}
        grid = all(places.values())
        if grid:
            size = max(max(place) for place in places.values() if place)
            table = [[cells.get(f"{r},{c}") for c in range(1, size + 1)] for r in range(1, size + 1)]
        else:
            table = [[cells[k] for k in sorted(cells, key=natural_key)]]
        out.append({"name": name, "axis": axis, "grid": grid, "table": table, "selected": wanted.get(axis)})
    return out


def sample(viewer: Viewer, request: Request) -> Response:
    params = request.query_params
    run = viewer.catalog.task_run(params.get("model", ""), params.get("task", ""))
    if run is None:
        return viewer.not_found("no such model and task in this results folder")
    index = viewer.index(run)
    row = index.sample_ids.find(params.get("id", ""))
    if row is None:
        return viewer.not_found("no such sample in this task's journal")
    record = index.record(row)
    data = viewer.data(run)
    doc_id = int(index.doc_ids[row])
    prompt = data.prompt(doc_id, record, header_of(run.journal_file()))
    others = others_of(viewer, run.model, [run.task])
    versus = _versus(viewer, params.get("vs", ""), run, record.get("sample_id"))
    doc = data.doc(doc_id)
    marks_hook = run.hooks.sample_marks if run.hooks is not None else None
    column = run.hooks.sample_siblings if run.hooks is not None else None
    siblings = data.siblings(doc_id, column) if isinstance(column, str) else None
    marks = image_marks(marks_hook, doc, record, run.model, siblings)
    columns = [(run.model, record)]
    if versus is not None:
        columns.append(versus)
        marks += [
            dict(mark, kind="guess-b")
            for mark in image_marks(marks_hook, doc, versus[1], versus[0], siblings)
            if mark.get("kind") == "guess"
        ]
    sample_id = str(record.get("sample_id"))
    keys = index.clusters[row] if row < len(index.clusters) else ()
    same_item = [s for s in same_item_rows(viewer, run, keys) if (s.task, s.sample_id) != (run.task, sample_id)]
    position = {
        "previous": index.sample_ids[row - 1] if row > 0 else None,
        "next": index.sample_ids[row + 1] if row + 1 < len(index) else None,
    }
    return viewer.render(
        "sample.html",
        run=run,
        sample_id=sample_id,
        doc_id=doc_id,
        prompt=prompt,
        gold=gold_text(prompt.gold, run.hooks.gold_shown if run.hooks is not None else None, doc),
        fields=run.hooks.metric_fields if run.hooks is not None else {},
        columns=[answer_fields(model, rec) for model, rec in columns],
        marks=marks,
        others=others,
        vs=versus[0] if versus else "",
        position=position,
        thumb=THUMB,
        keys=keys,
        siblings=same_item[:SIBLINGS_MOST],
        siblings_total=len(same_item),
        raw=json.dumps({k: v for k, v in record.items() if k != "prompt"}, indent=1, ensure_ascii=False, default=str),
    )


def _versus(viewer: Viewer, model: str, run: TaskRun, sample_id: object) -> tuple[str, dict[str, Any]] | None:
    other = viewer.catalog.task_run(model, run.task) if model else None
    if other is None:
        return None
    index = viewer.index(other)
    row = index.sample_ids.find(str(sample_id))
    return (model, index.record(row)) if row is not None else (model, {"status": "not run", "sample_id": sample_id})


@dataclass(frozen=True)
class Sibling:
    task: str
    sample_id: str
    status: str
    shared: tuple[str, ...]  # the cluster keys it shares with the sample


def same_item_rows(viewer: Viewer, run: TaskRun, keys: tuple[str, ...]) -> list[Sibling]:
    """Every row of `run.model` sharing a key of `keys` (the sample itself left out by its caller), its own task's
    first, then its benchmark's other tasks in their natural order."""
    if not keys:
        return []
    wanted = set(keys)
    catalog = viewer.catalog
    by_task = catalog.hooks.get(run.model, {})
    tasks = [t for t in catalog.tasks(run.model) if t != run.task and by_task.get(t) is run.hooks]
    out = []
    for task in [run.task, *tasks]:
        other = catalog.task_run(run.model, task)
        if other is None:
            continue
        index = viewer.index(other)
        for row in index.clusters.rows_with(wanted).tolist():  # found in Arrow; only those rows read here
            shared = tuple(k for k in index.clusters[row] if k in wanted)
            if shared:
                out.append(Sibling(task, index.sample_ids[row], index.statuses[row], shared))
    return out


@dataclass(frozen=True)
class MetricErrors:
    """One metric of a task as the page shows it (NaN where the results file holds no number): its value, errors and
    interval on 0-100 where `percent`, else as recorded."""

    metric: str
    filter: str
    value: float
    stderr: float
    stderr_clustered: float
    n: int | None
    n_clusters: int | None
    design_effect: float
    method: str
    wilson: tuple[float, float] | None  # None: not a proportion
    effective_n: float  # n_eff (`Estimate.effective_n`), before the interval's df factor (NaN: none)
    percent: bool  # on report.md's 0-100 scale (else as recorded)


def _uncertainty(run: TaskRun) -> Mapping[str, MetricUncertainty]:
    section = run.run.get("uncertainty")
    found = section.get(run.task) if isinstance(section, Mapping) else None
    if not isinstance(found, Mapping):
        return {}
    return {str(k): cast(MetricUncertainty, v) for k, v in found.items() if isinstance(v, Mapping)}


COUNT_MOST = 2**53  # a count past it is no count of rows (an untrusted file's); no float holds it exactly


def _count(value: object) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < COUNT_MOST
    return value if ok and isinstance(value, int) else None


def _full_marks(index: SampleIndex, metric: str, scale: int | None) -> float | None:
    """Full marks of a 0/1 (or 0/100) metric over the journal's scored rows, its `scale` where it has one (rows all 0
    say none); None for any other metric."""
    values = index.metrics.get(metric)
    if values is None:
        return None
    seen = values[~np.isnan(values)]
    full = scale or index.full_marks(metric)
    return full if len(seen) and bool(np.all((seen == 0.0) | (seen == full))) else None


def task_errors(
    run: TaskRun,
    index: SampleIndex,
    headline: tuple[str, int | None] | None = None,
    scale_of: Callable[[str], int | None] = lambda metric: None,
) -> list[MetricErrors]:
    """Each metric of the task's results (`"<metric>,<filter>"`), its errors beside it; `headline`: the task's
    headline metric and the scale report.md shows it on (`report.row_scale`), whose interval is report.md's;
    `scale_of`: a metric's scale as report.md shows it (None: as recorded)."""
    uncertainty = _uncertainty(run)
    out = []
    for key, raw in run.entry.items():
        metric, _, filter_ = key.partition(",")
        if not filter_ or metric.endswith(("_stderr", "_stderr_clustered")) or metric == "alias":
            continue
        value = as_float(raw)
        found = uncertainty.get(metric)
        details: Mapping[str, object] = found if found is not None else {}
        n, clusters = _count(details.get("n")), _count(details.get("n_clusters"))
        deff = as_float(details.get("design_effect"))
        stderr = as_float(run.entry.get(f"{metric}_stderr,{filter_}"))
        clustered = as_float(run.entry.get(f"{metric}_stderr_clustered,{filter_}"))
        shown_on = headline[1] if headline is not None and headline[0] == metric else scale_of(metric)
        scale = shown_on if headline is not None and headline[0] == metric else _full_marks(index, metric, shown_on)
        # the report's own constructor: the same interval for the same rows (a bootstrap's error gets its own)
        estimate = estimate_behind(_finite(value), _finite(stderr), _finite(clustered), n, scale, details)
        size = estimate.effective_n() if scale else None
        wilson = estimate.interval() if size is not None else None
        factor = PERCENT / shown_on if shown_on else 1.0
        out.append(
            MetricErrors(
                metric,
                filter_,
                value * factor,
                stderr * factor,
                clustered * factor,
                n,
                clusters,
                deff,
                str(details.get("method") or ""),
                (wilson[0] * factor, wilson[1] * factor) if wilson is not None else None,
                math.nan if size is None else size,
                bool(shown_on),
            )
        )
    return out


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
