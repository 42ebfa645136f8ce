"""Keyed stores for intermediate images, held in memory up to a byte budget and spilled to disk
beyond it.

A build decodes each source image once and encodes each derived image once, but they are reused
in random order (any source image by any composed image, any encoded image by any row), so they
must be kept until the end of their stage. Keeping them all in memory would make memory grow
with the data; the budget bounds it, and the rest goes to a file in the build's temporary folder
(read back with `pread`, so the kernel's page cache, not this process, holds it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

from PIL import Image

from builders.core.images import EncodedImage

V = TypeVar("V")


class BudgetedStore(Generic[V]):
    def __init__(
        self,
        spill_path: Path,
        budget_bytes: int,
        size_in_memory: Callable[[V], int],
        to_bytes: Callable[[V], bytes],
        from_bytes: Callable[[bytes, object], V],
        spill_meta: Callable[[V], object] = lambda value: None,
    ) -> None:
        self._spill_path = spill_path
        self._budget = budget_bytes
        self._size_in_memory = size_in_memory
        self._to_bytes = to_bytes
        self._from_bytes = from_bytes
        self._spill_meta = spill_meta
        self._memory: dict[Hashable, V] = {}
        self._spilled: dict[Hashable, tuple[int, int, object]] = {}
        self._lock = threading.Lock()
        self._fd: int | None = None
        self.memory_bytes = 0
        self.spilled_bytes = 0

    def __len__(self) -> int:
        return len(self._memory) + len(self._spilled)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._memory or key in self._spilled

    def keys(self) -> list[Hashable]:
        return [*self._memory, *self._spilled]

    def put(self, key: Hashable, value: V) -> None:
        size = self._size_in_memory(value)
        with self._lock:
            if self.memory_bytes + size <= self._budget:
                self._memory[key] = value
                self.memory_bytes += size
                return
            data = self._to_bytes(value)
            if self._fd is None:
                self._fd = os.open(self._spill_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            offset = self.spilled_bytes
            self.spilled_bytes += len(data)
        os.pwrite(self._fd, data, offset)
        with self._lock:
            self._spilled[key] = (offset, len(data), self._spill_meta(value))

    def get(self, key: Hashable) -> V:
        value = self._memory.get(key)
        if value is not None:
            return value
        offset, length, meta = self._spilled[key]
        assert self._fd is not None
        return self._from_bytes(os.pread(self._fd, length, offset), meta)

    def discard(self, key: Hashable) -> None:
        """Forget `key` (its last reader is done): its memory is freed at once; spilled bytes stay in the file."""
        with self._lock:
            value = self._memory.pop(key, None)
            if value is not None:
                self.memory_bytes -= self._size_in_memory(value)
            self._spilled.pop(key, None)

    def close(self) -> None:
        """Drop everything and delete the spill file."""
        self._memory.clear()
        self._spilled.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._spill_path.unlink(missing_ok=True)
        self.memory_bytes = 0


def encoded_store(spill_path: Path, budget_bytes: int) -> BudgetedStore[EncodedImage]:
    """Encoded stitched images; only the JPEG bytes go to disk, their hash and size stay here."""
    return BudgetedStore(
        spill_path,
        budget_bytes,
        size_in_memory=lambda enc: len(enc.data),
        to_bytes=lambda enc: enc.data,
        from_bytes=lambda data, meta: EncodedImage(data, *meta),  # type: ignore[misc]  # meta: spill_meta's triple
        spill_meta=lambda enc: (enc.sha256, enc.width, enc.height),
    )


class TileStore(BudgetedStore[Image.Image]):
    """Decoded RGB tiles (MMNeedle's sub-images, LoCoVQA's grid cells): Pillow images in memory (Pillow uses 4 bytes per RGB pixel), raw RGB
    bytes on disk."""

    def __init__(self, spill_path: Path, budget_bytes: int) -> None:
        super().__init__(
            spill_path,
            budget_bytes,
            size_in_memory=lambda im: im.width * im.height * 4,
            to_bytes=lambda im: im.tobytes(),
            from_bytes=lambda data, size: Image.frombytes("RGB", size, data),  # type: ignore[arg-type]  # spill_meta's size
            spill_meta=lambda im: im.size,
        )

    def get_into(self, key: Hashable, scratch: Image.Image) -> Image.Image:
        """The tile, or for a spilled one `scratch` refilled with it: no new image is allocated
        (allocating and page-faulting a tile costs more than reading it back). The result is
        only valid until `scratch` is refilled."""
        value = self._memory.get(key)
        if value is not None:
            return value
        offset, length, size = self._spilled[key]
        assert self._fd is not None and scratch.size == size and scratch.mode == "RGB"
        scratch.frombytes(os.pread(self._fd, length, offset))
        return scratch
