"""Per-family image token estimates: how many prompt tokens a model family makes of one image of a given size.

Used where a model's own processor cannot be asked: `--screen_only` for a checkpoint that is not available
offline or for an API model, and the `hf` backend for a processor that cannot count an image from its size alone.
Each rule restates its family's published image handling (patch size, tiling, tokens per tile, markers) from the
size alone; the result is an estimate and is always labelled as one. A family is found by a fragment of the
checkpoint's (or API model's) name, or by its transformers `model_type`; the aliases' checkpoints all have one
(`tests/harness/running/test_screen_only.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from builders.core.contract import MAX_PIXELS, MIN_PIXELS, TOKEN_RULE
from builders.core.contract import image_tokens as qwen_image_tokens
from harness.api import Request
from harness.row_tokens import fit_within_pixels, known_sizes
from harness.row_tokens import prompt_tokens as rows_prompt_tokens

# (width, height, processor settings of the request: an alias's input policy, `image_detail`, ...) -> tokens
ImageRule = Callable[[int, int, Mapping[str, Any]], int]


@dataclass(frozen=True)
class Family:
    name: str
    fragments: tuple[str, ...]  # lower-case pieces of checkpoint names or transformers model types
    image_tokens: ImageRule
    rule: str  # the rule in words, printed beside every estimate made with it


def _fixed(tokens: int) -> ImageRule:
    return lambda width, height, settings: tokens


def _qwen(width: int, height: int, settings: Mapping[str, Any]) -> int:
    lo, hi = int(settings.get("min_pixels") or MIN_PIXELS), int(settings.get("max_pixels") or MAX_PIXELS)
    return qwen_image_tokens(width, height, min_pixels=lo, max_pixels=hi) + 2  # <|vision_start|> ... <|vision_end|>


def _best_grid(width: int, height: int, grids: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """The (rows, cols) canvas, in tiles, that keeps the most of the image when it is scaled to fit (then the
    least padding): how the AnyRes processors pick a resolution."""
    best, kept_best, waste_best = (1, 1), -1, math.inf
    for rows, cols in grids:
        scale = min(cols / width, rows / height)
        kept = min(int(width * scale) * int(height * scale), width * height)
        waste = rows * cols - kept
        if kept > kept_best or (kept == kept_best and waste < waste_best):
            best, kept_best, waste_best = (rows, cols), kept, waste
    return best


def _anyres(
    tile: int, side: int, grids: tuple[tuple[int, int], ...], base: int, max_tiles: int | None = None
) -> ImageRule:
    """LLaVA-NeXT/OneVision: a base view of `side`x`side` features, plus the image on the chosen canvas of tiles
    (`side` features per tile side) without its padding, plus one newline feature per row; OneVision scales
    that part down when it exceeds `max_tiles` tiles."""

    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        rows, cols = _best_grid(width, height, ((r * tile, c * tile) for r, c in grids))
        rows, cols = rows // tile * side, cols // tile * side
        if width / height > cols / rows:  # wider than the canvas: padded above and below
            rows -= 2 * ((rows - int(round(height * cols / width, 7))) // 2)
        else:
            cols -= 2 * ((cols - int(round(width * rows / height, 7))) // 2)
        features, newlines = rows * cols, rows
        ratio = math.sqrt(rows * cols / (max_tiles * side * side)) if max_tiles else 0.0
        if ratio > 1.1:
            features, newlines = int(rows // ratio) * int(cols // ratio), int(rows // ratio)
        return base + features + newlines

    return rule


def _closest_tiling(width: int, height: int, tile: int, max_tiles: int) -> int:
    """InternVL-style dynamic tiling: the grid of at most `max_tiles` tiles whose shape is closest to the image's
    (a larger grid on a tie, when the image would fill more than half of it); its number of tiles."""
    aspect = width / height
    grids = sorted(
        {
            (c, r)
            for n in range(1, max_tiles + 1)
            for c in range(1, n + 1)
            for r in range(1, n + 1)
            if c * r <= max_tiles
        },
        key=lambda g: g[0] * g[1],
    )
    best, best_diff = (1, 1), math.inf
    for cols, rows in grids:
        diff = abs(aspect - cols / rows)
        if diff < best_diff or (diff == best_diff and width * height > 0.5 * tile * tile * cols * rows):
            best, best_diff = (cols, rows), diff
    return best[0] * best[1]


def _tiles(tile: int, per_tile: int, names: tuple[str, ...], default_max: int, markers: int) -> ImageRule:
    """Tiles of `tile` px (at most the request's setting of one of `names`, else `default_max`), `per_tile` tokens
    each, plus a thumbnail tile when there is more than one."""

    def rule(width: int, height: int, settings: Mapping[str, Any]) -> int:
        given = next((settings[name] for name in names if settings.get(name)), default_max)
        tiles = _closest_tiling(width, height, tile, int(given))
        return per_tile * (tiles + (tiles > 1)) + markers

    return rule


def _idefics2(split_by_default: bool) -> ImageRule:
    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        crops = 5 if settings.get("do_image_splitting", split_by_default) else 1  # four quarters and the whole image
        return crops * (64 + 1) + 1  # each crop: a <fake_token_around_image> and 64 perceiver tokens; one closes

    return rule


def _idefics3(width: int, height: int, settings: Mapping[str, object]) -> int:
    """The longest side scaled to 1,456 px (unless do_resize is off; never above it), cut into 364-px tiles of
    169 tokens each plus a global view, with row and tile markers."""
    scale = 1456 / max(width, height)
    if settings.get("do_resize", True) is False:
        scale = min(scale, 1.0)
    rows, cols = math.ceil(height * scale / 364), math.ceil(width * scale / 364)
    if settings.get("do_image_splitting", True) is False or rows * cols == 1:
        return 169 + 3
    return 169 + 3 + rows * (cols * (169 + 2) + 1)


def _pixtral(width: int, height: int, settings: Mapping[str, object]) -> int:
    scale = min(1.0, 1024 / max(width, height))
    rows, cols = math.ceil(height * scale / 16), math.ceil(width * scale / 16)
    return rows * (cols + 1)  # a break token after each row of 16-px patches (the last one ends the image)


def _phi3(width: int, height: int, settings: Mapping[str, Any]) -> int:
    """Phi-3/3.5-vision HD transform: the image scaled to a grid of at most `num_crops` 336-px crops, 144 tokens
    per crop and for the global view, 12 newline tokens per row."""
    crops = int(settings.get("num_crops") or 4)
    long, short = max(width, height), min(width, height)
    scale = 1
    while (scale + 1) * math.ceil((scale + 1) * short / long) <= crops:
        scale += 1
    rows = max(1, math.ceil(scale * short / long))
    return (scale * rows + 1) * 144 + 1 + (rows + 1) * 12


def _phi4(width: int, height: int, settings: Mapping[str, Any]) -> int:
    """Phi-4-multimodal dynamic HD: at most `dynamic_hd` 448-px crops of 256 tokens each, a global view, and a
    newline token per row of features."""
    crops = _closest_tiling(width, height, 448, int(settings.get("dynamic_hd") or 36))
    return 256 * (crops + 1) + 16 * (int(math.isqrt(crops)) + 1) + 1


def _gpt4o(width: int, height: int, settings: Mapping[str, object]) -> int:
    """OpenAI's published rule: 85 tokens at detail low; otherwise the image fitted within 2,048 px, its shorter
    side brought down to 768 px, and 170 tokens per 512-px tile on top of the 85."""
    if settings.get("image_detail") == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    if min(width, height) * scale > 768:
        scale = 768 / min(width, height)
    return 85 + 170 * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def _claude(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Anthropic's published rule: the image scaled to at most 1,568 px a side and about 1.15 megapixels, then one
    token per 750 px."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return math.ceil(int(width * scale) * int(height * scale) / 750)


def _gemini(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Google's published rule for Gemini 2: 258 tokens for an image at most 384 px a side, else 258 per 768-px
    tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


LLAVA_NEXT_GRIDS = ((1, 2), (2, 1), (2, 2), (3, 1), (1, 3))  # (rows, cols) of 336-px tiles
ONEVISION_GRIDS = tuple((r, c) for r in range(1, 7) for c in range(1, 7))  # of 384-px tiles, up to 6x6

# First match wins: the more specific fragments come first.
FAMILIES: tuple[Family, ...] = (
    Family(
        "Qwen2-VL",
        ("qwen2-vl", "qwen2.5-vl", "qwen2_vl", "qwen2_5_vl"),
        _qwen,
        f"dynamic resolution ({TOKEN_RULE}, the rows' own rule) + 2 markers per image",
    ),
    Family(
        "LLaVA-OneVision",
        ("llava-onevision", "llava_onevision"),
        _anyres(384, 27, ONEVISION_GRIDS, 729, 9),
        "AnyRes, 729 tokens of the whole image + up to 9 tiles' worth of 729 + a newline per row",
    ),
    Family(
        "LLaVA-NeXT",
        ("llava-next", "llava-v1.6", "llava_next"),
        _anyres(336, 24, LLAVA_NEXT_GRIDS, 576),
        "AnyRes, 576 tokens of the whole image + up to 4 tiles of 576, unpadded, + a newline per row",
    ),
    Family("Pixtral", ("pixtral",), _pixtral, "one token per 16-px patch at most 1,024 px a side, + one per row"),
    Family(
        "LLaVA-1.5",
        ("llava-1.5", "llava-v1.5", "bakllava", "llava"),
        _fixed(576),
        "576 tokens per image (336 px, 14-px patches)",
    ),
    Family(
        "Idefics3",
        ("idefics3",),
        _idefics3,
        "169 tokens per 364-px tile of the image at 1,456 px + a global view + markers",
    ),
    Family(
        "Mantis-Idefics2",
        ("mantis-8b-idefics2",),
        _idefics2(False),
        "64 tokens per crop, one crop (its processor does not split images), + markers",
    ),
    Family("Idefics2", ("idefics2",), _idefics2(True), "64 tokens per crop, 5 crops with image splitting, + markers"),
    Family(
        "InternVL",
        ("internvl",),
        _tiles(448, 256, ("max_patches", "max_dynamic_patch"), 12, 2),
        "256 tokens per 448-px tile (at most max_patches, vLLM's max_dynamic_patch, default 12) + a thumbnail tile "
        "+ markers",
    ),
    Family(
        "Ovis2",
        ("ovis2", "ovis-2"),
        _tiles(448, 256, ("max_patches",), 9, 2),
        "256 tokens per 448-px tile (at most max_patches, default 9) + a thumbnail tile + markers",
    ),
    Family("Gemma 3", ("gemma-3", "gemma3"), _fixed(256 + 4), "256 tokens per image + 4 markers"),
    Family(
        "Phi-3.5-vision",
        ("phi-3.5-vision", "phi-3-vision", "phi3_v"),
        _phi3,
        "144 tokens per 336-px crop (at most num_crops, default 4) + a global view + newlines",
    ),
    Family(
        "Phi-4-multimodal",
        ("phi-4-multimodal", "phi4_multimodal", "phi4mm"),
        _phi4,
        "256 tokens per 448-px crop (at most dynamic_hd, default 36) + a global view + newlines",
    ),
    Family(
        "GPT-4o",
        ("gpt-4o", "gpt-4.1", "chatgpt-4o", "gpt-4-turbo"),
        _gpt4o,
        "OpenAI's published rule, 85 tokens + 170 per 512-px tile (85 in all at detail low)",
    ),
    Family("Claude", ("claude",), _claude, "Anthropic's published rule, width x height / 750 at most 1,568 px a side"),
    Family(
        "Gemini", ("gemini",), _gemini, "Google's published rule, 258 tokens per image, or per 768-px tile past 384 px"
    ),
)


def family_of(*names: str | None) -> Family | None:
    """The family of the first name (a transformers model type, a checkpoint or API model name) that has one."""
    for name in names:
        lowered = (name or "").lower()
        for family in FAMILIES:
            if lowered and any(fragment in lowered for fragment in family.fragments):
                return family
    return None


def estimated_prompt_tokens(
    request: Request, family: Family | None, max_pixels: int | None, settings: Mapping[str, object] | None = None
) -> int:
    """A request by its family's rule: the rows' text tokens (the build's tokenizer, no chat template) + each image
    at the size it is scaled to (`max_pixels`), with the request's processor settings over `settings`; the rows'
    own rule where there is no family or an image's size is unknown."""
    known = known_sizes(request.images)
    if family is None or known is None:
        return rows_prompt_tokens(request, max_pixels)
    given = {**(settings or {}), **dict(request.processor_kwargs)}
    sizes = [fit_within_pixels(width, height, max_pixels) for width, height in known]
    return request.text_tokens + sum(family.image_tokens(width, height, given) for width, height in sizes)
