"""A group's page (`/samples?model=M&task=GROUP`, `&vs=B` for a second model beside): the group's own value, the
benchmark's grids across its tasks, each cell linking to the samples behind it, the member tasks with their headline
metric, and the samples of every member in one table, filtered and sorted by the axes across tasks. Without a model
(`/samples?task=NAME`, the links of report.md's tables across models and of the index's *side by side*) the page is
the one model that has it, two models side by side, or, with more, each model's value and a choice of two."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from harness.view.catalog import Catalog
from harness.view.groups import HEADLINE, combine, grids, load_group, member_tasks
from harness.view.sample_table import beside, others_of, sample_table, versus_of
from harness.view.shown import NONE_SHOWN, Shown
from harness.view.shown import shown as shown_value
from harness.view.viewer import Viewer

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
        values.append((model, f"{url.path}?{url.query}", shown_value(catalog, model, name, metric)))
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
            parts.append((member.task, viewer.index(run), member.metric))
            values = [(member.task,), *[(member.axes[a],) if a in member.axes else () for a in labels[1:]]]
            per_task.append(values)
    index = combine(parts)
    axes = {label: [of_task[i] for of_task in per_task] for i, label in enumerate(labels)}  # per task, not per row
    keys = {axis: group.sort_key(axis) for axis in group.axes()}
    tasks = [m.task for m in group.members]
    versus = versus_of(viewer, request.query_params, model, tasks)
    state = {"model": model, "task": group.name, "vs": versus or ""}
    table = sample_table(index, request.query_params, axes, HEADLINE, state, keys)
    shown = grids(catalog, group, versus)
    for grid in shown:
        for cell in (cell for line in grid["table"] for cell in line if cell):
            cell["query"] = {f"ax.{axis}": value for axis, value in cell["filters"].items()}
            cell["selected"] = bool(table["wanted"]) and table["wanted"] == cell["filters"]
    members = [
        {
            "task": m.task,
            "metric": m.metric,
            "shown": m.shown,
            "shown_b": shown_value(catalog, versus, m.task, catalog.primary_metric(versus, m.task)) if versus else None,
            "axes": m.axes,
        }
        for m in group.members
    ]
    if versus:
        beside(viewer, versus, table["rows"], lambda task: catalog.primary_metric(versus, task))
    heads = [(m, _head(catalog, m, group.name, tasks)) for m in (model, versus) if m]
    return viewer.render(
        "samples.html",
        run=None,
        group=group,
        members=members,
        heads=heads,
        metric_shown=catalog.primary_metric(model, group.name),
        vs=versus or "",
        others=others_of(viewer, model, tasks),
        grids=shown,
        problem=None,
        cells=[],
        errors=[],
        pairs=[],
        **table,
    )


def _head(catalog: Catalog, model: str, name: str, tasks: list[str]) -> Shown:
    """The group's own value for `model` at the page's head; where its run holds no entry for the group but ran some
    of its tasks (`--tasks` named a sub-group), no value and why, not "not run" above the tasks' numbers."""
    value = shown_value(catalog, model, name, catalog.primary_metric(model, name))
    data = catalog.models.get(model)
    ran = [task for task in tasks if data is not None and task in data.results]
    if value.ran or not ran:
        return value
    why = f"no value: its run did not pool {name} (--tasks named {len(ran)} of its tasks, shown below)"
    return Shown(NONE_SHOWN, why)
