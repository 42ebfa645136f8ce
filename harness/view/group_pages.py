"""A group's page (`/samples?model=M&task=GROUP`): the benchmark's grids across its tasks, each cell linking to the
samples behind it, the member tasks with their headline metric, and the samples of every member in one table,
filtered and sorted by the axes across tasks. Without a model (`/samples?task=NAME`, the links of report.md's tables
across models) the page is the one model that has it, or a choice between those that do."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from harness.view.group_index import HEADLINE, combine
from harness.view.groups import grids, load_group, member_tasks
from harness.view.sample_table import sample_table
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
    links = []
    for model in models:
        url = request.url.include_query_params(model=model)
        links.append((model, f"{url.path}?{url.query}"))
    if len(links) == 1:
        return RedirectResponse(links[0][1], 303)
    ran = [m for m in models if name in catalog.models[m].results]  # a task: its pairs open the two-model view
    pairs = [(a, b) for i, a in enumerate(ran) for b in ran[i + 1 :]]
    return viewer.render("choose.html", name=name, links=links, pairs=pairs)


def group_samples(viewer: Viewer, request: Request, model: str) -> Response:
    catalog = viewer.catalog
    group = load_group(catalog, model, request.query_params.get("task", ""))
    if group is None:
        return viewer.not_found(NO_SUCH)
    labels = ["task", *group.axes()]
    parts, per_task = [], []
    for member in group.members:
        run = catalog.task_run(model, member.task)
        if run is not None:
            parts.append((member.task, viewer.index(run), member.metric))
            per_task.append([(member.task,), *[(member.axes[a],) if a in member.axes else () for a in labels[1:]]])
    index = combine(parts)
    axes = {label: [per_task[t][i] for t in index.row_task.tolist()] for i, label in enumerate(labels)}
    keys = {axis: group.sort_key(axis) for axis in group.axes()}
    table = sample_table(index, request.query_params, axes, HEADLINE, {"model": model, "task": group.name}, keys)
    shown = grids(group)
    for grid in shown:
        for cell in (cell for line in grid["table"] for cell in line if cell):
            cell["query"] = {f"ax.{axis}": value for axis, value in cell["filters"].items()}
            cell["selected"] = bool(table["wanted"]) and table["wanted"] == cell["filters"]
    members = [
        {"task": m.task, "metric": m.metric, "shown": "" if m.value is None else f"{m.value:.1f}", "axes": m.axes}
        for m in group.members
    ]
    return viewer.render(
        "samples.html",
        run=None,
        group=group,
        members=members,
        grids=shown,
        problem=None,
        cells=[],
        errors=[],
        pairs=[],
        **table,
    )
