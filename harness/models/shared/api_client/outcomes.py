"""One attempt at an API call (a backend's own: its wire format, its SDK) ends in one of three ways: a `Response` (an
answer, or this sample's own error: a refusal, a malformed body, a 4xx about this request), a `Retry` (429, 5xx, a
timeout, a dropped connection: tried again), or a `Stop` (401/403/404, a server never reached: every sample's problem,
so the rest of the batch is not sent and `calls.ApiModel.stream` raises `BackendFatalError` carrying what did come
back, which the runner keeps). Here: those outcomes, and what a failure before an HTTP answer, or in an SDK, means."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from harness.api import Response
from harness.models.shared.api_client.deadline import STACKS, BadEncoding, BodyTooLarge


class Closing(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class Retry:
    """An attempt to try again: why, how long the server asked us to wait, whether the server was never reached."""

    reason: str
    wait: float | None = None
    unreachable: bool = False


@dataclass(frozen=True)
class Stop:
    """An attempt whose failure concerns every sample: the run stops (`fatal`), this sample records `error`."""

    fatal: str
    error: str


Outcome = Response | Retry | Stop


def _causes(err: BaseException) -> Iterator[BaseException]:
    """The error and what it wraps (an SDK wraps the HTTP stack's errors in its own)."""
    seen = 0
    current: BaseException | None = err
    while current is not None and seen < 8:
        yield current
        current = current.__cause__ or current.__context__
        seen += 1


def _stack_classes(name: str) -> tuple[type[BaseException], ...]:
    """`name` (an exception class) of each HTTP stack that is imported."""
    import sys

    return tuple(getattr(sys.modules[m], name) for m in STACKS if m in sys.modules)


def transport_outcome(err: BaseException, timeout: float) -> Outcome | None:
    """What a failure before an HTTP answer means (any HTTP stack, wrapped in an SDK's error or not); None: not a
    transport failure (a bug, raised on)."""
    for cause in _causes(err):
        if isinstance(cause, BodyTooLarge | BadEncoding):
            return Response(text=None, error=f"malformed_response: {cause}; not read, not cached")
        if isinstance(cause, _stack_classes("TimeoutException")):
            return Retry(f"timeout after {timeout:g}s ({type(cause).__name__})")
        if isinstance(cause, _stack_classes("TransportError")):
            unreachable = isinstance(cause, _stack_classes("ConnectError"))
            return Retry(f"connection error: {type(cause).__name__}: {cause}", unreachable=unreachable)
    return None


def sdk_outcome(err: BaseException, timeout: float) -> Outcome | None:
    """What an SDK's failure means: a transport failure, or an answer the SDK could not read (not JSON, not the
    shape it expects: a `ValueError`, pydantic's included); None: anything else (a bug, raised on)."""
    outcome = transport_outcome(err, timeout)
    if outcome is None and isinstance(err, ValueError | KeyError):
        return Response(text=None, error=f"malformed_response: the answer does not read ({type(err).__name__})")
    return outcome
