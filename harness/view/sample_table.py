"""The sample table of a task's page or a group's: the query's filters, sort and page applied to an index (`select`,
`order`), and what the template shows of each row. One code path for both pages: a task's axes are given per
document, a group's per task (`GroupIndex`).

A second model beside the first on a task's or a group's page (`/samples?model=A&task=NAME&vs=B`): B's number
beside A's wherever the page shows one (the headline, each grid cell, each member task), and in the sample table B's
score and answer on the same sample (same task, same sample id), or what B has of it (not run, its status).

B's rows come from B's own journal index (`sample_index`), looked up by sample id for the rows of the page only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from starlette.datastructures import QueryParams

from harness.view.samples.sample_index import SHOWS, SampleIndex, natural_key
from harness.view.shown import excerpt, finite_float, page_number
from harness.view.viewer import Viewer

PAGE_SIZE = 50


def sample_table(
    index: SampleIndex,
    params: QueryParams,
    axes: dict[str, list[tuple[str, ...]]],
    default_metric: str | None,
    state: dict[str, str],
    sort_keys: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The template's context for the table: its rows on this page, the filters' choices and the query that
    reproduces the view (`state`, starting from the page's own `state`: model and task)."""
    metrics = list(index.metrics)
    metric = params.get("metric") or default_metric or (metrics[0] if metrics else "")
    metric = metric if metric in index.metrics else (metrics[0] if metrics else "")
    show = params.get("show", "all") if params.get("show", "all") in SHOWS else "all"
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
                "task": index.task_of(int(row)) or state["task"],
                "sample": index.sample_ids[row],
                "doc": int(index.doc_ids[row]),
                "status": index.statuses[row],
                "truncated": bool(index.truncated[row]),
                "value": float(index.metrics[metric][row]) if metric else None,
                "tokens": index.tokens[row],
                "answer": excerpt(record.get("response")),
                "error": excerpt(record.get("error")),
                "axes": {label: "; ".join(index.row_values(values, int(row))) for label, values in axes.items()},
            }
        )
    choices = {
        label: sorted({m for members in column for m in members}, key=(sort_keys or {}).get(label, natural_key))
        for label, column in axes.items()
    }
    state = {
        **state,
        "show": show,
        "metric": metric,
        "sort": sort,
        "desc": "1" if descending else "",
        "low": params.get("low", ""),
        "high": params.get("high", ""),
        **{f"ax.{k}": v for k, v in wanted.items()},
    }
    return {
        "index": index,
        "rows": shown,
        "total": len(rows),
        "page": page,
        "pages": pages,
        "metrics": metrics,
        "metric": metric,
        "show": show,
        "shows": SHOWS,
        "axes": list(axes),
        "choices": choices,
        "wanted": wanted,
        "state": state,
        "full": index.full_marks(metric) if metric else 1.0,
    }


def others_of(viewer: Viewer, model: str, tasks: list[str]) -> list[str]:
    """The other models that ran any of `tasks`: the page's choice of a model to set beside."""
    catalog = viewer.catalog
    return [m for m in catalog.model_names() if m != model and any(t in catalog.models[m].results for t in tasks)]


def versus_of(params: QueryParams, others: list[str]) -> str | None:
    """The page's `vs` model, when it is one of `others`."""
    other = params.get("vs")
    return other if other in others else None


def beside(viewer: Viewer, model: str, rows: list[dict[str, Any]], metric_of: Callable[[str], str | None]) -> None:
    """Each row of the page (`sample_table`'s) gets `b`: `model`'s status, score on the row task's `metric_of` and
    answer on the same sample."""
    for row in rows:
        run = viewer.catalog.task_run(model, row["task"])
        index = viewer.index(run) if run is not None else None
        position = index.sample_ids.find(str(row["sample"])) if index is not None else None
        if index is None or position is None:
            row["b"] = {"status": "not run", "value": None, "answer": "", "error": ""}
            continue
        record = index.record(position)
        metric = metric_of(row["task"])
        values = index.metrics.get(metric) if metric else None
        value = float(values[position]) if values is not None else math.nan
        row["b"] = {
            "status": index.statuses[position],
            "value": None if math.isnan(value) else value,
            "answer": excerpt(record.get("response")),
            "error": excerpt(record.get("error")),
        }
