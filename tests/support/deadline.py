"""A deadline for a test whose failure would be a hang (a FIFO opened with a blocking `open` waits forever):

    with within(5, "opening a FIFO planted as a blob"):
        ...

past the deadline, a timer signal raises `Overdue` in the main thread (a blocking `open` is interrupted by it), so
the test fails in seconds instead of holding the suite.
"""

from __future__ import annotations

from contextlib import AbstractContextManager


class Overdue(Exception):
    """The block was still running at its deadline."""


def within(seconds: float, what: str, overdue: type[BaseException] = Overdue) -> AbstractContextManager[None]:
    """Raise `overdue` (an `Overdue`, or a `BaseException` where the code under test passes by every `Exception`) if
    the block runs longer than `seconds` (a timer signal interrupts it: `signal_deadline`, the harness's own)."""
    from harness.models.facts.bounded_render import signal_deadline

    return signal_deadline(seconds, lambda: overdue(f"{what}: still running after {seconds} s"))
