"""A group as the viewer shows it: its member tasks a model has results for, each task's place on the benchmark's
axes across tasks (its declared `ViewHooks.task_axes`), and the grids those axes draw (`group_grid`: MMLongBench's
length x category, LoCoVQA's accuracy by context length, MMNeedle's M x N), each cell the mean of its tasks' headline
metric on the 0-100 scale, linking to the samples behind it.

Members come from the installed task folders' group definitions (the same the runs expanded), else from the
results file's `group_subtasks` for a group no installed folder defines."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UserError
from harness.outputs.report import row_scale, scales, task_index
from harness.view.catalog import Catalog
from harness.view.sample_index import as_float
from harness.view.view_hooks_api import ViewHooks


@dataclass
class Member:
    """One member task of a group, for one model."""

    task: str
    axes: dict[str, str]  # its values on the benchmark's axes across tasks
    metric: str | None  # its headline metric
    value: float | None  # that metric on the 0-100 scale (None: not a proportion, or not recorded)


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
            print(f"harness view: group {name}: {err}", file=sys.stderr)
            tasks = []
    else:
        recorded: dict[str, Any] = {}
        for _, run in data.runs:
            subtasks = run.get("group_subtasks")
            recorded.update(subtasks if isinstance(subtasks, dict) else {})
        if name not in recorded:
            return None
        tasks, seen = [], set()
        pending = list(reversed(recorded[name] if isinstance(recorded[name], list) else []))
        while pending:  # depth first, each name once: a cycle in a results file ends here
            member = pending.pop()
            if not isinstance(member, str) or member in seen:
                continue
            seen.add(member)
            if isinstance(recorded.get(member), list):
                pending += reversed(recorded[member])
            else:
                tasks.append(member)
    return [task for task in tasks if task in data.results]


def load_group(catalog: Catalog, model: str, name: str) -> Group | None:
    tasks = member_tasks(catalog, model, name)
    if tasks is None:
        return None
    data = catalog.models[model]
    declared = scales(data)
    headline = dict(catalog.headline.get(model, []))
    members = []
    by_task = catalog.hooks[model]
    hooks = next((found for task in tasks if (found := by_task.get(task)) is not None), None)
    for task in tasks:
        task_hooks = by_task.get(task)
        derive = task_hooks.task_axes if task_hooks is not None else None
        try:
            axes = {str(k): str(v) for k, v in (derive(task) if callable(derive) else {}).items()}
        except Exception as err:  # a benchmark's naming aid must not lose the page
            print(f"harness view: task_axes({task!r}) failed: {type(err).__name__}: {err}", file=sys.stderr)
            axes = {}
        metric = headline.get(task) or catalog.primary_metric(model, task)
        members.append(Member(task, axes, metric, _percent(data, task, metric, declared)))
    order = hooks.axis_order if hooks is not None else {}
    return Group(model, name, members, hooks, {str(axis): list(values) for axis, values in order.items()})


def _percent(data: Any, task: str, metric: str | None, declared: dict[str, int]) -> float | None:
    if metric is None:
        return None
    value = as_float(data.results.get(task, {}).get(f"{metric},none"))
    try:
        scale = row_scale([data], task, metric, declared)
    except (OverflowError, ValueError, TypeError):
        return None
    return None if scale is None or value != value else value * 100 / scale


def grids(group: Group) -> list[dict[str, Any]]:
    """The benchmark's grids of the group (`group_grid`: rows, columns and facets, each a list of axes): one per
    combination of the facets' values, each cell {value, tasks, filters}; none when it declares no grid."""
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
                values = [m.value for m in tasks if m.value is not None]
                mean = sum(values) / len(values) if values else None
                filters = {**dict(zip(facets_on, facet, strict=True)), **dict(zip(rows_on, row, strict=True))}
                filters.update(zip(columns_on, column, strict=True))
                cells[(row, column)] = {
                    "value": mean,
                    "shown": "N/A" if mean is None else f"{mean:.1f}",
                    "level": 0 if mean is None else int(min(max(mean / 100, 0.0), 1.0) * 10 + 0.5),
                    "tasks": [m.task for m in tasks],
                    "filters": filters,
                }
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
