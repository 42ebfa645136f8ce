"""Text token counters for the `text_tokens` column every row carries (the contract's vision tokens
are `builders.core.contract.image_tokens`).

A pluggable counter, named in the build manifest: `approx` is offline and needs no files;
`hf:<tokenizer.json or hub name>` counts with a `tokenizers.Tokenizer` (a hub name downloads it, which
needs network).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Protocol

from builders.core.errors import BuildError


class TextTokenCounter(Protocol):
    name: str  # recorded in the build manifest

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    """A rough offline stand-in for a Llama-2-style tokenizer (not calibrated against one: use
    `hf:` with the real tokenizer when the counts matter).

    Rule ("approx-v1"): a run of letters counts ceil(len / 6) tokens, every digit counts 1
    (Llama splits numbers into digits), every other non-space character counts 1, white space
    counts 0 (it merges into the next word).
    """

    name = "approx-v1"
    _PIECES = re.compile(r"[^\W\d_]+|\d|\S")
    # ASCII text (almost all of it): letter runs cut into pieces of at most 6 and every other non-space
    # character are exactly the rule's tokens, counted by the regex engine alone (a 128K-token prompt in
    # milliseconds, where the loop below takes a Python step per word).
    _ASCII_TOKENS = re.compile(r"[A-Za-z]{1,6}|[^A-Za-z\s]")

    def count(self, text: str) -> int:
        if text.isascii():
            return len(self._ASCII_TOKENS.findall(text))
        total = 0
        for piece in self._PIECES.findall(text):
            total += -(-len(piece) // 6) if piece[0].isalpha() else 1
        return total


class HfTokenCounter:
    """Counts `len(tokenizer.encode(text, add_special_tokens=False).ids)` with `tokenizers`."""

    def __init__(self, spec: str) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise BuildError(
                "--text-tokenizer hf:... needs the 'tokenizers' package (pip install tokenizers)"
            ) from None
        path = Path(spec)
        try:
            if path.is_file():
                self._tokenizer = Tokenizer.from_file(str(path))
            elif path.suffix == ".json" or path.is_dir():
                raise BuildError(f"tokenizer file not found: {spec} (expected a tokenizer.json file)")
            else:
                self._tokenizer = Tokenizer.from_pretrained(spec)
        except BuildError:
            raise
        except Exception as exc:  # tokenizers raises bare Exceptions for parse and download errors
            raise BuildError(f"cannot load tokenizer {spec!r}: {exc}") from None
        digest = hashlib.sha256(self._tokenizer.to_str().encode("utf-8")).hexdigest()[:16]
        label = path.name if path.is_file() else spec
        self.name = f"hf:{label}@{digest}"

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def make_text_counter(spec: str) -> TextTokenCounter:
    """`approx` or `hf:<tokenizer.json path | hub name>`."""
    if spec == "approx":
        return ApproxTokenCounter()
    if spec.startswith("hf:") and len(spec) > 3:
        return HfTokenCounter(spec[3:])
    raise BuildError(f"unknown text tokenizer {spec!r}: expected 'approx' or 'hf:<tokenizer.json path or hub name>'")
