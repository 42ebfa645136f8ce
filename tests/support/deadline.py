"""A deadline for a test whose failure would be a hang (a FIFO opened with a blocking `open` waits forever):

    with within(5, "opening a FIFO planted as a blob"):
        ...

past the deadline, a timer signal raises `Overdue` in the main thread (a blocking `open` is interrupted by it), so
the test fails in seconds instead of holding the suite.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Overdue(Exception):
    """The block was still running at its deadline."""


@contextmanager
def within(seconds: float, what: str, overdue: type[BaseException] = Overdue) -> Iterator[None]:
    """Raise `overdue` (an `Overdue`, or a `BaseException` where the code under test passes by every `Exception`) if
    the block runs longer than `seconds` (a timer signal interrupts it)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise overdue(f"{what}: still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
