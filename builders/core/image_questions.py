"""Asking a vision-language model one question about each of many images, for a build step that needs a model's
view of its images (LoCoVQA's entity lister asks "Please list at most 5 entities in this image").

The model backends live in the harness, a layer above the builders, which therefore never import them: this module
says what a builder needs (an `ImageAsker`), and the package that has the models provides it. The harness registers
its backends under the entry point group `mmlongeval.image_askers` (pyproject.toml); `installed_asker_factory`
finds it, and a caller (a test, a script) may hand a builder its own factory instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol

ENTRY_POINT_GROUP = "mmlongeval.image_askers"


@dataclass(frozen=True)
class ImageQuestion:
    """One image to ask about: the builder's key for it (answers come back in the questions' order), and its
    encoded bytes with their sha256 and size."""

    key: str
    sha256: str
    data: bytes
    width: int
    height: int


class ImageAnswer(Protocol):
    ok: bool  # False: no answer (`error` says why); one failed question never fails the others
    text: str | None
    error: str | None


class ImageAsker(Protocol):
    def identity(self) -> dict[str, Any]:
        """What decides the answers (model, checkpoint, settings), with every secret removed: recorded in the
        build's request."""

    def ask(
        self, questions: Sequence[ImageQuestion], query: str, max_new_tokens: int, task: str
    ) -> Sequence[ImageAnswer]:
        """One answer per question, in order; `task` names the asking step in the backend's messages."""

    def close(self) -> None:
        """Release the model."""


# (model or alias, its arguments as `key=value,...`, batch size) -> an asker; a model it cannot make is a
# ValueError whose message says why in one line.
AskerFactory = Callable[[str, str, int], ImageAsker]


def installed_asker_factory() -> AskerFactory | None:
    """The factory an installed package registers under `ENTRY_POINT_GROUP` (the first by name), or None."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name)
    return found[0].load() if found else None
