"""Image sizing rules shared by the runner (token checks, logs) and the `hf` backend (resizing)."""

from __future__ import annotations

import math


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


def vision_tokens(width: int, height: int, max_pixels: int | None = None, factor: int = 28,
                  min_pixels: int = 56 * 56) -> int:
    """Vision tokens under the builders' counting rule: Qwen2-VL `smart_resize` to multiples of
    `factor` (14-px patches, 2x2 merge) within [min_pixels, max_pixels], then one token per
    28x28 block."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if max_pixels and h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return (h_bar // factor) * (w_bar // factor)
