"""The viewer's pages over the whole folder: the runs and models (`/`), a run's provenance (`/run`), `report.md` and
the figures it links (`/report/`), and the prompts' images by content hash (`/image/<sha256>`).

Images are served only for prompts rebuilt from verified builds. At `/report/NAME`: `report.md`, and the figures
`harness report` wrote beside it, as its manifest `.report_figures.json` lists them (`harness.outputs.report.figure_batch`),
only while their bytes are those it recorded. Any other file of the folder (a planted `.png`, an `.svg` the report
did not draw, a figure changed since) is answered 404, as is one leading out of the folder (`safe_files`).

report.md is shown as markdown to HTML (raw HTML escaped), each table row linked to the viewer's page
for it. The links are the viewer's URLs, so they are made here, where they open, and report.md stays the file
`harness report` wrote, byte for byte, readable anywhere else.

A row's page: the task or group its first cell names (`name`, `name ‡`, `name · metric`), or what the benchmark's
`viewer_row(header, cells)` hook makes of a row of its own tables (MMNeedle's `M=10 N=2 K=1`, MMLongBench's category
and dataset rows, LoCoVQA's series): a group's page filtered on its axes across tasks. Rows under a model's heading
(`## model`) open that model's page; rows of the tables across models (and the summary) open the page without a
model (`groups.choose_model`): the one model that ran it, the two that did side by side, or with more each one's
number and every two side by side.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from starlette.requests import Request
from starlette.responses import Response

from builders.core import contract
from harness.outputs.report.figure_batch import MANIFEST
from harness.outputs.report.report_md import task_index
from harness.outputs.report.run_provenance import run_section
from harness.outputs.results.model_results import local_path
from harness.view.catalog import Catalog
from harness.view.image_store import is_sha256, media_type
from harness.view.samples.safe_files import (
    FIGURE_MANIFEST_MOST,
    FIGURE_MOST,
    REPORT_MOST,
    SERVED,
    contained,
    inside,
    refusal,
)
from harness.view.shown import index_rows, markdown_html, prose_line_breaks
from harness.view.view_hooks_api import ViewerRow
from harness.view.viewer import SECURITY_HEADERS, Viewer, query

THUMB, LARGE = 160, 1600
REPORT = "report.md"


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
        checkpoints = sorted(name for name in data.model_names() if local_path(name))  # the paths its name leaves out
        models.append({"name": model, "runs": runs, "warning": data.provenance_line(), "checkpoints": checkpoints})
    return viewer.render(
        "home.html",
        models=models,
        rows=index_rows(catalog),
        report=inside(viewer.results_dir, REPORT) is not None,
        left_out=catalog.left_out,
        not_loaded=catalog.not_loaded,
    )


def provenance(viewer: Viewer, request: Request) -> Response:
    model = viewer.catalog.model_named(request.query_params.get("model", ""))
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
    try:
        found = served_file(viewer.results_dir, REPORT)
    except contract.FileTooLarge as err:
        return viewer.not_found(refusal(err))
    if found is None:
        return viewer.not_found("no report.md in the results folder (write one with `harness report`)")
    text = found[0].decode("utf-8", errors="replace")
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    page = viewer.report_pages.get(key)
    if page is None:  # a report rewritten by `harness report` is linked afresh; the last version alone is kept
        page = viewer.render_text("report.html", body=linked_report(text, viewer.catalog))
        viewer.report_pages = {key: page}
    return viewer.respond(page)


def report_file(viewer: Viewer, request: Request) -> Response:
    try:
        found = served_file(viewer.results_dir, request.path_params["path"])
    except contract.FileTooLarge as err:
        return viewer.not_found(refusal(err))
    if found is None:
        return viewer.not_found("no such file: the report's figures and report.md are served, nothing else")
    policy = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:"  # an SVG figure's own styles
    headers = dict(SECURITY_HEADERS, **{"Content-Security-Policy": policy})
    return Response(found[0], media_type=found[1], headers=headers)


def image(viewer: Viewer, request: Request) -> Response:
    sha = request.path_params["sha"]
    if not is_sha256(sha):
        return viewer.not_found("no such image")
    size = {"thumb": THUMB, "large": LARGE}.get(request.query_params.get("size", ""))
    if size is not None:
        found = viewer.images.thumbnail(sha, size)
    else:
        data = viewer.images.original(sha)
        found = (data, media_type(data) or "") if data else None
    if not found or not found[1]:
        return viewer.not_found("no such image")
    headers = dict(SECURITY_HEADERS, **{"Cache-Control": "private, max-age=3600"})
    return Response(found[0], media_type=found[1], headers=headers)


def served_file(root: Path, relative: str) -> tuple[bytes, str] | None:
    """(bytes, media type) of the file `/report/<relative>` names, or None (see the module's docstring); a file past
    its bound (`REPORT_MOST`, `FIGURE_MOST`) raises `FileTooLarge`, not read."""
    target = inside(root, relative)
    if target is None:
        return None
    most, what = (REPORT_MOST, "a report") if relative == REPORT else (FIGURE_MOST, "a figure")
    try:
        data = contract.read_regular(target, most, what)
    except contract.FileTooLarge:
        raise
    except OSError:
        return None
    if relative != REPORT and hashlib.sha256(data).hexdigest() != figures(root).get(relative):
        return None
    return data, SERVED[target.suffix.lower()]


def figures(root: Path) -> dict[str, str]:
    """Figure name -> the sha256 of the bytes `harness report` wrote, from the folder's manifest (empty without
    one, or with one that is no manifest)."""
    path = contained(root, root / MANIFEST)
    try:
        if path is None:
            return {}
        manifest: Any = json.loads(
            contract.read_regular(path, FIGURE_MANIFEST_MOST, "a figure manifest").decode("utf-8")
        )
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(manifest, dict):
        return {}
    return {
        str(name): entry["sha256"]
        for name, entry in manifest.items()
        if isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
    }


MARKS = re.compile(r"(\s*[‡§†*])+$")


def linked_report(text: str, catalog: Catalog) -> str:
    """report.md's HTML with every table row the viewer has a page for linked to it."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    pages = RowPages(catalog)
    model: str | None = None
    header: list[str] = []
    previous: str | None = None  # the page of the row above
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token.type == "heading_open" and token.tag in ("h1", "h2"):
            title = tokens[position + 1].content.strip()
            model = title if title in catalog.models else None
        elif token.type == "thead_open":
            header = [t.content.strip() for t in _cells_until(tokens, position, "thead_close")]
            previous = None
        elif token.type == "tr_open" and header and _inside_body(tokens, position):
            cells = _cells_until(tokens, position, "tr_close")
            texts = [c.content.strip() for c in cells]
            if texts and not texts[0]:  # a row continuing the one above (another metric of its task)
                url, first = previous, next((c for c, t in zip(cells, texts, strict=True) if t), None)
            else:
                url, first = (pages.url(model, header, texts) if texts else None), (cells[0] if cells else None)
                previous = url
            if url and first is not None and first.children is not None:
                _link(first, url)
        position += 1
    _number_cells(tokens)
    prose_line_breaks(md, tokens)
    return md.renderer.render(tokens, md.options, {})


