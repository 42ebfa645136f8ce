"""Where the viewer's pages run: on a few daemon threads of the viewer's own, awaited by the server's event loop.

A page reads files (a journal, a build's data) and may block on a slow disk. Starlette runs a plain function page on
anyio's worker threads, which the server's shutdown waits for and the interpreter joins at exit: one stuck read then
holds `harness view` past SIGTERM and Ctrl-C. Here the event loop stops waiting for a page when the server shuts down
(its task cancelled after `timeout_graceful_shutdown`), and a thread still inside one does not keep the process
alive.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import queue
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

T = TypeVar("T")


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


def _trim() -> Callable[[int], object] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


MALLOC_TRIM = _trim()


def hand_back() -> None:
    """What a page's array work freed (a million-row join, sort or mask), handed back to the system: Arrow's allocator
    and C's keep it per thread otherwise, and a viewer of two million-row journals held some 600 MB more than its
    indexes (bench/view_million.py)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if MALLOC_TRIM is not None:
        MALLOC_TRIM(0)
