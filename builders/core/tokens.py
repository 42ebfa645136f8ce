"""Cross-modal token counts stored with every row (DESIGN.md, MMLongBench §3.2).

Vision: one token per 28 x 28 pixel block (14 x 14 patches, 2 x 2 merge), with the image first
resized by Qwen2-VL's `smart_resize` (factor 28): each side rounded to the nearest multiple of
28 (at least 28), the area clamped to [56*56, 28*28*16384] keeping the aspect ratio.

Text: a pluggable counter. `approx` is offline and needs no files; `hf:<tokenizer.json or hub
name>` counts with a `tokenizers.Tokenizer` (a hub name downloads it, which needs network).
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Protocol

from builders.core.errors import BuildError

PATCH_FACTOR = 28
MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 16384


def smart_resize(
    height: int,
    width: int,
    factor: int = PATCH_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2-VL's resize rule: the (height, width) a processor would feed the vision tower."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_tokens(width: int, height: int) -> int:
    """Vision tokens of one image under the 14x14-patch, 2x2-merge rule."""
    h_bar, w_bar = smart_resize(height, width)
    return (h_bar // PATCH_FACTOR) * (w_bar // PATCH_FACTOR)


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

    def count(self, text: str) -> int:
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
    raise BuildError(
        f"unknown text tokenizer {spec!r}: expected 'approx' or 'hf:<tokenizer.json path or hub name>'"
    )
