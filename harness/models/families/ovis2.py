"""Ovis2: its image tokens, its prompt as the official wrapper (MMLongBench's `vlm_model/ovis2.py`) built it, and the
aliases, through the transformers-native conversions (`thisisiron/Ovis2-<size>-hf`, made by transformers'
`convert_ovis2_weights_to_hf.py` from the AIDC-AI checkpoints the paper ran): the authors' checkpoints need remote code
that registers no image-text-to-text model, and vLLM's Ovis fixes `max_partition` at 9, not the official 4.

Image tokens, as transformers' Ovis2 processor makes them (`processing_ovis2.py`, `replace_image_token`; the image
processor's `crop_image_to_patches` with `get_min_tile_covering_grid`, `image_processing_pil_ovis2.py`), with the
settings the conversion gives the checkpoints (`create_image_processor`: `crop_to_patches=True`, 448-px tiles; the
class's `max_patches` 12 and `use_covering_area_grid`): the fewest tiles (at most `max_patches`) whose 448-px crops
cover more than 90% of the image, else the grid that covers the most; each image is `<IMG_START>`, 256 tokens of the
whole image, `<IMG_GRID>`, then, where there is more than one tile, 256 per tile with `<IMG_COL>` and `<IMG_ROW>`
between them, and `<IMG_END>`. The official wrapper's `max_partition = 4` is `max_patches = 4` (its rule below); its
prompt is `preprocess_inputs` on the query string with `<image>` in place, Qwen's system prompt and
`generation_preface ''` (no prefill)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.models.facts.alias import Alias, hf, wrapper
from harness.models.facts.family import ImageTokens, ModelFamily, number
from harness.models.facts.prompt_style import PromptStyle

TILE, PER_TILE, MAX_PATCHES, COVERED = 448, 256, 12, 0.9


def _covered(height: int, width: int, rows: int, cols: int) -> float:
    """The share of the image that `rows` x `cols` crops cover once each is scaled to fit a tile (its long side at
    most 448 px), as Ovis2's processor measures it."""
    row_height, col_width = height // rows, width // cols
    covered = 0.0
    for row in range(rows):
        for col in range(cols):
            w = (width if col == cols - 1 else (col + 1) * col_width) - col * col_width
            h = (height if row == rows - 1 else (row + 1) * row_height) - row * row_height
            long, short = max(w, h), float(min(w, h))
            if long > TILE:
                long, short = TILE, short / long * TILE
            covered += long * short
    return covered / (width * height)


def covering_tiles(width: int, height: int, max_patches: int) -> int:
    """How many tiles Ovis2's processor crops an image into: the fewest whose crops cover more than 90% of it (the
    better covering on a tie), else those that cover the most."""
    grids = sorted(
        ((a, b) for a in range(1, max_patches + 1) for b in range(1, max_patches + 1) if a * b <= max_patches),
        key=lambda grid: grid[0] * grid[1],
    )
    scored = [(a * b, _covered(height, width, a, b)) for a, b in grids]
    enough = [(tiles, share) for tiles, share in scored if share > COVERED]
    if enough:
        return min(enough, key=lambda found: (found[0], -found[1]))[0]
    return min(scored, key=lambda found: (-found[1], found[0]))[0]


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    most = number(settings.get("max_patches") or MAX_PATCHES)
    crops = settings.get("crop_to_patches", True) is not False and most > 1
    tiles = covering_tiles(width, height, most) if crops else 1
    # <IMG_START>, the whole image, <IMG_GRID>, <IMG_END>; each tile where there are several, a marker between two
    return PER_TILE + 3 + (tiles * PER_TILE + tiles - 1 if tiles > 1 else 0)


RULES = (
    wrapper(
        "official Ovis2 wrapper: max_partition = 4 (transformers' Ovis2 processor: crop_to_patches, max_patches 4)",
        processor_kwargs={"crop_to_patches": True, "max_patches": 4},
    ),
)


def _ovis2(size: str) -> Alias:
    return hf(
        f"thisisiron/Ovis2-{size}-hf",
        f"Ovis2 {size}, the transformers-native conversion of AIDC-AI/Ovis2-{size}",
        32768,
        RULES,
        prompt_style="ovis2",  # the query string with <image> in place, Qwen's system prompt, no prefill
    )


FAMILY = ModelFamily(
    "Ovis2",
    variants=(
        ImageTokens(
            "Ovis2",
            image_tokens,
            "256 tokens of the whole image + 256 per 448-px tile (the fewest, at most max_patches, default 12, that "
            "cover 90% of it) + markers",
            model_types=("ovis2",),
            architectures=("Ovis2ForConditionalGeneration",),
            fragments=("ovis2", "ovis-2"),
        ),
    ),
    styles=(PromptStyle("ovis2", content="string", prefill=False),),
    aliases={
        "ovis2-1b": _ovis2("1B"),
        "ovis2": _ovis2("2B"),
        "ovis2-4b": _ovis2("4B"),
        "ovis2-8b": _ovis2("8B"),
        "ovis2-16b": _ovis2("16B"),
        "ovis2-34b": _ovis2("34B"),
    },
)
