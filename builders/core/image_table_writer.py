"""The image table of a shared-storage build (`contract.IMAGE_TABLE_CONFIG`): each distinct image once."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from datasets import Features

from builders.core import contract
from builders.core.images import EncodedImage
from builders.core.parquet_writer import ConfigResult, ShardedParquetWriter
from builders.core.store import encoded_store


class ImageTableWriter:
    """Collects the distinct images of a shared-storage build, then writes them once, sorted by sha256
    (so the table does not depend on the order in which workers finished). The bytes wait in a spool
    file (page cache), not in memory."""

    def __init__(self, spool: Path) -> None:
        self._store = encoded_store(spool, 0)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._store)

    def add(self, image: EncodedImage) -> None:
        """Add an image; one already added (same sha256) is skipped. Safe to call from worker threads."""
        with self._lock:
            if image.sha256 in self._store:
                return
            self._store.put(image.sha256, image)

    def get(self, sha256: str) -> EncodedImage:
        return self._store.get(sha256)

    def write(self, dataset_dir: Path, shard_bytes: int) -> ConfigResult:
        features = Features(contract.image_table_features())
        with ShardedParquetWriter(
            dataset_dir,
            contract.IMAGE_TABLE_CONFIG,
            features,
            _image_digest,
            split=contract.IMAGE_TABLE_SPLIT,
            shard_bytes=shard_bytes,
        ) as writer:
            for sha in sorted(self._store.keys()):  # type: ignore[type-var]  # keys: sha256 hex strings
                image = self._store.get(sha)
                writer.write(
                    {
                        "sha256": sha,
                        "image": {"bytes": image.data, "path": None},
                        "width": image.width,
                        "height": image.height,
                    },
                    len(image.data),
                )
            return writer.close()

    def close(self) -> None:
        self._store.close()


def _image_digest(row: Mapping[str, object]) -> bytes:
    """An image table row's identity: its sha256 (which covers the bytes) and size."""
    return f"{row['sha256']} {row['width']} {row['height']}\n".encode()
