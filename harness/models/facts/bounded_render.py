"""A checkpoint's chat template rendered within bounds of time, memory and output, every render a run makes.

A template that writes a gigabyte in a few seconds, only where a turn holds an image, had allocated it before anything
could look, and the tokenizer then asked for eight (an abort; 50 MB ended in a traceback at 2.8 GB); one that wrote
gigabytes only for a later row passed when the first render of each kind of chat alone was bounded in memory, in a
forked process (6.7 GB before the line; issue 106). Every render now runs in this process (a fork each would cost
more than the render) within `RENDER_SECONDS` (a timer signal), within an address space of what the process holds
and what the render may allocate (`address_space_within`: `RLIMIT_AS`, set for the render and put back after), and
is held to its output bound before anything reads it (`output_most`): past a bound, the run stops in one line naming
the template, the task and the document. A template that reads another (`{% include %}`, `{% import %}`,
`{% from %}`, `{% extends %}`; transformers renders one with no loader) is refused as it is read (`read_alone`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from harness.errors import UserError

RENDER_SECONDS: float = 10  # a chat template renders a bare user turn in milliseconds
RENDER_MOST = 1 << 20  # bytes a render of a bare user turn may write (some hundreds), and may allocate past its own
READING_TAGS = ("include", "import", "from", "extends")  # the statements that read another template (a loader's)


@contextlib.contextmanager
def signal_deadline(seconds: float, expired: Callable[[], BaseException]) -> Iterator[None]:
    """The block stopped past `seconds` by a timer signal, raising `expired()`. Only the main thread takes the
    signal: elsewhere, or under a sooner timer of the caller's, the block runs unbounded; a later one is kept."""
    previous = signal.getitimer(signal.ITIMER_REAL)[0]
    if threading.current_thread() is not threading.main_thread() or 0 < previous <= seconds:
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise expired()

    handler = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, handler)
        if previous:  # the caller's timer, with what was left of it
            signal.setitimer(signal.ITIMER_REAL, max(previous - (time.monotonic() - started), 1e-3))


GROWTH = 4  # a render may write its chat's text this many times over, besides `RENDER_MOST`
MEMORY_PER_BYTE = 64  # what a render may allocate past what the process holds, per byte it may write


def output_most(chat: object) -> int:
    """The most a render of `chat` may write: its text (as JSON) `GROWTH` times over, and `RENDER_MOST` besides (a
    template frames each turn and image in some dozens of bytes)."""
    return GROWTH * len(json.dumps(chat, ensure_ascii=False, default=str)) + RENDER_MOST


@functools.lru_cache(maxsize=1)
def _statm(pid: int) -> int:
    """A descriptor of process `pid`'s /proc statm, kept open: read again at offset 0 for each render (a tenth of an
    open's cost); a forked child opens its own."""
    return os.open(f"/proc/{pid}/statm", os.O_RDONLY)


def _address_space() -> int | None:
    """The bytes of address space this process holds (its statm's size); None where it cannot tell."""
    try:
        return int(os.pread(_statm(os.getpid()), 64, 0).split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def address_space_within(more: int) -> Iterator[None]:
    """The block run with this process's address space bounded (`RLIMIT_AS`) at what it holds and `more` bytes, so
    that an allocation past it fails (a `MemoryError`) instead of growing; the limit before it is put back after. The
    limit is the process's, its threads' too: a render takes milliseconds, between the engine's calls, not beside
    them. Without /proc or a limit to set (not Linux), the block runs unbounded; a lower limit in place is kept."""
    held = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bound = None if held is None else held + more
    for limit in (soft, hard):
        if bound is not None and limit != resource.RLIM_INFINITY:
            bound = min(bound, limit)
    try:
        if bound is not None and bound != soft:
            resource.setrlimit(resource.RLIMIT_AS, (bound, hard))
    except (OSError, ValueError):
        bound = None
    try:
        yield
    finally:
        if bound is not None and bound != soft:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class ReadsAnotherTemplate(UserError):
    """A chat template that reads another (`read_alone`)."""


def read_alone(template: str, name: str) -> None:
    """A `ReadsAnotherTemplate` naming the template (`name`), the statement and its line where `template` reads another
    (`READING_TAGS`): transformers renders a chat template with no loader, so there is nothing it could read (it
    failed as a `TypeError` as it rendered). A template that does not lex is left to its render to say so."""
    import jinja2  # transformers' template engine

    try:
        lexed = jinja2.Environment().lex(template)  # noqa: S701 - lexed, never rendered
        tokens = [token for token in lexed if token[1] != "whitespace"]
    except jinja2.TemplateError:
        return
    for (line, kind, _), (_, next_kind, value) in zip(tokens, tokens[1:], strict=False):
        if kind == "block_begin" and next_kind == "name" and value in READING_TAGS:
            raise ReadsAnotherTemplate(
                f"{name} uses {{% {value} %}} (line {line}), which reads another template: a chat template is rendered "
                "alone, with no templates beside it (give the whole template in one file)"
            )


class RenderBound(UserError):
    """A render past its bound of time, memory or output."""


def _past(what: str, template: str, bound: str, most: int) -> str:
    if bound == "time":
        return f"{what} was not rendered within {RENDER_SECONDS} s by {template} (it renders one in milliseconds)"
    limit = {
        "memory": f"rendered within {MEMORY_PER_BYTE * most:,} bytes of memory",
        "output": f"rendered within {most:,} characters (its chat's {GROWTH} times over and {RENDER_MOST:,})",
    }[bound]
    return f"{what} was not {limit} by {template}, which writes some bytes around each turn and image"


@contextlib.contextmanager
def rendering_within(what: str, template: str, most: int) -> Iterator[None]:
    """A render of `template` (which, in a message: "the chat template of the checkpoint") in this process, within
    `RENDER_SECONDS` (`signal_deadline`) and `MEMORY_PER_BYTE * most` bytes of memory past what the process holds
    (`address_space_within`): past either, a `RenderBound` in one line naming `what` and `template`; a template that
    does not parse, or fails on the chat (its own `raise_exception`), is one such line too (a `UserError`)."""
    import jinja2  # transformers' template engine

    try:  # the timer stopped before the address space is given back
        with address_space_within(MEMORY_PER_BYTE * most):
            with signal_deadline(RENDER_SECONDS, lambda: RenderBound(_past(what, template, "time", most))):
                yield
    except MemoryError:  # past the bound, or the process's own limit: nothing kept of what it allocated
        raise RenderBound(_past(what, template, "memory", most)) from None
    except jinja2.TemplateError as err:  # its message may quote the template: its first line, cut
        raise UserError(f"{what} could not be rendered: {(str(err).splitlines() or [''])[0][:200]}") from None


class BoundedRender:
    """Renders of one chat template (`template`: which, in a message: "the chat template of the checkpoint"), each
    bounded in time, memory and output (see the module's docstring); its `text`, where given, refused at once where it
    reads another template (`read_alone`, the message naming `owner`, its checkpoint)."""

    def __init__(self, template: str, text: str | None = None, owner: str = "") -> None:
        self.template = template
        if text is not None:
            read_alone(text, f"{owner}: {template}")

    def __call__(self, render: Callable[[], object], chat: object, what: str) -> str:
        """`render()` of `chat`, `what` naming it (its task and document) in a message."""
        most = output_most(chat)
        with rendering_within(what, self.template, most):
            text = str(render())
        if len(text) > most:
            raise RenderBound(_past(what, self.template, "output", most))
        return text
