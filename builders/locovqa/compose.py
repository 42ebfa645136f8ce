"""Pixels: a context image fitted into a grid cell, the composed grid (cmp), and a coloured MNIST digit on
its canvas.

Choices the paper leaves open (spec §1.1, §1.5; written in the card): every image is fitted into a square
cell of `cell_size` pixels keeping its aspect ratio (bicubic), centred on a black background; cells are laid
row-major with no borders or labels in a grid of ceil(sqrt(n)) cells a side, and cells past n stay black. A
digit is the ink of MNIST's 28 x 28 image (its blank margin cropped) scaled to its stroke height (bilinear) and
painted in its colour onto a white square canvas, at its place; the plan decides both sizes (`plan.digit_frame`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from PIL import Image

BACKGROUND = (0, 0, 0)
DIGIT_BACKGROUND = (255, 255, 255)
DEFAULT_CELL_SIZE = 336


def fitted_size(width: int, height: int, cell: int) -> tuple[int, int]:
    """The size a `width` x `height` image takes in a `cell` square (aspect kept)."""
    scale = min(cell / width, cell / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def fit_cell(image: Image.Image, cell: int) -> Image.Image:
    """`image` scaled to fit a `cell` x `cell` square (aspect kept, bicubic), centred on the background."""
    width, height = image.size
    size = fitted_size(width, height, cell)
    if image.mode != "RGB":
        image = image.convert("RGB")
    if size == (cell, cell):
        return image if image.size == size else image.resize(size, Image.Resampling.BICUBIC)
    canvas = Image.new("RGB", (cell, cell), BACKGROUND)
    canvas.paste(
        image.resize(size, Image.Resampling.BICUBIC) if image.size != size else image,
        ((cell - size[0]) // 2, (cell - size[1]) // 2),
    )
    return canvas


def cell_box(position: int, side: int, cell: int) -> tuple[int, int, int, int]:
    """The (left, top, right, bottom) pixels of grid position `position` (row-major)."""
    row, col = divmod(position, side)
    return col * cell, row * cell, (col + 1) * cell, (row + 1) * cell


def compose(cells: Iterable[Image.Image], side: int, cell: int) -> Image.Image:
    """Paste cells row-major onto a side x side grid; cells are consumed one at a time (a generator may refill
    one scratch image)."""
    canvas = Image.new("RGB", (side * cell, side * cell), BACKGROUND)
    for position, image in enumerate(cells):
        canvas.paste(image, cell_box(position, side, cell)[:2])
    return canvas


def render_digit(
    strokes: np.ndarray,
    colour: tuple[int, int, int],
    stroke_height: int,
    x_frac: float,
    y_frac: float,
    canvas_size: int,
) -> Image.Image:
    """A white `canvas_size` square with the MNIST digit `strokes` (28 x 28, white on black) painted in `colour`:
    its ink, the image's blank margin cropped, `stroke_height` pixels high (aspect kept), its top-left corner at
    (`x_frac`, `y_frac`) of the free room."""
    mask = Image.fromarray(np.ascontiguousarray(strokes, dtype=np.uint8), mode="L")
    ink = mask.crop(mask.getbbox() or (0, 0, mask.width, mask.height))
    height = max(1, min(stroke_height, canvas_size))
    width = max(1, round(ink.width * height / ink.height))
    if width > canvas_size:  # a digit far wider than tall on a small canvas: shrink it to fit
        width, height = canvas_size, max(1, round(ink.height * canvas_size / ink.width))
    ink = ink.resize((width, height), Image.Resampling.BILINEAR)
    canvas = Image.new("RGB", (canvas_size, canvas_size), DIGIT_BACKGROUND)
    place = (round(x_frac * (canvas_size - width)), round(y_frac * (canvas_size - height)))
    canvas.paste(Image.new("RGB", (width, height), colour), place, ink)
    return canvas