# a value, its interval, a p or counts (27.8 [18.3, 39.8], <0.0001, 0 / 17), or the word for none (N/A, —)
NUMBER_CELL = re.compile(r"[\d.,\s\[\]()/±%<>+\-−]*\d[\d.,\s\[\]()/±%<>+\-−]*|N/A|—")
# a path (a build's, a checkpoint's) or a content hash: a word too long to keep whole in a 1280-px window
PATH_OR_HASH = re.compile(r"/\w|[0-9a-f]{32}")


def _number_cells(tokens: list[Token]) -> None:
    """Each table cell that holds only a number (a value, its interval, a p, counts) marked `num`: set right and
    never broken mid-number (`1.00` over `00`); one that holds a path or a hash marked `long`: broken anywhere. Every
    other cell breaks between words only (`not recorde` over `d`, `lenient_existence_` over `acc` read so); a wide
    table scrolls inside its own box instead."""
    for token, inline in zip(tokens, tokens[1:], strict=False):
        if token.type == "td_open" and inline.type == "inline":
            text = inline.content.strip()
            if NUMBER_CELL.fullmatch(text):
                token.attrSet("class", "num")
            elif PATH_OR_HASH.search(text):
                token.attrSet("class", "long")


def _link(cell: Token, url: str) -> None:
    """Make the cell's text a link to `url` (unless it holds one already)."""
    children = cell.children or []
    if not any(child.type == "link_open" for child in children):
        link = Token("link_open", "a", 1, attrs={"href": url, "class": "row-link"})
        cell.children = [link, *children, Token("link_close", "a", -1)]


def _cells_until(tokens: list[Token], start: int, end: str) -> list[Token]:
    cells = []
    for token in tokens[start:]:
        if token.type == end:
            break
        if token.type == "inline":
            cells.append(token)
    return cells


def _inside_body(tokens: list[Token], position: int) -> bool:
    for token in reversed(tokens[:position]):
        if token.type in ("tbody_open", "thead_open"):
            return token.type == "tbody_open"
    return False


class RowPages:
    """Which viewer page a table row opens (see the module's docstring)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.known = {n for data in catalog.models.values() for n in (*data.results, *data.groups)}
        self.groups = set(task_index(()).groups)
        seen: dict[int, ViewerRow] = {}  # each benchmark's declared `ViewHooks.viewer_row`, in the order first met
        for by_name in catalog.hooks.values():
            for hooks in by_name.values():
                if hooks is not None and callable(hooks.viewer_row):
                    seen.setdefault(id(hooks), hooks.viewer_row)
        self.viewer_rows = list(seen.values())

    def url(self, model: str | None, header: list[str], cells: list[str]) -> str | None:
        name = MARKS.sub("", cells[0].split(" · ")[0]).strip()
        filters: dict[str, str] = {}
        if name not in self.known:
            found = self._benchmark_row(header, cells)
            if found is None:
                return None
            name, filters = found
        if name not in self.known and name not in self.groups:
            return None
        return "/samples?" + query(model=model, task=name, **{f"ax.{k}": v for k, v in filters.items()})

    def _benchmark_row(self, header: list[str], cells: list[str]) -> tuple[str, dict[str, str]] | None:
        for viewer_row in self.viewer_rows:
            try:
                found = viewer_row(header, cells)
            except Exception:  # a benchmark's naming aid must not lose the report page
                continue
            if isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], str):
                return found[0], {str(k): str(v) for k, v in dict(found[1]).items()}
        return None
