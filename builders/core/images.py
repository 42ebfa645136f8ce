"""Deterministic JPEG encoding for builders: fixed settings, the bytes' sha256 and size computed once.

The settings are Pillow's defaults (quality 75, 4:2:0 chroma subsampling, baseline, no optimisation),
spelled out so that a change in Pillow's defaults cannot change a build's bytes.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass

from PIL import Image

JPEG_SETTINGS: dict[str, object] = {"quality": 75, "subsampling": 2, "optimize": False, "progressive": False}


@dataclass(frozen=True)
class EncodedImage:
    """JPEG bytes with what the dataset stores about them, computed once at encode time."""

    data: bytes
    sha256: str
    width: int
    height: int


class FileJpegEncoder:
    """Encodes with `JPEG_SETTINGS` through a file descriptor, one encoder per thread.

    Pillow holds the GIL while encoding into a BytesIO, and releases it while encoding into a
    real file: through an in-memory file (memfd; a temporary file where memfd is missing) JPEG
    encoding runs in parallel on worker threads.
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

    def __enter__(self) -> FileJpegEncoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
