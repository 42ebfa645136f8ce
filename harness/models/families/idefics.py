"""Idefics2 (and its chatty and Mantis fine-tunes) and Idefics3: their image tokens (Idefics2's perceiver, 64 per
crop, five crops when it splits; Mantis's processor does not split; Idefics3's 364-px tiles of the image at 1,456
px, or at its own size with `do_resize` off, as transformers' `Idefics3ImageProcessor` cuts them, with the markers
`Idefics3Processor` writes around them), the chat as the official wrapper (MMLongBench's `vlm_model/idefics.py`)
builds it (typed parts, the prefix a text part), and the aliases. Image splitting is the processor's default (on for
Idefics2 and Idefics3, off for Mantis); Idefics3's wrapper loads its processor with `do_resize=False` at every length."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import hf, wrapper
from harness.models.facts.family import ImageRule, ImageTokens, ModelFamily
from harness.models.facts.prompt_style import PromptStyle


def idefics2(split_by_default: bool) -> ImageRule:
    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        crops = 5 if settings.get("do_image_splitting", split_by_default) else 1  # four quarters and the whole image
        return crops * (64 + 1) + 1  # each crop: a <fake_token_around_image> and 64 perceiver tokens; one closes

    return rule


TILE, PER_TILE, LONGEST, MOST = 364, 169, 1456, 4096  # Idefics3ImageProcessor's max_image_size, size, MAX_IMAGE_SIZE
TAGGED = 6  # the tokenizer holds <row_R_col_C> for R, C up to 6 (`Idefics3Processor.row_col_ids`)
# A tag beyond them is text: the pieces Llama 3's pre-tokenizer splits `<row_7_col_1>` into ("<row", "_", "7", "_col",
# "_", "1", ">"), one token each at least; an estimate, named (the checkpoint's tokenizer, where present, counts it)
UNTAGGED = 7


def _longest_to(height: int, width: int, longest: int) -> tuple[int, int]:
    """The size Idefics3's processor resizes an image to (`do_resize`): its longest side `longest`, the other kept in
    proportion, rounded down and then up to even, and the whole within 4,096 px."""
    aspect = width / height
    if width >= height:
        width, height = longest, int(longest / aspect)
        height += height % 2
    else:
        height, width = longest, int(longest * aspect)
        width += width % 2
    height, width = max(height, 1), max(width, 1)
    if max(height, width) > MOST:
        aspect = width / height
        height, width = (int(MOST / aspect), MOST) if width >= height else (MOST, int(MOST * aspect))
    return height, width


def idefics3_grid(width: int, height: int, settings: Mapping[str, object]) -> tuple[int, int]:
    """(rows, cols) of the 364-px tiles Idefics3's processor cuts an image into, (0, 0) where it is kept whole: the
    image at 1,456 px on its longest side (unless `do_resize` is off: at its own size), its longest side rounded up to
    tiles, the other scaled with it and rounded up (`resize_for_vision_encoder`), then split where it is over a tile."""
    if settings.get("do_image_splitting", True) is False:
        return 0, 0
    if settings.get("do_resize", True) is not False:
        height, width = _longest_to(height, width, LONGEST)
    aspect = width / height
    if width >= height:
        cols = math.ceil(width / TILE)
        rows = math.ceil(int(cols * TILE / aspect) / TILE)
    else:
        rows = math.ceil(height / TILE)
        cols = math.ceil(int(rows * TILE * aspect) / TILE)
    return (rows, cols) if rows > 1 or cols > 1 else (0, 0)


def idefics3_tokens(rows: int, cols: int, tag: int = UNTAGGED) -> int:
    """The tokens of an image cut into `rows` x `cols` tiles: each tile `<fake_token_around_image>`, its
    `<row_R_col_C>` tag (`tag` tokens where the tokenizer does not hold it), 169 image tokens; a newline after each
    row; then the global view, `<fake_token_around_image><global-img>`, 169, `<fake_token_around_image>` (its newline
    before it one token with the last row's, `\\n\\n` in Llama 3's vocabulary)."""
    tags = sum(1 if r <= TAGGED and c <= TAGGED else tag for r in range(1, rows + 1) for c in range(1, cols + 1))
    return PER_TILE + 3 + rows * cols * (PER_TILE + 1) + tags + rows


def idefics3(width: int, height: int, settings: Mapping[str, object]) -> int:
    return idefics3_tokens(*idefics3_grid(width, height, settings))


IDEFICS3_RULES = (
    wrapper(
        "official Idefics3 wrapper: processor do_resize=False (no upscaling to 1456 px)",
        processor_kwargs={"do_resize": False},
    ),
)

FAMILY = ModelFamily(
    "Idefics",
    variants=(
        ImageTokens(
            "Idefics3",
            idefics3,
            "169 tokens per 364-px tile of the image at 1,456 px (at its own size with do_resize off) + a global view + "
            "markers",
            model_types=("idefics3",),
            architectures=("Idefics3ForConditionalGeneration",),
            fragments=("idefics3",),
        ),
        ImageTokens(  # its config says idefics2: known by its checkpoint's name
            "Mantis-Idefics2",
            idefics2(False),
            "64 tokens per crop, one crop (its processor does not split images), + markers",
            fragments=("mantis-8b-idefics2",),
        ),
        ImageTokens(
            "Idefics2",
            idefics2(True),
            "64 tokens per crop, 5 crops with image splitting, + markers",
            model_types=("idefics2",),
            architectures=("Idefics2ForConditionalGeneration",),
            fragments=("idefics2",),
        ),
    ),
    styles=(PromptStyle("idefics"),),
    aliases={
        "idefics2": hf("HuggingFaceM4/idefics2-8b", "Idefics2 8B", 8192, prompt_style="idefics"),
        "idefics2-chatty": hf("HuggingFaceM4/idefics2-8b-chatty", "Idefics2 8B chatty", 8192, prompt_style="idefics"),
        "mantis-idefics2": hf(
            "TIGER-Lab/Mantis-8B-Idefics2",
            "Mantis 8B on Idefics2 (its processor does not split images)",
            8192,
            prompt_style="idefics",
        ),
        "idefics3": hf(
            "HuggingFaceM4/Idefics3-8B-Llama3", "Idefics3 8B", 10240, IDEFICS3_RULES, prompt_style="idefics"
        ),
    },
)
