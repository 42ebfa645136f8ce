"""The image-token rules the model audit found wrong (issue 61, item 6), each against the ids its family's processor
makes (transformers' classes with the settings the checkpoints publish, `tests.support.family_processors`): Ovis2's
covering grid, not InternVL's tiling, and Idefics3's tiles under its alias's own `do_resize=False` as well as at
1,456 px. Counted where the checkpoint is not at hand (`--screen_only`) or where the processor cannot count from a
size, so each must be the ids the run sends."""

from __future__ import annotations

import pytest
from PIL import Image

from harness.models.families import family_of
from harness.models.families.idefics import TAGGED, UNTAGGED, idefics3_grid, idefics3_tokens
from tests.support import family_processors as published

# Photos, screens, scans, slides and the extremes a long-context row holds (width, height).
SIZES = [
    (224, 224), (256, 256), (364, 364), (365, 364), (448, 448), (449, 448), (640, 480), (480, 640), (800, 600),
    (1024, 768), (1280, 720), (720, 1280), (1366, 768), (1920, 1080), (1080, 1920), (2048, 1536), (2560, 1440),
    (3024, 4032), (4032, 3024), (1240, 1754), (1654, 2339), (2480, 3508), (2550, 3300), (3508, 2480), (1700, 2200),
    (100, 50), (50, 100), (30, 900), (900, 30), (4000, 1000), (1000, 4000), (500, 3000), (3000, 500), (1500, 1000),
    (1000, 1500), (333, 777), (777, 333), (1200, 1200), (2000, 2000), (96, 1600), (1600, 96),
]  # fmt: skip


def ids_for_one_image(processor, width: int, height: int, **settings) -> list[int]:
    """The input ids the processor makes of `<image>` alone, with one image of this size (its pixels not rescaled nor
    normalized, which changes no id and halves the time)."""
    image = Image.new("RGB", (width, height), (200, 120, 40))
    quick = {"do_rescale": False, "do_normalize": False}
    inputs = processor(text=["<image>"], images=[[image]], return_tensors="pt", **quick, **settings)
    return inputs["input_ids"][0].tolist()


def image_tokens_sent(processor, width: int, height: int, **settings) -> int:
    """What the image adds to the prompt: the ids of `<image>` expanded, less those of an empty prompt."""
    return len(ids_for_one_image(processor, width, height, **settings)) - len(processor.tokenizer("").input_ids)


@pytest.mark.parametrize("settings", [{}, {"max_patches": 4}], ids=["checkpoint", "official-wrapper"])
def test_ovis2_counts_the_ids_its_processor_makes(settings: dict[str, int]) -> None:
    """The checkpoint's own settings (crop_to_patches, at most 12 tiles) and the official wrapper's max_partition 4."""
    processor = published.ovis2()
    family = family_of("ovis2")
    assert family is not None and len(SIZES) == 41
    for width, height in SIZES:
        sent = image_tokens_sent(processor, width, height, **settings)
        assert family.image_tokens(width, height, settings) == sent, (width, height)


@pytest.mark.parametrize("settings", [{"do_resize": False}, {}], ids=["official-wrapper", "checkpoint"])
def test_idefics3_cuts_and_counts_as_its_processor(settings: dict[str, bool]) -> None:
    """The tiles (how many 169-token crops: the `<image>` ids) are the processor's for every size, and the tokens its
    ids, but for each `<row_R_col_C>` tag beyond the 6 x 6 the tokenizer holds, which the rule counts as Llama 3's
    pre-tokenizer splits it (`UNTAGGED`) and this tiny tokenizer splits otherwise."""
    processor = published.idefics3()
    tokenizer = processor.tokenizer
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    merged = len(tokenizer("\n\n", add_special_tokens=False).input_ids) - 1  # a tokenizer that keeps "\n\n" as two
    family = family_of("idefics3")
    assert family is not None and idefics3_tokens(1, 2) == 172 + 2 * (169 + 2) + 1  # two tiles, a row, the global
    untagged = 0
    for width, height in SIZES:
        rows, cols = idefics3_grid(width, height, settings)
        ids = ids_for_one_image(processor, width, height, **settings)
        assert ids.count(image_id) == 169 * (rows * cols + 1), (width, height)  # the processor's tiles
        sent = image_tokens_sent(processor, width, height, **settings) - (merged if rows else 0)
        tags = [(r, c) for r in range(1, rows + 1) for c in range(1, cols + 1) if max(r, c) > TAGGED]
        split = sum(
            len(tokenizer(f"<row_{r}_col_{c}>", add_special_tokens=False).input_ids) - UNTAGGED for r, c in tags
        )
        assert family.image_tokens(width, height, settings) + split == sent, (width, height)
        untagged += bool(tags)
    assert untagged >= (5 if settings else 0)  # do_resize off: scans and photos go past the tokenizer's 6 x 6 tags
