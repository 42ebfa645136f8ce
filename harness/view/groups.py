"""A group as the viewer shows it: its member tasks a model has results for, each task's place on the benchmark's
axes across tasks (its declared `ViewHooks.task_axes`), and the grids those axes draw (`group_grid`: MMLongBench's
length x category, LoCoVQA's accuracy by context length, MMNeedle's M x N), each cell linking to the samples behind
it and showing the number report.md shows for the same tasks (`shown.shown`): its one task's value, else the value
of the results' group whose tasks are exactly the cell's (`harness.outputs.results.groups.groups_by_tasks`: a cell of
one category at one length is the group of exactly those tasks, with the mean that group declares), else no number and why (a
plain mean of tasks no group pools, such as five different ablation sets, is no benchmark's number).

Members come from the installed task folders' group definitions (the same the runs expanded), else from the
results file's `group_subtasks` for a group no installed folder defines.
A group's sample table (`GroupIndex`) is every member task's journal index (`sample_index`) side by side, one row per
sample of each task, filtered and sorted by the axes across tasks.

A group's page (`/samples?model=M&task=GROUP`, `&vs=B` for a second model beside): the group's own value, the
benchmark's grids across its tasks, each cell linking to the samples behind it, the member tasks with their headline
metric, and the samples of every member in one table, filtered and sorted by the axes across tasks. Without a model
(`/samples?task=NAME`, the links of report.md's tables across models and of the index's *side by side*) the page is
the one model that has it, two models side by side, or, with more, each model's value and a choice of two."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from harness.errors import UserError
from harness.outputs.report.report_md import task_index
from harness.outputs.results.groups import leaf_tasks, recorded_subtasks
from harness.view.catalog import Catalog, warn
from harness.view.sample_table import beside, others_of, sample_table, versus_of
from harness.view.samples.sample_index import SampleIndex, joined
from harness.view.samples.text_columns import concat, concat_clusters
from harness.view.shown import NONE_SHOWN, NOT_RUN, Shown, shown
from harness.view.view_hooks_api import ViewHooks
from harness.view.viewer import Viewer


@dataclass
class Member:
    """One member task of a group, for one model."""

    task: str
    axes: dict[str, str]  # its values on the benchmark's axes across tasks
    metric: str | None  # its headline metric
    shown: Shown  # that metric as report.md shows it


@dataclass
class Group:
    model: str
    name: str
    members: list[Member]
    hooks: ViewHooks | None  # the benchmark's declared `ViewHooks`, or None
    axis_order: dict[str, list[str]] = field(default_factory=dict)

    def axes(self) -> list[str]:
        """The axes across tasks the members have, in the benchmark's order of first mention."""
        seen: dict[str, None] = {}
        for member in self.members:
            seen.update(dict.fromkeys(member.axes))
        return list(seen)

    def sort_key(self, axis: str) -> Callable[[str], tuple[Any, ...]]:
        order = self.axis_order.get(axis) or []
        return lambda value: (0, order.index(value), 0.0, "") if value in order else (1, 0, *_value_key(value))


