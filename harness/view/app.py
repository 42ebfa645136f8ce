"""The viewer's web application (Starlette): its routes, each page run off the event loop on daemon threads of its
own (`DaemonThreads`), behind the Host check (`HostCheck`), with the static files of its pages. The viewer writes
nothing anywhere.

A page reads files (a journal, a build's data) and may block on a slow disk. Starlette runs a plain function page on
anyio's worker threads, which the server's shutdown waits for and the interpreter joins at exit: one stuck read then
holds `harness view` past SIGTERM and Ctrl-C. Here the event loop stops waiting for a page when the server shuts down
(its task cancelled after `timeout_graceful_shutdown`), and a thread still inside one does not keep the process
alive.

The Host names the viewer answers are those it was started for, so that a web page the user visits elsewhere cannot
read its pages by DNS rebinding (pointing a name of its own at 127.0.0.1: the browser then sends that name as the
request's `Host`, which no page of ours is served under). Answered: `127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`
and `--host`'s own `HOST:PORT`. Listening on every address (`--host 0.0.0.0` or `::`), also the machine's own name and
any IP address (`10.1.2.3:PORT`): an address in the `Host` header is the origin the browser holds, which no other
site's page can read across. Anything else, a missing or malformed header included, is refused with 421 (Misdirected
Request) before any page is read.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import queue
import socket
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.view import pages, pairs, sample_pages
from harness.view.samples.sample_index import hand_back
from harness.view.viewer import HERE, Viewer

T = TypeVar("T")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
EVERY_ADDRESS = ("0.0.0.0", "::", "")


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


class DaemonThreads(Executor):
    """At most `workers` daemon threads, started as calls arrive, running the calls in the order submitted."""

    def __init__(self, workers: int = 8) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._workers = workers
        self._threads: list[threading.Thread] = []
        self._unfinished = 0  # calls submitted and not yet returned, whether queued or running
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((future, functools.partial(fn, *args, **kwargs)))
        with self._lock:
            # Counted under the lock with the threads: a thread between taking a call and starting it is never
            # mistaken for an idle one, so a call never waits while fewer than `workers` threads run.
            self._unfinished += 1
            if self._unfinished > len(self._threads) and len(self._threads) < self._workers:
                thread = threading.Thread(target=self._work, name="harness-view-page", daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def _work(self) -> None:
        while True:
            future, call = self._jobs.get()
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(call())
            except BaseException as err:  # handed to the awaiting page, as a thread pool does
                future.set_exception(err)
            finally:
                with self._lock:
                    self._unfinished -= 1


PAGES = DaemonThreads()


def page(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """`handler` as an async endpoint that runs it on `PAGES`."""

    def run(request: Request) -> Response:
        try:
            return handler(request)
        finally:
            hand_back()

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        return await asyncio.get_running_loop().run_in_executor(PAGES, run, request)

    return endpoint


@dataclass(frozen=True)
class ServedHosts:
    """The names (lower case, IPv6 without brackets) and the port the server answers under."""

    names: frozenset[str]
    port: int
    any_address: bool = False  # bound to every address: any IP literal is answered too

    def allows(self, header: str | None) -> bool:
        parsed = split_host(header)
        if parsed is None:
            return False
        name, port = parsed
        if port != self.port:
            return False
        return name in self.names or (self.any_address and is_address(name))


def served_hosts(host: str, port: int) -> ServedHosts:
    """What a server listening on `host`:`port` answers (see the module's docstring)."""
    names = {*LOOPBACK_NAMES, host.strip("[]").lower()}
    any_address = host in EVERY_ADDRESS
    if any_address:
        names.add(socket.gethostname().lower())
    return ServedHosts(frozenset(names - {""}), port, any_address)


def split_host(header: str | None) -> tuple[str, int] | None:
    """(name, port) of a `Host` header (`name`, `name:port`, `[v6]:port`; port 80 when none), or None."""
    if not header or not header.isascii() or any(c.isspace() or c in "/@?#\\" for c in header):
        return None
    if header.startswith("["):
        name, bracket, rest = header[1:].partition("]")
        if not bracket or not is_address(name) or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else "80"
    else:
        name, colon, port_text = header.partition(":")
        if not colon:
            port_text = "80"
    if not name or not port_text.isdigit() or len(port_text) > 5 or not 0 < int(port_text) < 65536:
        return None
    return name.lower(), int(port_text)


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostCheck:
    """ASGI middleware: every request whose `Host` the server was not started for is refused (421)."""

    def __init__(self, app: ASGIApp, hosts: ServedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self.hosts.allows(Headers(scope=scope).get("host")):
            refusal = PlainTextResponse(
                "harness view: refused: the Host header names no address this server was started for\n",
                status_code=421,
                headers={"Cache-Control": "no-store"},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)
