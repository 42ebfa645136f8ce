"""A task's pages: its samples in a table filtered and sorted on the server (`/samples`), and one sample with its
prompt rebuilt from the verified build, beside another model's answer (`/sample`)."""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from harness.view.catalog import TaskRun, hook
from harness.view.sample_index import SHOWS, dumps_record
from harness.view.shown import (
    answer_fields,
    excerpt,
    finite_float,
    grid_place,
    heat_cell,
    image_marks,
    natural_key,
    of_doc,
    page_number,
)
from harness.view.task_data import header_of
from harness.view.viewer import Viewer

PAGE_SIZE = 50
THUMB = 160


def samples(viewer: Viewer, request: Request) -> Response:
    run = viewer.task_run(request)
    if run is None:
        return viewer.not_found("no such model and task in this results folder")
    params = request.query_params
    index = viewer.index(run)
    data = viewer.data(run)
    metrics = list(index.metrics)
    metric = (
        params.get("metric") or viewer.catalog.primary_metric(run.model, run.task) or (metrics[0] if metrics else "")
    )
    metric = metric if metric in index.metrics else (metrics[0] if metrics else "")
    show = params.get("show", "all") if params.get("show", "all") in SHOWS else "all"
    axes = data.axes()
    wanted = {key[3:]: value for key, value in params.items() if key.startswith("ax.") and value}
    low, high = finite_float(params.get("low")), finite_float(params.get("high"))
    rows = index.select(show, metric, low, high, axes, wanted)
    sort = params.get("sort", "doc")
    descending = params.get("desc") == "1"
    rows = index.order(rows, sort, descending, axes)
    pages = max(1, math.ceil(len(rows) / PAGE_SIZE))
    page = page_number(params.get("page"), pages)
    shown = []
    for row in rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]:
        record = index.record(int(row))
        shown.append(
            {
                "sample": index.sample_ids[row],
                "doc": int(index.doc_ids[row]),
                "status": index.statuses[row],
                "truncated": bool(index.truncated[row]),
                "value": float(index.metrics[metric][row]) if metric else None,
                "tokens": index.tokens[row],
                "answer": excerpt(record.get("response")),
                "error": excerpt(record.get("error")),
                "axes": {label: "; ".join(of_doc(per_doc, int(index.doc_ids[row]))) for label, per_doc in axes.items()},
            }
        )
    choices = {
        label: sorted({m for members in column for m in members}, key=natural_key) for label, column in axes.items()
    }
    state = {
        "model": run.model,
        "task": run.task,
        "show": show,
        "metric": metric,
        "sort": sort,
        "desc": "1" if descending else "",
        "low": params.get("low", ""),
        "high": params.get("high", ""),
        **{f"ax.{k}": v for k, v in wanted.items()},
    }
    return viewer.render(
        "samples.html",
        run=run,
        index=index,
        rows=shown,
        total=len(rows),
        page=page,
        pages=pages,
        metrics=metrics,
        metric=metric,
        show=show,
        shows=SHOWS,
        axes=list(axes),
        choices=choices,
        wanted=wanted,
        state=state,
        problem=data.problem,
        cells=_cells(run, wanted),
        full=index.full_marks(metric) if metric else 1.0,
    )


def _cells(run: TaskRun, wanted: dict[str, str]) -> list[dict[str, Any]]:
    """The results' breakdowns the benchmark maps onto an axis (`SAMPLE_CELLS`), each a grid whose cells link to
    their samples: MMNeedle's accuracy per needle cell and per depth. A cell the results file holds in another shape
    is left out."""
    out = []
    breakdowns = run.run.get("breakdowns")
    breakdowns = breakdowns.get(run.task) if isinstance(breakdowns, dict) else None
    for name, axis in (hook(run.hooks, "SAMPLE_CELLS") or {}).items():
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
    run = viewer.task_run(request)
    if run is None:
        return viewer.not_found("no such model and task in this results folder")
    index = viewer.index(run)
    row = index.position(request.query_params.get("id", ""))
    if row is None:
        return viewer.not_found("no such sample in this task's journal")
    record = index.record(row)
    data = viewer.data(run)
    doc_id = int(index.doc_ids[row])
    prompt = data.prompt(doc_id, record, header_of(run.journal_file()))
    others = [m for m in viewer.catalog.models_with(run.task) if m != run.model]
    versus = _versus(viewer, request.query_params.get("vs", ""), run, record.get("sample_id"))
    doc = data.doc(doc_id)
    marks_hook = hook(run.hooks, "sample_marks")
    marks = image_marks(marks_hook, doc, record, run.model)
    columns = [(run.model, record)]
    if versus is not None:
        columns.append(versus)
        marks += [
            dict(mark, kind="guess-b")
            for mark in image_marks(marks_hook, doc, versus[1], versus[0])
            if mark.get("kind") == "guess"
        ]
    sample_id = str(record.get("sample_id"))
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
        columns=[answer_fields(model, rec) for model, rec in columns],
        marks=marks,
        others=others,
        vs=versus[0] if versus else "",
        position=position,
        thumb=THUMB,
        raw=dumps_record({k: v for k, v in record.items() if k not in ("prompt",)}),
    )


def _versus(viewer: Viewer, model: str, run: TaskRun, sample_id: Any) -> tuple[str, dict[str, Any]] | None:
    other = viewer.catalog.task_run(model, run.task) if model else None
    if other is None:
        return None
    index = viewer.index(other)
    row = index.position(str(sample_id))
    return (model, index.record(row)) if row is not None else (model, {"status": "not run", "sample_id": sample_id})
