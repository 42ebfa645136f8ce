"""The viewer's web application (Starlette): its routes, each page run off the event loop (`blocking`), behind the
Host check (`hosts`), with the static files of its pages. The viewer writes nothing anywhere."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from harness.view import pages, pairs, sample_pages
from harness.view.blocking import page
from harness.view.hosts import HostCheck, ServedHosts
from harness.view.viewer import HERE, Viewer


def create_app(
    results_dir: Path, data_dir: str | None = None, *, hosts: ServedHosts, include_paths: Sequence[Path] = ()
) -> Starlette:
    """The viewer of `results_dir`, answering only requests whose Host is one of `hosts`; tasks from the installed
    task folders and `include_paths` (`harness view --include_path`), never from those a results file records."""
    viewer = Viewer(results_dir, data_dir, include_paths)

    def bound(handler: Callable[[Viewer, Request], Response]) -> Callable[..., object]:
        return page(functools.partial(handler, viewer))

    async def favicon(request: Request) -> Response:
        return PlainTextResponse("", status_code=404)

    def not_found_handler(request: Request, exc: Exception) -> Response:
        return viewer.not_found("no such page")

    routes = [
        Route("/", bound(pages.home)),
        Route("/run", bound(pages.provenance)),
        Route("/report/", bound(pages.report)),
        Route("/report/{path:path}", bound(pages.report_file)),
        Route("/samples", bound(sample_pages.samples)),
        Route("/sample", bound(sample_pages.sample)),
        Route("/pairs", bound(pairs.pairs)),
        Route("/image/{sha}", bound(pages.image)),
        Route("/favicon.ico", favicon),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(HostCheck, hosts=hosts)],
        exception_handlers={404: not_found_handler},
    )
    app.state.viewer = viewer
    return app
