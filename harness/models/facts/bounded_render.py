"""A checkpoint's chat template rendered within bounds of memory and output as well as time, for every kind of chat
a run sends.

A render in this process is stopped past its time bound only (`rendering_within`, a timer signal): a
template that writes a gigabyte in a few seconds, only where a turn holds an image, had allocated it before anything
could look, and the tokenizer then asked for eight (an abort; 50 MB ended in a traceback at 2.8 GB). So the first
render of each kind of chat a run sends (its turns' roles, each with text or images or both, continued or not) runs
in a forked process whose address space is bounded (`RLIMIT_AS`), within the same time; past a bound, the run stops
in one line naming the template, and the text the child sent back is the render used. Every later render, here, is
held to the same output bound before anything reads it: a template that writes past it only for some rows stops the
run in one line too.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from multiprocessing.connection import Connection
from types import FrameType
from typing import TypeVar

from harness.api import ImagePart, Message, TextPart
from harness.errors import UserError

RENDER_SECONDS: float = 10  # a chat template renders a bare user turn in milliseconds
RENDER_MOST = 1 << 20  # bytes a render of a bare user turn may write (some hundreds), and may allocate past its own


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


@contextlib.contextmanager
def rendering_within(what: str) -> Iterator[None]:
    """A render of a checkpoint's chat template in this process (one per sample: a fork each would cost more than the
    render) stopped past `RENDER_SECONDS`, in one line naming `what` (a `UserError`; see `signal_deadline`); a template
    that does not parse, or fails on the chat (its own `raise_exception`), is one such line too."""
    import jinja2  # transformers' template engine

    seconds = RENDER_SECONDS
    said = f"{what} was not rendered within {seconds} s (a chat template renders one in milliseconds)"
    with signal_deadline(seconds, lambda: UserError(said)):
        try:
            yield
        except jinja2.TemplateError as err:  # its message may quote the template: its first line, cut
            raise UserError(f"{what} could not be rendered: {(str(err).splitlines() or [''])[0][:200]}") from None


GROWTH = 4  # a render may write its chat's text this many times over, besides `RENDER_MOST`
MEMORY_PER_BYTE = 64  # what a render may allocate past what the process holds, per byte it may write


def output_most(chat: object) -> int:
    """The most a render of `chat` may write: its text (as JSON) `GROWTH` times over, and `RENDER_MOST` besides (a
    template frames each turn and image in some dozens of bytes)."""
    return GROWTH * len(json.dumps(chat, ensure_ascii=False, default=str)) + RENDER_MOST


def chat_kind(messages: Sequence[Message], continued: bool) -> Hashable:
    """What tells one kind of chat from another for a template: each turn's role and whether it holds text, images."""
    return continued, tuple(
        (m.role, any(isinstance(p, TextPart) for p in m.content), any(isinstance(p, ImagePart) for p in m.content))
        for m in messages
    )


Rendered = TypeVar("Rendered")


def _render_child(render: Callable[[], Rendered], most: int, size: Callable[[Rendered], int], out: Connection) -> None:
    """In the forked child: `render()` within `MEMORY_PER_BYTE * most` bytes of memory past what the process holds,
    sent back as ("text", it) within `most` characters (`size`), else ("bound", which); ("failed", None) where it
    raised."""
    with contextlib.suppress(OSError, ValueError):  # no /proc or no rlimit here: the time bound alone
        with open("/proc/self/statm") as statm:
            held = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (held + MEMORY_PER_BYTE * most, hard))
    answer: tuple[str, Rendered | str | None]
    try:
        text = render()
        answer = ("text", text) if size(text) <= most else ("bound", "output")
    except MemoryError:
        answer = ("bound", "memory")
    except Exception:
        answer = ("failed", None)
    out.send(answer)


def forked(
    render: Callable[[], Rendered], most: int, size: Callable[[Rendered], int]
) -> tuple[str, Rendered | str | None]:
    """`render()` in a forked child (`_render_child`), within `RENDER_SECONDS`: ("text", what it rendered),
    ("bound", "time" | "memory" | "output"), or ("failed", None) where it raised. The caller imports what the child
    runs first: an import in a forked child may wait on a lock another thread held."""
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_render_child, args=(render, most, size, writer), daemon=True)
    child.start()
    writer.close()
    try:
        answer = reader.recv() if reader.poll(RENDER_SECONDS) else ("bound", "time")
    except EOFError:  # the child ended without an answer (killed past its memory)
        answer = ("bound", "memory")
    finally:
        child.kill()
        child.join()
        reader.close()
    kind, value = answer
    return str(kind), value


class RenderBound(UserError):
    """A render past its bound of time, memory or output."""


class BoundedRender:
    """Renders of one chat template (`template`: which, in a message: "the checkpoint's chat template"), each
    bounded (see the module's docstring); the first of each kind of chat in a forked child."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._checked: set[Hashable] = set()

    def __call__(self, render: Callable[[], object], chat: object, kind: Hashable, what: str) -> str:
        """`render()` of `chat` (of `kind`, `chat_kind`), `what` naming it (its task and document) in a message."""
        most = output_most(chat)
        if kind not in self._checked:
            import transformers.utils.chat_template_utils  # noqa: F401 - imported here, not in the child (no import lock)

            answer = forked(lambda: str(render()), most, len)
            if answer[0] == "bound":
                raise RenderBound(self._past(str(answer[1]), most, what))
            self._checked.add(kind)
            if answer[0] == "text":
                return str(answer[1])
        with rendering_within(what):
            text = str(render())
        if len(text) > most:
            raise RenderBound(self._past("output", most, what))
        return text

    def _past(self, bound: str, most: int, what: str) -> str:
        limit = {
            "time": f"rendered within {RENDER_SECONDS} s",
            "memory": f"rendered within {MEMORY_PER_BYTE * most:,} bytes of memory",
            "output": f"rendered within {most:,} characters (its chat's {GROWTH} times over and {RENDER_MOST:,})",
        }[bound]
        return f"{what} was not {limit} by {self.template}, which writes some bytes around each turn and image"
