"""The state behind the viewer's pages: the results folder's catalog, the task data and journal indexes read so far,
and the templates they are rendered with.

Every page is a Jinja2 template rendered with autoescape, so prompts, answers, targets and error messages (text a
model or a dataset wrote) reach the browser as characters; the responses also forbid inline scripts and framing
(`Content-Security-Policy`), so that one missed escape still runs nothing."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.responses import HTMLResponse

from harness.view.catalog import Catalog, TaskRun, warn
from harness.view.image_store import ImageStore
from harness.view.samples.judged_columns import add_judged
from harness.view.samples.sample_index import SampleIndex, build_index
from harness.view.shown import interval_text, line_breaks, metric_rows, number_text
from harness.view.task_data import TaskData

HERE = Path(__file__).parent
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def query(**params: object) -> str:
    """A page's query string, its empty parameters left out."""
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _stamp(path: Path) -> tuple[int, int]:
    """A file's size and mtime: an index built from it is rebuilt when they change; (0, 0) where it is gone."""
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_size, stat.st_mtime_ns)


class Viewer:
    """The results folder's catalog, and the task data and journal indexes read so far."""

    def __init__(self, results_dir: Path, data_dir: str | None = None, include_paths: Sequence[Path] = ()) -> None:
        self.results_dir = results_dir
        self.catalog = Catalog(results_dir, include_paths)
        self.data_dir = data_dir
        self.images = ImageStore()
        self._indexes: dict[tuple[str, str], SampleIndex] = {}
        self._data: dict[tuple[str, str], TaskData] = {}
        self._lock = threading.Lock()
        self._building: dict[tuple[str, str], threading.Lock] = {}  # one per journal: its index built once at a time
        # One build at a time across journals: a build's peak (a block, its columns, the sort) is not added to another's
        # (two cores parse no faster with two builds, and a viewer of two million-row journals stays near 1 GB).
        self._one_build = threading.Lock()
        # report.md's page, kept while the file's bytes are the same: linking its rows takes seconds on a large
        # folder, and the catalog it links to is read once for the viewer's life (sha256 of report.md -> page).
        self.report_pages: dict[str, str] = {}
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["number"] = number_text
        self.env.filters["interval"] = interval_text
        self.env.filters["line_breaks"] = line_breaks
        self.env.filters["metric_rows"] = metric_rows
        self.env.globals["query"] = query

    def index(self, run: TaskRun) -> SampleIndex:
        """The task's journal index, built on first use and again when the journal has grown; an empty one (its
        `problem` saying why) when the journal is no regular file inside the results folder. One build per journal
        at a time: requests for it meanwhile wait for that build and share it; a page whose index is built goes on."""
        key = (run.model, run.task)
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:
            journal = run.journal_file()
            found = self._indexes.get(key)
            if journal is None:
                problem = (
                    f"{run.journal.name} is a link leading out of the results folder, or not a regular file"
                    if os.path.lexists(run.journal)
                    else None
                )
                if found is None or found.problem != problem or found.stamp != (0, 0):
                    found = SampleIndex(run.journal, (0, 0), problem=problem)
            else:
                stamp = _stamp(journal)
                judge_log = run.judge_log()
                judge_stamp = _stamp(judge_log) if judge_log is not None else (0, 0)
                if found is None or (found.stamp, found.judge_stamp) != (stamp, judge_stamp) or found.path != journal:
                    with self._one_build:
                        found = build_index(journal, run.task)
                        if judge_log is not None:
                            add_judged(found, judge_log)
                        found.judge_stamp = judge_stamp  # the stamp compared: an unreadable log is not read again
            with self._lock:
                self._indexes[key] = found
            return found

    def index_all(self) -> None:
        """Index every task's journal, one after another (`harness view` runs it on a thread of its own at start, so
        that the first page of a large journal finds its index built, or waits only for the rest of its build)."""
        for model in self.catalog.model_names():
            for task in self.catalog.tasks(model):
                run = self.catalog.task_run(model, task)
                try:
                    if run is not None:
                        self.index(run)
                except Exception as err:  # said, and left to the page that asks for it
                    warn(f"indexing {task} of {model}: {type(err).__name__}: {err}")

    def data(self, run: TaskRun) -> TaskData:
        key = (run.model, run.task)
        with self._lock:
            if key not in self._data:
                self._data[key] = TaskData(run, self.images, self.data_dir)
            return self._data[key]

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return self.respond(self.render_text(template, **context), status)

    def render_text(self, template: str, **context: object) -> str:
        return self.env.get_template(template).render(results_dir=str(self.results_dir), **context)

    def respond(self, html: str, status: int = 200) -> HTMLResponse:
        # a lone surrogate a results file or journal holds (a JSON escape such as \udcff) shows as its escape, not a 500
        body = html.encode("utf-8", "backslashreplace")
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def not_found(self, what: str) -> HTMLResponse:
        return self.render("missing.html", status=404, what=what)