def _value_key(value: str) -> tuple[float, str]:
    """Numbers by value (`8k` < `16k` < `1m`), then text."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([km]?)", value.strip().lower())
    if found is None:
        return (float("inf"), value)
    return (float(found.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[found.group(2)], "")


def member_tasks(catalog: Catalog, model: str, name: str) -> list[str] | None:
    """The leaf tasks of group `name` that `model` has results for, in the group's order; None when `name` is no
    group (of the installed task folders, or of the model's results)."""
    data = catalog.models.get(model)
    if data is None:
        return None
    index = task_index(())
    if name in index.groups:
        try:
            tasks = index.select([name]).tasks
        except (UserError, ValueError) as err:  # an installed group that no longer expands: said, not a 500
            warn(f"group {name}: {err}")
            tasks = []
    else:
        recorded = recorded_subtasks(data)
        if name not in recorded:
            return None
        tasks = leaf_tasks(name, recorded)
    return [task for task in tasks if task in data.results]


def load_group(catalog: Catalog, model: str, name: str) -> Group | None:
    tasks = member_tasks(catalog, model, name)
    if tasks is None:
        return None
    members = []
    by_task = catalog.hooks[model]
    hooks = next((found for task in tasks if (found := by_task.get(task)) is not None), None)
    for task in tasks:
        task_hooks = by_task.get(task)
        derive = task_hooks.task_axes if task_hooks is not None else None
        try:
            axes = {str(k): str(v) for k, v in (derive(task) if callable(derive) else {}).items()}
        except Exception as err:  # a benchmark's naming aid must not lose the page
            warn(f"task_axes({task!r}) failed: {type(err).__name__}: {err}")
            axes = {}
        metric = catalog.primary_metric(model, task)
        members.append(Member(task, axes, metric, shown(catalog, model, task, metric)))
    order = hooks.axis_order if hooks is not None else {}
    return Group(model, name, members, hooks, {str(axis): list(values) for axis, values in order.items()})


def cell_value(catalog: Catalog, model: str, tasks: list[str]) -> tuple[str | None, Shown]:
    """What a cell holding `tasks` shows for `model`, and the task or group it is the value of: its one task's, else
    the value of the results' group whose tasks are exactly these; else none, and why."""
    data = catalog.models.get(model)
    if data is None or not tasks:
        return None, Shown("", NOT_RUN)
    if len(tasks) == 1:
        return tasks[0], shown(catalog, model, tasks[0], catalog.primary_metric(model, tasks[0]))
    group = catalog.groups_by_tasks[model].get(frozenset(tasks))
    if group is None:
        why = (
            f"no group of the results holds exactly these {len(tasks)} tasks: a plain mean of them is no "
            "benchmark's number (open the cell for each task's)"
        )
        return None, Shown(NONE_SHOWN, why)
    return group, shown(catalog, model, group, catalog.primary_metric(model, group))


def grids(catalog: Catalog, group: Group, versus: str | None = None) -> list[dict[str, Any]]:
    """The benchmark's grids of the group (`group_grid`: rows, columns and facets, each a list of axes): one per
    combination of the facets' values, each cell {of, shown, level, tasks, filters} (`cell_value`; with `versus`, a
    second model, its `of_b` and `shown_b` beside); none when it declares no grid."""
    spec = group.hooks.group_grid if group.hooks is not None else None
    if spec is None:
        return []
    rows_on, columns_on, facets_on = (list(spec.get(key) or []) for key in ("rows", "columns", "facets"))
    placed = [m for m in group.members if all(axis in m.axes for axis in (*rows_on, *columns_on, *facets_on))]
    if not rows_on or not columns_on or not placed:
        return []

    def place(member: Member, axes: list[str]) -> tuple[str, ...]:
        return tuple(member.axes[axis] for axis in axes)

    def ordered(values: set[tuple[str, ...]], axes: list[str]) -> list[tuple[str, ...]]:
        keys = [group.sort_key(axis) for axis in axes]
        return sorted(values, key=lambda value: tuple(key(part) for key, part in zip(keys, value, strict=True)))

    out = []
    for facet in ordered({place(m, facets_on) for m in placed}, facets_on):
        inside = [m for m in placed if place(m, facets_on) == facet]
        rows = ordered({place(m, rows_on) for m in inside}, rows_on)
        columns = ordered({place(m, columns_on) for m in inside}, columns_on)
        cells: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, Any]] = {}
        for row in rows:
            for column in columns:
                tasks = [m for m in inside if place(m, rows_on) == row and place(m, columns_on) == column]
                if not tasks:
                    continue
                filters = {**dict(zip(facets_on, facet, strict=True)), **dict(zip(rows_on, row, strict=True))}
                filters.update(zip(columns_on, column, strict=True))
                names = [m.task for m in tasks]
                of, value = cell_value(catalog, group.model, names)
                cells[(row, column)] = {"of": of, "shown": value, "tasks": names, "filters": filters}
                if versus is not None:
                    cells[(row, column)]["of_b"], cells[(row, column)]["shown_b"] = cell_value(catalog, versus, names)
        out.append(
            {
                "title": _named(facets_on, facet),
                "rows_on": " · ".join(rows_on),
                "columns_on": " · ".join(columns_on),
                "rows": [_named(rows_on, row) for row in rows],
                "columns": [_named(columns_on, column) for column in columns],
                "table": [[cells.get((row, column)) for column in columns] for row in rows],
            }
        )
    return out


