"""The Combined-image Set's image: every image of a sample merged into one captioned grid, as the official
`data/combine_images.py` (@9583e1f, run with `--max_img_num 1`, its default `--font_size 8`) makes it.

- each image is resized to 800 x 800 with LANCZOS (aspect ratio not kept), then converted to RGBA;
- the grid has ceil(sqrt(k)) columns and ceil(k / columns) rows, tiles placed row by row on a black RGB
  canvas (pasted without a mask: alpha is dropped, not blended);
- each tile is captioned `Image {i}` (1-based, in the sample's image order) in white on a black box,
  centred at the bottom: the text at 4 x 8 = 32 px, placed at ((800 - w) // 2, 800 - h) for its bounding
  box w x h, the box 12 px around it and 10 px more above;
- the canvas is saved as JPEG with Pillow's defaults (quality 75, 4:2:0).

The official font is `arialuni.ttf` (Arial Unicode MS), which is not redistributable; the captions here are
drawn with DejaVu Sans (shipped with matplotlib), so glyph shapes and widths differ slightly; the geometry
follows the rule above. The font's sha256 is part of the build request.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

TILE_SIDE = 800
CAPTION_PX = 8 * 4  # `--font_size 8`, drawn at four times that size for the index
CAPTION_PADDING = 12
CAPTION_LIFT = 10  # the box reaches 10 px higher than the padding
FONT_FILE = "DejaVuSans.ttf"


def font_path() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / FONT_FILE


@lru_cache(maxsize=1)
def caption_font() -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(font_path()), CAPTION_PX)


@lru_cache(maxsize=1)
def font_id() -> str:
    """The caption font as the build request records it (its bytes decide the captions' pixels)."""
    return f"{FONT_FILE}@{hashlib.sha256(font_path().read_bytes()).hexdigest()[:16]} {CAPTION_PX}px"


def grid_shape(count: int) -> tuple[int, int]:
    """(columns, rows) of the grid for `count` images."""
    columns = math.ceil(math.sqrt(count))
    return columns, math.ceil(count / columns)


def caption_layout(text: str) -> tuple[tuple[float, float], tuple[float, float, float, float]]:
    """Where a tile's caption goes: the text's anchor and the black box (left, top, right, bottom): whole pixels
    from the TrueType font's box, which Pillow types as floats for all fonts."""
    left, top, right, bottom = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=caption_font())
    width, height = right - left, bottom - top
    x, y = (TILE_SIDE - width) // 2, TILE_SIDE - height
    box = (
        x - CAPTION_PADDING,
        y - CAPTION_PADDING - CAPTION_LIFT,
        x + width + CAPTION_PADDING,
        y + height + CAPTION_PADDING,
    )
    return (x, y), box


def tile(image: Image.Image, index: int) -> Image.Image:
    """One source image as its captioned 800 x 800 RGBA tile; `index` is its 1-based number."""
    resized = image.resize((TILE_SIDE, TILE_SIDE), Image.Resampling.LANCZOS).convert("RGBA")
    text = f"Image {index}"
    anchor, box = caption_layout(text)
    draw = ImageDraw.Draw(resized)
    draw.rectangle(box, fill="black")
    draw.text(anchor, text, fill="white", font=caption_font())
    return resized


def combine(images: Sequence[Image.Image], start_index: int = 0) -> Image.Image:
    """The captioned grid of `images` (numbered from start_index + 1), an RGB image."""
    columns, rows = grid_shape(len(images))
    canvas = Image.new("RGB", (columns * TILE_SIDE, rows * TILE_SIDE))
    for i, image in enumerate(images):
        row, column = divmod(i, columns)
        canvas.paste(tile(image, start_index + i + 1), (column * TILE_SIDE, row * TILE_SIDE))
    return canvas
