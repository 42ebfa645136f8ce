"""A prompt's text counted by its provider's own tokenizer where a maintained one loads here: tiktoken for OpenAI's
models (issue 63, item 6: the rows' `text_tokens`, the build's tokenizer, read 10-12 % above o200k on text-heavy
rows). tiktoken downloads its encodings on first use, so it counts only where it is installed and its encoding loads
(cached, or the network reachable); else the rows' count stays, and the screen's rule says which counter was used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from harness.api import Request, TextPart

FALLBACK_ENCODING = "o200k_base"  # GPT-4o's and later models' encoding, for a name tiktoken does not know


class Encoding(Protocol):
    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


def openai_encoding(model: str) -> tuple[Encoding | None, str]:
    """tiktoken's encoding for `model` (its own table, else o200k_base), or None and why it could not be had."""
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]  # the openai extra
    except ImportError:
        return None, "tiktoken is not installed (pip install tiktoken counts OpenAI's text exactly)"
    try:
        try:
            return tiktoken.encoding_for_model(model), ""
        except KeyError:
            return tiktoken.get_encoding(FALLBACK_ENCODING), ""
    except Exception as err:  # a download refused offline, a damaged cache: the rows' count stays
        return None, f"tiktoken's encoding for {model} did not load ({type(err).__name__})"


def text_counter(encoding: Encoding) -> Callable[[Request], int]:
    """Each request's text as sent (every text part, images left to the family's rule) in `encoding`'s tokens."""

    def count(request: Request) -> int:
        parts = (p.text for m in request.as_sent for p in m.content if isinstance(p, TextPart))
        return sum(len(encoding.encode_ordinary(text)) for text in parts) + (
            len(encoding.encode_ordinary(request.assistant_prefix)) if request.assistant_prefix else 0
        )

    return count