def _named(axes: list[str], values: tuple[str, ...]) -> str:
    return " · ".join(f"{axis}={value}" for axis, value in zip(axes, values, strict=True))


HEADLINE = "headline"  # the metric choice that reads each row on its own task's headline metric


@dataclass
class GroupIndex(SampleIndex):
    """Rows of several tasks: `row_task` names each row's task (an index into `tasks`), whose journal `journals`
    holds its record. Axes are given one value per task (not per document), read through `row_task`: a group of a
    million rows filters and sorts by them in array work over a few values."""

    tasks: list[str] = field(default_factory=list)
    journals: list[Path] = field(default_factory=list)
    judge_logs: list[Path | None] = field(default_factory=list)  # each task's `judge_log`
    row_task: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def journal_of(self, row: int) -> Path:
        return self.journals[int(self.row_task[row])]

    def judge_log_of(self, row: int) -> Path | None:
        return self.judge_logs[int(self.row_task[row])]

    def task_of(self, row: int) -> str:
        return self.tasks[int(self.row_task[row])]

    def row_values(self, axis: list[tuple[str, ...]], row: int) -> tuple[str, ...]:
        return axis[int(self.row_task[row])]  # given per task

    def _by_doc(self, per_doc: np.ndarray, missing: object) -> np.ndarray:
        return np.asarray(per_doc)[self.row_task] if len(per_doc) else np.full(len(self), missing)  # given per task

    def order(
        self, rows: np.ndarray, key: str, descending: bool, axes: dict[str, list[tuple[str, ...]]] | None = None
    ) -> np.ndarray:
        if key != "doc":
            return super().order(rows, key, descending, axes)
        by_task = rows[np.lexsort((self.doc_ids[rows], self.row_task[rows]))]  # each task's documents in turn
        return by_task[::-1] if descending else by_task


def combine(parts: list[tuple[str, SampleIndex, str | None]]) -> GroupIndex:
    """One index over `parts`: (task, its index, the metric its rows are read on for its headline metric:
    `Catalog.sample_metric`), in that order. Every metric of any task is a column (NaN where a task has none), and
    `HEADLINE` reads each row on its task's headline metric."""
    group = GroupIndex(Path("."), (0, 0))
    names: dict[str, None] = {}
    for _, index, _ in parts:
        names.update(dict.fromkeys(index.metrics))
    columns: dict[str, list[np.ndarray]] = {HEADLINE: [], **{name: [] for name in names}}
    row_task = []
    for number, (task, index, headline) in enumerate(parts):
        size = len(index)
        group.tasks.append(task)
        group.journals.append(index.path)
        group.judge_logs.append(index.judge_log)
        row_task.append(np.full(size, number, np.int64))
        for name in names:
            columns[name].append(index.metrics.get(name, np.full(size, math.nan)))
        columns[HEADLINE].append(index.metrics.get(headline or "", np.full(size, math.nan)))
        group.skipped += index.skipped
        if index.problem:
            group.problem = "; ".join(filter(None, [group.problem, f"{task}: {index.problem}"]))

    group.row_task = joined(row_task, np.int64)
    group.sample_ids = concat([index.sample_ids for _, index, _ in parts])
    group.statuses = concat([index.statuses for _, index, _ in parts])
    group.clusters = concat_clusters([index.clusters for _, index, _ in parts], group.cluster_of)
    group.doc_ids = joined([index.doc_ids for _, index, _ in parts], np.int64)
    group.tokens = joined([index.tokens for _, index, _ in parts], np.float64)
    group.truncated = joined([index.truncated for _, index, _ in parts], bool)
    group.offsets = joined([index.offsets for _, index, _ in parts], np.int64)
    group.lengths = joined([index.lengths for _, index, _ in parts], np.int64)
    group.judge_offsets = joined([index.judge_offsets for _, index, _ in parts], np.int64)
    group.judge_lengths = joined([index.judge_lengths for _, index, _ in parts], np.int64)
    group.metrics = {name: joined(arrays, np.float64) for name, arrays in columns.items()}
    return group


