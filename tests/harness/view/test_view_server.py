"""How `harness view` runs its pages (`harness.view.app`): a page stuck in a read is given up when the server
shuts down, and the thread it is stuck on does not keep the process alive."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from harness.view.app import DaemonThreads, page


def test_a_page_stuck_in_a_read_is_given_up_when_the_server_shuts_down() -> None:
    release = threading.Event()
    stuck = page(lambda request: release.wait(60))

    async def cancel_after_it_started() -> float:
        task = asyncio.ensure_future(stuck(None))  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        task.cancel()  # what uvicorn does to the requests still running after its graceful shutdown
        started = time.monotonic()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    try:
        assert asyncio.run(cancel_after_it_started()) < 1.0
        threads = [t for t in threading.enumerate() if t.name == "harness-view-page"]
        assert threads and all(t.daemon for t in threads)  # the interpreter's exit does not wait for them
    finally:
        release.set()


def test_a_call_never_waits_for_a_thread_while_fewer_than_the_count_run() -> None:
    """A worker that has taken a call but not yet started it was once counted as idle, so the next call started no
    thread and waited behind it (on a quiet machine 1 pool in 30 left a third call queued with two threads)."""
    for _ in range(300):
        pool = DaemonThreads(workers=3)
        barrier = threading.Barrier(3, timeout=5)
        futures = [pool.submit(barrier.wait) for _ in range(3)]
        assert sorted(f.result(10) for f in futures) == [0, 1, 2]


def test_calls_run_side_by_side_up_to_the_thread_count() -> None:
    pool = DaemonThreads(workers=3)
    barrier = threading.Barrier(3, timeout=5)
    futures = [pool.submit(barrier.wait) for _ in range(3)]  # each returns only once all three run at once
    assert sorted(f.result(10) for f in futures) == [0, 1, 2]
    failing = pool.submit(int, "x")
    assert isinstance(failing.exception(10), ValueError)
