"""The viewer's pages over the whole folder: the runs and models (`/`), a run's provenance (`/run`), `report.md` and
the figures it links (`/report/`), and the prompts' images by content hash (`/image/<sha256>`).

Images are served only for prompts rebuilt from verified builds; report files only from inside the results folder
(`safe_files`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from harness.outputs.run_provenance import run_section
from harness.view.image_store import is_sha256, media_type
from harness.view.index_rows import index_rows
from harness.view.report_files import report_file as report_file_of
from harness.view.report_links import linked_report
from harness.view.safe_files import REPORT_MOST, FileTooLarge, inside, read_within, refusal
from harness.view.shown import markdown_html
from harness.view.viewer import SECURITY_HEADERS, Viewer

THUMB, LARGE = 160, 1600


def home(viewer: Viewer, request: Request) -> Response:
    """Every model's runs, then one table of every task and group, one column per model (`index_rows`)."""
    catalog = viewer.catalog
    models = []
    for model in catalog.model_names():
        data = catalog.models[model]
        runs = [
            {
                "number": i,
                "path": Path(path).relative_to(viewer.results_dir).as_posix()
                if Path(path).is_relative_to(viewer.results_dir)
                else path,
                "date": run.get("date"),
                "tasks": len(run.get("results", {})),
                "command": " ".join(map(str, (run.get("config") or {}).get("argv") or [])),
            }
            for i, (path, run) in enumerate(data.runs)
        ]
        models.append({"name": model, "runs": runs, "warning": data.provenance_line()})
    return viewer.render(
        "home.html",
        models=models,
        rows=index_rows(catalog),
        report=inside(viewer.results_dir, "report.md") is not None,
        left_out=catalog.left_out,
        not_loaded=catalog.not_loaded,
    )


def provenance(viewer: Viewer, request: Request) -> Response:
    model = request.query_params.get("model", "")
    data = viewer.catalog.models.get(model)
    try:
        number = int(request.query_params.get("run", ""))
    except ValueError:
        number = -1
    if data is None or not 0 <= number < len(data.runs):
        return viewer.not_found("no such run")
    path, run = data.runs[number]
    try:
        lines = run_section(path, run, sorted(run.get("results", {})), number + 1, len(data.runs))
    except (OverflowError, ValueError, TypeError) as err:  # a value of the file no date or number can hold
        lines = [f"The provenance of this run cannot be shown: {type(err).__name__}: {err}."]
    return viewer.render("provenance.html", model=model, path=path, body=markdown_html("\n".join(lines)))


def report(viewer: Viewer, request: Request) -> Response:
    path = inside(viewer.results_dir, "report.md")
    try:
        text = read_within(path, REPORT_MOST, "a report").decode("utf-8", errors="replace") if path else None
    except FileTooLarge as err:
        return viewer.not_found(refusal(err))
    except OSError:
        text = None
    if text is None:
        return viewer.not_found("no report.md in the results folder (write one with `harness report`)")
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    page = viewer.report_pages.get(key)
    if page is None:  # a report rewritten by `harness report` is linked afresh; the last version alone is kept
        page = viewer.render_text("report.html", body=linked_report(text, viewer.catalog))
        viewer.report_pages = {key: page}
    return viewer.respond(page)


def report_file(viewer: Viewer, request: Request) -> Response:
    try:
        found = report_file_of(viewer.results_dir, request.path_params["path"])
    except FileTooLarge as err:
        return viewer.not_found(refusal(err))
    if found is None:
        return viewer.not_found("no such file: the report's figures and report.md are served, nothing else")
    headers = dict(SECURITY_HEADERS)
    headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:"
    return Response(found[0], media_type=found[1], headers=headers)


def image(viewer: Viewer, request: Request) -> Response:
    sha = request.path_params["sha"]
    if not is_sha256(sha):
        return viewer.not_found("no such image")
    if request.query_params.get("size") == "thumb":
        found = viewer.images.thumbnail(sha, THUMB)
    elif request.query_params.get("size") == "large":
        found = viewer.images.thumbnail(sha, LARGE)
    else:
        data = viewer.images.original(sha)
        found = (data, media_type(data) or "") if data else None
    if not found or not found[1]:
        return viewer.not_found("no such image")
    headers = dict(SECURITY_HEADERS, **{"Cache-Control": "private, max-age=3600"})
    return Response(found[0], media_type=found[1], headers=headers)
