"""MMNeedle's image operations: sub-image resize and N x N stitching (the decoded tiles wait in
`builders.core.store.TileStore`, which LoCoVQA's grid cells share).

They follow the released MMNeedle code: every source image is resized to exactly 256 x 256 with a
plain `Image.resize` (aspect ratio not preserved, Pillow's bicubic filter, the image's own mode),
pasted row-major onto an RGB canvas without borders, and the stitched image is saved as JPEG with
Pillow's defaults (`builders.core.images.JPEG_SETTINGS`, spec A18).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PIL import Image

from builders.core import contract
from builders.core.errors import BuildError

TILE_SIZE = 256


def resize_tile(image: Image.Image, size: int = TILE_SIZE) -> Image.Image:
    """A size x size RGB copy of `image`, resized as the official code does (spec A1, §2.2)."""
    if image.size != (size, size):
        # Pillow itself falls back to nearest neighbour for "1" and "P" images, as in the original.
        image = image.resize((size, size), Image.Resampling.BICUBIC)
    if image.mode != "RGB":
        image = image.convert("RGB")
    return image


def load_tile(path: Path, size: int = TILE_SIZE) -> Image.Image:
    """Decode the image file at `path` and resize it to a tile; a broken file names itself."""
    try:
        with contract.open_regular(path) as handle, Image.open(handle) as opened:  # never waits on a FIFO
            opened.load()  # decode now, inside the error handling and before the file closes
            return resize_tile(opened, size)
    except FileNotFoundError:
        raise BuildError(f"missing image: {path}") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise BuildError(f"unreadable image: {path} ({exc})") from None


def stitch(
    tiles: Iterable[Image.Image], n: int, size: int = TILE_SIZE, canvas: Image.Image | None = None
) -> Image.Image:
    """Paste n*n tiles row-major (row = top to bottom, column = left to right) without borders.

    Tiles are consumed one at a time (each is pasted before the next is requested), so a
    generator may hand out the same scratch image refilled. Every pixel is overwritten by a
    tile, so a `canvas` from an earlier call can be reused: that saves allocating (and
    page-faulting) 16 MB for every 8x8 image. For n = 1 the tile itself is returned.
    """
    if n == 1:
        (only,) = tiles
        return only
    if canvas is None or canvas.size != (n * size, n * size) or canvas.mode != "RGB":
        canvas = Image.new("RGB", (n * size, n * size), None)
    pasted = 0
    for k, tile in enumerate(tiles):
        row, col = divmod(k, n)
        canvas.paste(tile, (col * size, row * size))
        pasted += 1
    if pasted != n * n:
        raise ValueError(f"stitching {n}x{n} needs {n * n} tiles, got {pasted}")
    return canvas
