"""Where a row's context stands in its prompt, and the length its input is fitted to: what a model that fits a long
input by cutting the context at its end reads (a task's `fit_context` hook, `harness.running.task.requests`; the `hf`
backend's text-only path, `harness.models.backends.hf.text_only`, as a paper's official text-only wrapper cut it).

The offsets are characters of the user turn's text, each image as its `<image>` placeholder, as the task's
`doc_to_text` rendered it; `sha256` is the context's, so a prompt changed after the task located its context (an input
policy, a round trip) is refused, not cut in the wrong place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class FitContext:
    start: int  # the context's first character in the user turn's text
    end: int  # one past its last
    length: int  # the tokens the prompt and what it may generate are fitted to (the row's length label)
    sha256: str  # of the context's text

    @classmethod
    def located(cls, prompt: str, context: str, length: int) -> FitContext:
        """The context's place in `prompt` (its first occurrence); a ValueError where it is not there."""
        start = prompt.find(context)
        if start < 0 or not context:
            raise ValueError("fit_context: the context the hook gave is not in the prompt")
        return cls(start, start + len(context), length, digest(context))

    def context_of(self, text: str) -> str:
        """The context in `text`, the user turn as sent; a ValueError where it is no longer what the task located."""
        context = text[self.start : self.end]
        if self.end > len(text) or digest(context) != self.sha256:
            raise ValueError(
                "invalid_input: the prompt changed after the task located its context (fit_context): not cut"
            )
        return context


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
