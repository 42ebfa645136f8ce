"""Where LoCoVQA's images come from, by key, without decoding: a source file's bytes, an image embedded in a
released table, or a digit the builder draws.

A key names one image for the whole build (`coco2014/COCO_val2014_000000000042.jpg`, `mmstar/17`,
`digit/...`); rows list their context by these keys (`context_ids`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from builders.core.errors import BuildError
from builders.core.image_check import image_size
from builders.core.images import EncodedImage
from builders.core.release_bounds import SOURCE_IMAGE, read_file


@dataclass(frozen=True)
class SourceImage:
    """One image of a source: its key and how to get its encoded bytes (read only when a row needs them)."""

    key: str
    read: Callable[[], bytes]
    where: str = ""  # the file it is read from, for messages

    def size(self) -> tuple[int, int]:
        """(width, height) from the image's header, without decoding its pixels."""
        encoded = self.encoded()
        return encoded.width, encoded.height

    def encoded(self) -> EncodedImage:
        """The source's own bytes, unchanged (interleaved rows pass them as released), with sha256 and size; a
        damaged image (a JPEG cut short included: `builders.core.image_check`) is a `BuildError` naming it."""
        data = self.read()
        try:
            width, height = image_size(data)
        except ValueError as exc:
            raise BuildError(f"image {self.key}{f' ({self.where})' if self.where else ''} is damaged ({exc})") from None
        return EncodedImage(data, hashlib.sha256(data).hexdigest(), width, height)


def file_image(key: str, path: Path) -> SourceImage:
    def read() -> bytes:
        try:
            return read_file(path, SOURCE_IMAGE, f"image {key}: {path}")
        except FileNotFoundError:
            raise BuildError(f"missing image: {path} (image {key})") from None

    return SourceImage(key, read, str(path))


def bytes_image(key: str, data: bytes) -> SourceImage:
    return SourceImage(key, lambda: data)


def decode(image: SourceImage, draft_size: int | None = None) -> Image.Image:
    """Decode to RGB; with `draft_size`, a JPEG is decoded at the smallest DCT scale still at least that large
    (far cheaper than decoding the full image to shrink it afterwards)."""
    try:
        with Image.open(io.BytesIO(image.read())) as opened:
            if draft_size is not None and opened.format == "JPEG":
                opened.draft("RGB", (draft_size, draft_size))
            opened.load()
            return opened.convert("RGB") if opened.mode != "RGB" else opened.copy()
    except BuildError:
        raise
    except Exception as exc:
        where = f" ({image.where})" if image.where else ""
        raise BuildError(f"image {image.key}{where} does not decode: {exc}") from None