NO_SUCH = "no such model and task or group in this results folder"


def choose_model(viewer: Viewer, request: Request) -> Response:
    name = request.query_params.get("task", "")
    catalog = viewer.catalog
    models = [
        model
        for model in catalog.model_names()
        if name in catalog.models[model].results or member_tasks(catalog, model, name)
    ]
    if not models:
        return viewer.not_found(NO_SUCH)
    if len(models) <= 2:  # the one model, or the two side by side
        url = request.url.include_query_params(model=models[0], **({"vs": models[1]} if len(models) == 2 else {}))
        return RedirectResponse(f"{url.path}?{url.query}", 303)
    metric = next((found for m in catalog.model_names() if (found := catalog.primary_metric(m, name))), None)
    values = []
    for model in models:
        url = request.url.include_query_params(model=model)
        values.append((model, f"{url.path}?{url.query}", shown(catalog, model, name, metric)))
    pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1 :]]
    return viewer.render("choose.html", name=name, models=values, pairs=pairs)


def group_samples(viewer: Viewer, request: Request, model: str) -> Response:
    catalog = viewer.catalog
    group = load_group(catalog, model, request.query_params.get("task", ""))
    if group is None:
        return viewer.not_found(NO_SUCH)
    labels = ["task", *group.axes()]
    parts, per_task = [], []
    values: list[tuple[str, ...]]
    for member in group.members:
        run = catalog.task_run(model, member.task)
        if run is not None:
            parts.append((member.task, viewer.index(run), catalog.sample_metric(model, member.task)))
            values = [(member.task,), *[(member.axes[a],) if a in member.axes else () for a in labels[1:]]]
            per_task.append(values)
    index = combine(parts)
    axes = {label: [of_task[i] for of_task in per_task] for i, label in enumerate(labels)}  # per task, not per row
    keys = {axis: group.sort_key(axis) for axis in group.axes()}
    tasks = [m.task for m in group.members]
    others = others_of(viewer, model, tasks)
    versus = versus_of(request.query_params, others)
    state = {"model": model, "task": group.name, "vs": versus or ""}
    table = sample_table(index, request.query_params, axes, HEADLINE, state, keys)
    drawn = grids(catalog, group, versus)
    for grid in drawn:
        for cell in (cell for line in grid["table"] for cell in line if cell):
            cell["query"] = {f"ax.{axis}": value for axis, value in cell["filters"].items()}
            cell["selected"] = bool(table["wanted"]) and table["wanted"] == cell["filters"]
    members = [
        {
            "task": m.task,
            "metric": m.metric,
            "shown": m.shown,
            "shown_b": shown(catalog, versus, m.task, catalog.primary_metric(versus, m.task)) if versus else None,
            "axes": m.axes,
        }
        for m in group.members
    ]
    if versus:
        beside(viewer, versus, table["rows"], lambda task: catalog.sample_metric(versus, task))
    heads = [(m, _head(catalog, m, group.name, tasks)) for m in (model, versus) if m]
    return viewer.render(
        "samples.html",
        run=None,
        group=group,
        members=members,
        heads=heads,
        metric_shown=catalog.primary_metric(model, group.name),
        vs=versus or "",
        others=others,
        grids=drawn,
        problem=None,
        cells=[],
        errors=[],
        pairs=[],
        **table,
    )


def _head(catalog: Catalog, model: str, name: str, tasks: list[str]) -> Shown:
    """The group's own value for `model` at the page's head; where its run holds no entry for the group but ran some
    of its tasks (`--tasks` named a sub-group), no value and why, not "not run" above the tasks' numbers."""
    value = shown(catalog, model, name, catalog.primary_metric(model, name))
    data = catalog.models.get(model)
    ran = [task for task in tasks if data is not None and task in data.results]
    if value.ran or not ran:
        return value
    why = f"no value: its run did not pool {name} (--tasks named {len(ran)} of its tasks, shown below)"
    return Shown(NONE_SHOWN, why)
