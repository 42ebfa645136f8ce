"""Image sizing rules shared by the runner (token checks, logs) and the `hf` backend (resizing)."""

from __future__ import annotations

import math

from builders.core.tokens import MAX_PIXELS, MIN_PIXELS, PATCH_FACTOR, smart_resize


def fit_within_pixels(width: int, height: int, max_pixels: int | None) -> tuple[int, int]:
    """The size an image is scaled down to so that width*height <= max_pixels (aspect kept).

    Images already within the cap, or a cap of None, keep their size; sides never go below 1 px.
    """
    if not max_pixels or width * height <= max_pixels:
        return width, height
    scale = math.sqrt(max_pixels / (width * height))
    new_w, new_h = max(1, int(width * scale)), max(1, int(height * scale))
    while new_w * new_h > max_pixels:  # float rounding can leave one pixel row too many
        if new_w >= new_h:
            new_w -= 1
        else:
            new_h -= 1
    return new_w, new_h


def vision_tokens(width: int, height: int, max_pixels: int | None = None, min_pixels: int = MIN_PIXELS) -> int:
    """Vision tokens under the builders' counting rule (`builders.core.tokens`), with the run's
    pixel limits in place of the rule's defaults."""
    h_bar, w_bar = smart_resize(height, width, min_pixels=min_pixels, max_pixels=max_pixels or MAX_PIXELS)
    return (h_bar // PATCH_FACTOR) * (w_bar // PATCH_FACTOR)
