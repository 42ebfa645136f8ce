"""The images the viewer may serve: only those of prompts it showed from verified builds, by content hash, each read
checked against its hash (`ImageStore`); and what kind of image a file's bytes are (`media_type`)."""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Callable

SHA256_HEX = frozenset("0123456789abcdef")


def is_sha256(text: str) -> bool:
    return len(text) == 64 and set(text) <= SHA256_HEX


class ImageStore:
    """The images the viewer may serve: only those of prompts it showed from verified builds, by content hash.
    Each read is checked against its hash (a derived one's source, see `register`); thumbnails are kept in a small
    LRU."""

    def __init__(self, thumbs: int = 512) -> None:
        self._loaders: dict[str, tuple[Callable[[], bytes], bool]] = {}
        self._thumbs: OrderedDict[tuple[str, int], tuple[bytes, str]] = OrderedDict()
        self._limit = thumbs
        self._lock = threading.Lock()

    def register(self, sha256: str, load: Callable[[], bytes], derived: bool = False) -> None:
        """`derived`: an input policy's resize of a build's image, whose sha256 names the source and the resize, not
        its bytes (`harness.inputs.input_policy`): its bytes are the source's, read through the build's own check."""
        with self._lock:
            self._loaders.setdefault(sha256, (load, derived))

    def __contains__(self, sha256: str) -> bool:
        return sha256 in self._loaders

    def original(self, sha256: str) -> bytes | None:
        if sha256 not in self._loaders:
            return None
        load, derived = self._loaders[sha256]
        try:
            data = load()
        except (OSError, ValueError, KeyError):  # the build changed under the viewer: its check refused the bytes
            return None
        return data if derived or hashlib.sha256(data).hexdigest() == sha256 else None

    def thumbnail(self, sha256: str, size: int) -> tuple[bytes, str] | None:
        """(bytes, media type) of the image shrunk to fit `size` pixels, as PNG (JPEG for photos)."""
        key = (sha256, size)
        with self._lock:
            if key in self._thumbs:
                self._thumbs.move_to_end(key)
                return self._thumbs[key]
        data = self.original(sha256)
        if data is None:
            return None
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as image:
                image.thumbnail((size, size))
                out = io.BytesIO()
                photo = image.format == "JPEG"
                image.convert("RGB").save(out, format="JPEG" if photo else "PNG", quality=85)
        except (OSError, UnidentifiedImageError, ValueError):
            return None
        found = (out.getvalue(), "image/jpeg" if photo else "image/png")
        with self._lock:
            self._thumbs[key] = found
            while len(self._thumbs) > self._limit:
                self._thumbs.popitem(last=False)
        return found


def media_type(data: bytes) -> str | None:
    """The image type of encoded bytes by their signature; None for anything else (never served)."""
    signatures = {
        b"\xff\xd8\xff": "image/jpeg",
        b"\x89PNG\r\n\x1a\n": "image/png",
        b"GIF87a": "image/gif",
        b"GIF89a": "image/gif",
        b"BM": "image/bmp",
    }
    for signature, kind in signatures.items():
        if data.startswith(signature):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
