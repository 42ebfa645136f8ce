"""The viewer's web application (Starlette): its pages, and the images and report files it serves.

Every page is a Jinja2 template rendered with autoescape, so prompts, answers, targets and error messages (text a
model or a dataset wrote) reach the browser as characters; the responses also forbid inline scripts and framing
(`Content-Security-Policy`), so that one missed escape still runs nothing. Images are served by content hash, only
those of prompts rebuilt from verified builds; report files only from inside the results folder (`safe_files`).
The viewer writes nothing anywhere.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from harness.outputs.report import headline_cell, row_scale, scales
from harness.outputs.run_provenance import run_section
from harness.view.catalog import Catalog, TaskRun, hook
from harness.view.safe_files import SERVED, inside
from harness.view.sample_index import SHOWS, SampleIndex, build_index, dumps_record
from harness.view.shown import (
    answer_fields,
    excerpt,
    finite_float,
    image_marks,
    markdown_html,
    natural_key,
    number_text,
    of_doc,
)
from harness.view.task_data import ImageStore, TaskData, header_of, is_sha256, media_type

PAGE_SIZE = 50
THUMB, LARGE = 160, 1600
HERE = Path(__file__).parent
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Viewer:
    """The state behind the pages: the results folder's catalog, the task data and journal indexes read so far."""

    def __init__(self, results_dir: Path, data_dir: str | None = None) -> None:
        self.results_dir = results_dir
        self.catalog = Catalog(results_dir)
        self.data_dir = data_dir
        self.images = ImageStore()
        self._indexes: dict[tuple[str, str], SampleIndex] = {}
        self._data: dict[tuple[str, str], TaskData] = {}
        self._lock = threading.Lock()
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["number"] = number_text
        self.env.globals["query"] = lambda **kw: urlencode({k: v for k, v in kw.items() if v not in (None, "")})

    def index(self, run: TaskRun) -> SampleIndex:
        """The task's journal index, built on first use and again when the journal has grown."""
        key = (run.model, run.task)
        with self._lock:
            found = self._indexes.get(key)
            try:
                stat = run.journal.stat()
                stamp = (stat.st_size, stat.st_mtime_ns)
            except OSError:
                stamp = (0, 0)
            if found is None or found.stamp != stamp:
                found = self._indexes[key] = build_index(run.journal, run.task)
            return found

    def data(self, run: TaskRun) -> TaskData:
        key = (run.model, run.task)
        with self._lock:
            if key not in self._data:
                self._data[key] = TaskData(run, self.images, self.data_dir)
            return self._data[key]

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(results_dir=str(self.results_dir), **context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def not_found(self, what: str) -> HTMLResponse:
        return self.render("missing.html", status=404, what=what)

    # ------------------------------------------------------------------------------------------ pages
    def home(self, request: Request) -> Response:
        models = []
        for model in self.catalog.model_names():
            data = self.catalog.models[model]
            rows = []
            declared = scales(data)
            for name, metric in self.catalog.headline[model]:
                counters = data.counters(name) if name in data.results else {}
                scale = row_scale([data], name, metric, declared)
                rows.append(
                    {
                        "name": name,
                        "metric": metric,
                        "value": headline_cell(data, name, metric, scale),
                        "scale": scale,
                        "task": name in data.results,
                        "n": counters.get("n_scored"),
                        "failed": counters.get("sample_len", 0) - counters.get("n_scored", 0) if counters else 0,
                    }
                )
            runs = [
                {
                    "number": i,
                    "path": Path(path).relative_to(self.results_dir).as_posix()
                    if Path(path).is_relative_to(self.results_dir)
                    else path,
                    "date": run.get("date"),
                    "tasks": len(run.get("results", {})),
                    "command": " ".join(map(str, (run.get("config") or {}).get("argv") or [])),
                }
                for i, (path, run) in enumerate(data.runs)
            ]
            models.append({"name": model, "rows": rows, "runs": runs, "warning": data.provenance_line()})
        report = (self.results_dir / "report.md").is_file()
        return self.render("home.html", models=models, report=report)

    def provenance(self, request: Request) -> Response:
        model = request.query_params.get("model", "")
        data = self.catalog.models.get(model)
        try:
            number = int(request.query_params.get("run", ""))
        except ValueError:
            number = -1
        if data is None or not 0 <= number < len(data.runs):
            return self.not_found("no such run")
        path, run = data.runs[number]
        lines = run_section(path, run, sorted(run.get("results", {})), number + 1, len(data.runs))
        return self.render("provenance.html", model=model, path=path, body=markdown_html("\n".join(lines)))

    def report(self, request: Request) -> Response:
        path = self.results_dir / "report.md"
        if not path.is_file():
            return self.not_found("no report.md in the results folder (write one with `harness report`)")
        return self.render("report.html", body=markdown_html(path.read_text(encoding="utf-8", errors="replace")))

    def report_file(self, request: Request) -> Response:
        target = inside(self.results_dir, request.path_params["path"])
        if target is None:
            return self.not_found("no such file")
        headers = dict(SECURITY_HEADERS)
        headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:"
        return Response(target.read_bytes(), media_type=SERVED[target.suffix.lower()], headers=headers)

    def _task_run(self, request: Request) -> TaskRun | None:
        return self.catalog.task_run(request.query_params.get("model", ""), request.query_params.get("task", ""))

    def samples(self, request: Request) -> Response:
        run = self._task_run(request)
        if run is None:
            return self.not_found("no such model and task in this results folder")
        params = request.query_params
        index = self.index(run)
        data = self.data(run)
        metrics = list(index.metrics)
        metric = (
            params.get("metric") or self.catalog.primary_metric(run.model, run.task) or (metrics[0] if metrics else "")
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
        page = min(max(1, int(params.get("page", "1")) if params.get("page", "1").isdigit() else 1), pages)
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
                    "axes": {
                        label: "; ".join(of_doc(per_doc, int(index.doc_ids[row]))) for label, per_doc in axes.items()
                    },
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
        return self.render(
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
            cells=self._cells(run, wanted),
            full=index.full_marks(metric) if metric else 1.0,
        )

    def _cells(self, run: TaskRun, wanted: dict[str, str]) -> list[dict[str, Any]]:
        """The results' breakdowns the benchmark maps onto an axis (`SAMPLE_CELLS`), each a grid whose cells link to
        their samples: MMNeedle's accuracy per needle cell and per depth."""
        out = []
        breakdowns = (run.run.get("breakdowns") or {}).get(run.task) or {}
        for name, axis in (hook(run.hooks, "SAMPLE_CELLS") or {}).items():
            cells = breakdowns.get(name)
            if not isinstance(cells, dict) or not cells:
                continue
            keys = list(cells)
            grid = all(len(k.split(",")) == 2 and all(p.strip().isdigit() for p in k.split(",")) for k in keys)
            if grid:
                size = max(max(int(p) for p in k.split(",")) for k in keys)
                table = [
                    [cells.get(f"{r},{c}") and {"key": f"{r},{c}", **cells[f"{r},{c}"]} for c in range(1, size + 1)]
                    for r in range(1, size + 1)
                ]
            else:
                table = [[{"key": k, **cells[k]} for k in sorted(keys, key=natural_key)]]
            out.append({"name": name, "axis": axis, "grid": grid, "table": table, "selected": wanted.get(axis)})
        return out

    def sample(self, request: Request) -> Response:
        run = self._task_run(request)
        if run is None:
            return self.not_found("no such model and task in this results folder")
        index = self.index(run)
        row = index.position(request.query_params.get("id", ""))
        if row is None:
            return self.not_found("no such sample in this task's journal")
        record = index.record(row)
        data = self.data(run)
        doc_id = int(index.doc_ids[row])
        prompt = data.prompt(doc_id, record, header_of(run.journal))
        others = [m for m in self.catalog.models_with(run.task) if m != run.model]
        versus = self._versus(request.query_params.get("vs", ""), run, record.get("sample_id"))
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
        return self.render(
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

    def _versus(self, model: str, run: TaskRun, sample_id: Any) -> tuple[str, dict[str, Any]] | None:
        other = self.catalog.task_run(model, run.task) if model else None
        if other is None:
            return None
        index = self.index(other)
        row = index.position(str(sample_id))
        return (model, index.record(row)) if row is not None else (model, {"status": "not run", "sample_id": sample_id})

    def image(self, request: Request) -> Response:
        sha = request.path_params["sha"]
        if not is_sha256(sha):
            return self.not_found("no such image")
        if request.query_params.get("size") == "thumb":
            found = self.images.thumbnail(sha, THUMB)
        elif request.query_params.get("size") == "large":
            found = self.images.thumbnail(sha, LARGE)
        else:
            data = self.images.original(sha)
            found = (data, media_type(data) or "") if data else None
        if not found or not found[1]:
            return self.not_found("no such image")
        headers = dict(SECURITY_HEADERS, **{"Cache-Control": "private, max-age=3600"})
        return Response(found[0], media_type=found[1], headers=headers)


def create_app(results_dir: Path, data_dir: str | None = None) -> Starlette:
    viewer = Viewer(results_dir, data_dir)

    async def favicon(request: Request) -> Response:
        return PlainTextResponse("", status_code=404)

    def not_found_handler(request: Request, exc: Exception) -> Response:
        return viewer.not_found("no such page")

    routes = [
        Route("/", viewer.home),
        Route("/run", viewer.provenance),
        Route("/report/", viewer.report),
        Route("/report/{path:path}", viewer.report_file),
        Route("/samples", viewer.samples),
        Route("/sample", viewer.sample),
        Route("/image/{sha}", viewer.image),
        Route("/favicon.ico", favicon),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found_handler})
    app.state.viewer = viewer
    return app
