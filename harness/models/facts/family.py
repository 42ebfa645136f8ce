"""What a model family module declares (`FAMILY`, a `ModelFamily`), and the image-token rules several share.

A family is what is true of a kind of model whatever the benchmark: how many prompt tokens its processor makes of an
image of a given size (`ImageTokens`, one per variant: LLaVA-1.5, -NeXT and -OneVision count differently), the
`model_type` and architecture names that identify each variant in a checkpoint's config, the fragments of API model
names that stand in where there is no config (`api_names`: API models only), the prompt formats its official
wrappers built (`PromptStyle`s, with bundled templates as `.jinja` files beside the module) and its aliases.

An image-token rule restates the family's published image handling (patch size, tiling, tokens per tile, markers)
from the size alone; the result is an estimate and is always labelled as one. It is used where a model's own
processor cannot be asked: `--screen_only` for a checkpoint that is not available offline or for an API model, and
the `hf` backend for a processor that cannot count an image from its size alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builders.core.contract import smart_resize
from harness.api import Request
from harness.models.facts.alias import Alias
from harness.models.facts.prompt_style import PromptStyle
from harness.row_tokens import fit_within_pixels, known_sizes
from harness.row_tokens import prompt_tokens as rows_prompt_tokens

# (width, height, processor settings of the request: an alias's input policy, `image_detail`, ...) -> tokens
ImageRule = Callable[[int, int, Mapping[str, object]], int]


@dataclass(frozen=True)
class ImageTokens:
    """One variant of a family: its image-token rule and the names that identify it."""

    name: str
    image_tokens: ImageRule
    rule: str  # the rule in words, printed beside every estimate made with it
    model_types: tuple[str, ...] = ()  # transformers `model_type`s (a checkpoint's config.json)
    architectures: tuple[str, ...] = ()  # config.json `architectures`
    # Lower-case pieces of names, the fallback where there is no config: API model names (and, as before any config
    # was read, checkpoint names and model types that hold them).
    fragments: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelFamily:
    """A family module's declaration (`FAMILY`)."""

    name: str
    variants: tuple[ImageTokens, ...] = ()
    styles: tuple[PromptStyle, ...] = ()
    aliases: Mapping[str, Alias] = field(default_factory=dict)
    # Why no backend here loads it, for a family declared without aliases (identified and estimated, not run):
    # `harness models` prints it beside the family.
    unavailable: str = ""


def template(module_file: str, name: str) -> str:
    """A chat template bundled beside a family module (`<name>.jinja`), exactly as written (no newline added)."""
    return (Path(module_file).parent / f"{name}.jinja").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------- rules several families use


def number(value: object) -> int:
    """A processor setting as the integer it stands for (`max_patches=4`, or "4" from the command line)."""
    if isinstance(value, bool | int | float | str):
        return int(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def fixed(tokens: int) -> ImageRule:
    return lambda width, height, settings: tokens


def best_grid(width: int, height: int, grids: Iterable[tuple[int, int]]) -> tuple[int, int]:
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


def closest_tiling(width: int, height: int, tile: int, max_tiles: int) -> int:
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


def cells(cell: int, min_pixels: int, max_pixels: int) -> ImageRule:
    """Qwen2-VL-style dynamic resolution: the image resized to whole `cell`-px cells within the request's `min_pixels`
    and `max_pixels` (else these; `smart_resize`), a token per cell, + 2 markers (Qwen's `<|vision_start|>` ...
    `<|vision_end|>`)."""

    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        lo = number(settings.get("min_pixels") or min_pixels)
        hi = number(settings.get("max_pixels") or max_pixels)
        h_bar, w_bar = smart_resize(height, width, factor=cell, min_pixels=lo, max_pixels=hi)
        return (h_bar // cell) * (w_bar // cell) + 2

    return rule


def tiles(tile: int, per_tile: int, names: tuple[str, ...], default_max: int, markers: int) -> ImageRule:
    """Tiles of `tile` px (at most the request's setting of one of `names`, else `default_max`), `per_tile` tokens
    each, plus a thumbnail tile when there is more than one."""

    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        given = next((settings[name] for name in names if settings.get(name)), default_max)
        count = closest_tiling(width, height, tile, number(given))
        return per_tile * (count + (count > 1)) + markers

    return rule


def estimated_prompt_tokens(
    request: Request, family: ImageTokens | None, max_pixels: int | None, settings: Mapping[str, object] | None = None
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
