"""A checkpoint's chat template rendered within bounds of memory and output as well as time, for every kind of chat
a run sends.

A render in this process is stopped past its time bound only (`reasoning.rendering_within`, a timer signal): a
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
from collections.abc import Callable, Hashable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from harness.api import ImagePart, Message, TextPart
from harness.errors import UserError
from harness.models.facts import reasoning

GROWTH = 4  # a render may write its chat's text this many times over, besides `reasoning.RENDER_MOST`
MEMORY_PER_BYTE = 64  # what a render may allocate past what the process holds, per byte it may write


def output_most(chat: object) -> int:
    """The most a render of `chat` may write: its text (as JSON) `GROWTH` times over, and `RENDER_MOST` besides (a
    template frames each turn and image in some dozens of bytes)."""
    return GROWTH * len(json.dumps(chat, ensure_ascii=False, default=str)) + reasoning.RENDER_MOST


def chat_kind(messages: Sequence[Message], continued: bool) -> Hashable:
    """What tells one kind of chat from another for a template: each turn's role and whether it holds text, images."""
    return continued, tuple(
        (m.role, any(isinstance(p, TextPart) for p in m.content), any(isinstance(p, ImagePart) for p in m.content))
        for m in messages
    )


def _render_child(render: Callable[[], Any], most: int, size: Callable[[Any], int], out: Connection) -> None:
    """In the forked child: `render()` within `MEMORY_PER_BYTE * most` bytes of memory past what the process holds,
    sent back as ("text", it) within `most` characters (`size`), else ("bound", which); ("failed",) where it
    raised."""
    with contextlib.suppress(OSError, ValueError):  # no /proc or no rlimit here: the time bound alone
        with open("/proc/self/statm") as statm:
            held = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (held + MEMORY_PER_BYTE * most, hard))
    answer: tuple[Any, ...]
    try:
        text = render()
        answer = ("text", text) if size(text) <= most else ("bound", "output")
    except MemoryError:
        answer = ("bound", "memory")
    except Exception:
        answer = ("failed",)
    out.send(answer)


def forked(render: Callable[[], Any], most: int, size: Callable[[Any], int] = len) -> tuple[Any, ...]:
    """`render()` in a forked child (`_render_child`), within `reasoning.RENDER_SECONDS`: ("text", what it rendered),
    ("bound", "time" | "memory" | "output"), or ("failed",) where it raised. What the child runs is imported here
    first (an import in a forked child may wait on a lock another thread held)."""
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_render_child, args=(render, most, size, writer), daemon=True)
    child.start()
    writer.close()
    try:
        answer = reader.recv() if reader.poll(reasoning.RENDER_SECONDS) else ("bound", "time")
    except EOFError:  # the child ended without an answer (killed past its memory)
        answer = ("bound", "memory")
    finally:
        child.kill()
        child.join()
        reader.close()
    return tuple(answer)


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

            answer = forked(lambda: str(render()), most)
            if answer[0] == "bound":
                raise RenderBound(self._past(answer[1], most, what))
            self._checked.add(kind)
            if answer[0] == "text":
                return str(answer[1])
        with reasoning.rendering_within(what):
            text = str(render())
        if len(text) > most:
            raise RenderBound(self._past("output", most, what))
        return text

    def _past(self, bound: str, most: int, what: str) -> str:
        limit = {
            "time": f"rendered within {reasoning.RENDER_SECONDS} s",
            "memory": f"rendered within {MEMORY_PER_BYTE * most:,} bytes of memory",
            "output": f"rendered within {most:,} characters (its chat's {GROWTH} times over and {reasoning.RENDER_MOST:,})",
        }[bound]
        return f"{what} was not {limit} by {self.template}, which writes some bytes around each turn and image"
