"""Idefics2 (and its chatty and Mantis fine-tunes) and Idefics3: their image tokens (Idefics2's perceiver, 64 per
crop, five crops when it splits; Mantis's processor does not split; Idefics3's 364-px tiles of the image at 1,456
px), the chat as the official wrapper (MMLongBench's `vlm_model/idefics.py`) builds it (typed parts, the prefix a
text part), and the aliases. Image splitting is the processor's default (on for Idefics2 and Idefics3, off for
Mantis); Idefics3's wrapper loads its processor with `do_resize=False` at every length."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.alias import hf, wrapper
from harness.models.families.family import ImageRule, ImageTokens, ModelFamily
from harness.models.prompt_style import PromptStyle


def idefics2(split_by_default: bool) -> ImageRule:
    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        crops = 5 if settings.get("do_image_splitting", split_by_default) else 1  # four quarters and the whole image
        return crops * (64 + 1) + 1  # each crop: a <fake_token_around_image> and 64 perceiver tokens; one closes

    return rule


def idefics3(width: int, height: int, settings: Mapping[str, object]) -> int:
    """The longest side scaled to 1,456 px (unless do_resize is off: the image at its own size), cut into 364-px
    tiles of 169 tokens each plus a global view, with row and tile markers."""
    scale = 1.0 if settings.get("do_resize", True) is False else 1456 / max(width, height)
    rows, cols = math.ceil(height * scale / 364), math.ceil(width * scale / 364)
    if settings.get("do_image_splitting", True) is False or rows * cols == 1:
        return 169 + 3
    return 169 + 3 + rows * (cols * (169 + 2) + 1)


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
            "169 tokens per 364-px tile of the image at 1,456 px + a global view + markers",
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
