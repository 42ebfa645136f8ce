"""Image operations shared by the builders: sub-image resize, N x N stitching, JPEG encoding.

They follow the released MMNeedle code: every source image is resized to exactly 256 x 256 with
a plain `Image.resize` (aspect ratio not preserved, Pillow's bicubic filter, the image's own mode),
pasted row-major onto an RGB canvas without borders, and the stitched image is saved as JPEG with
Pillow's defaults (quality 75, 4:2:0 chroma subsampling, baseline, no optimisation; spec A18).
The settings are spelled out so a change in Pillow's defaults cannot change the output.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from builders.core.errors import BuildError

TILE_SIZE = 256
JPEG_SETTINGS: dict[str, object] = {"quality": 75, "subsampling": 2, "optimize": False, "progressive": False}


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
        with Image.open(path) as opened:
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


@dataclass(frozen=True)
class EncodedImage:
    """JPEG bytes with what the dataset stores about them, computed once at encode time."""

    data: bytes
    sha256: str
    width: int
    height: int


def encode_jpeg(image: Image.Image) -> EncodedImage:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", **JPEG_SETTINGS)
    data = buffer.getvalue()
    return EncodedImage(data, hashlib.sha256(data).hexdigest(), image.width, image.height)


class FileJpegEncoder:
    """Encodes like `encode_jpeg`, byte for byte, but through a file descriptor.

    Pillow holds the GIL while encoding into a BytesIO, and releases it while encoding into a
    real file: through an in-memory file (memfd; a temporary file where memfd is missing) JPEG
    encoding runs in parallel on worker threads. One encoder per thread.
    """

    def __init__(self) -> None:
        if hasattr(os, "memfd_create"):
            self._file = open(os.memfd_create("builders-jpeg"), "w+b", buffering=0)  # noqa: SIM115
        else:  # pragma: no cover - non-Linux
            self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115

    def encode(self, image: Image.Image) -> EncodedImage:
        fd = self._file.fileno()
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        image.save(self._file, format="JPEG", **JPEG_SETTINGS)
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        return EncodedImage(data, hashlib.sha256(data).hexdigest(), image.width, image.height)

    def close(self) -> None:
        self._file.close()
