"""Pixels: a context image fitted into a grid cell, the composed grid (cmp), and a coloured MNIST digit on
its canvas.

Choices the paper leaves open (spec §1.1, §1.5; written in the card): every image is fitted into a square
cell of `cell_size` pixels keeping its aspect ratio (bicubic), centred on a black background; cells are laid
row-major with no borders or labels in a grid of ceil(sqrt(n)) cells a side, and cells past n stay black. A
digit is MNIST's 28 x 28 strokes scaled to its height (1/6 to 1/2 of the canvas, bilinear) and painted in its
colour onto a white canvas of `cell_size`, at its place.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from PIL import Image

BACKGROUND = (0, 0, 0)
DIGIT_BACKGROUND = (255, 255, 255)
DEFAULT_CELL_SIZE = 336


def fit_cell(image: Image.Image, cell: int) -> Image.Image:
    """`image` scaled to fit a `cell` x `cell` square (aspect kept, bicubic), centred on the background."""
    width, height = image.size
    scale = min(cell / width, cell / height)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    if image.mode != "RGB":
        image = image.convert("RGB")
    if size == (cell, cell):
        return image if image.size == size else image.resize(size, Image.Resampling.BICUBIC)
    canvas = Image.new("RGB", (cell, cell), BACKGROUND)
    canvas.paste(image.resize(size, Image.Resampling.BICUBIC) if image.size != size else image,
                 ((cell - size[0]) // 2, (cell - size[1]) // 2))
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


def render_digit(strokes: np.ndarray, colour: tuple[int, int, int], height_frac: float, x_frac: float,
                 y_frac: float, canvas_size: int) -> Image.Image:
    """A white `canvas_size` square with the MNIST digit `strokes` (28 x 28, white on black) painted in `colour`,
    `height_frac` of the canvas high, its top-left corner at (`x_frac`, `y_frac`) of the free room."""
    height = max(4, round(height_frac * canvas_size))
    mask = Image.fromarray(np.ascontiguousarray(strokes, dtype=np.uint8), mode="L").resize(
        (height, height), Image.Resampling.BILINEAR)
    canvas = Image.new("RGB", (canvas_size, canvas_size), DIGIT_BACKGROUND)
    room = canvas_size - height
    canvas.paste(Image.new("RGB", (height, height), colour), (round(x_frac * room), round(y_frac * room)), mask)
    return canvas
