"""MNIST (LeCun et al., 1998) in its standard IDX files: the training set's images and labels (spec §1.5:
"digits from the MNIST training set of around 60K images"), gzipped or not.

    MNIST_DIR/train-images-idx3-ubyte[.gz]   magic 2051, count, rows, cols, then uint8 pixels
    MNIST_DIR/train-labels-idx1-ubyte[.gz]   magic 2049, count, then uint8 labels
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

from builders.core.errors import BuildError
from builders.core.release_paths import release_path

IMAGES = "train-images-idx3-ubyte"
LABELS = "train-labels-idx1-ubyte"


def _find(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx")):
        path = release_path(folder, name, f"MNIST file {folder / name}")
        if path.is_file():
            return path
    raise BuildError(f"MNIST file not found: {folder / stem} (or {stem}.gz)")


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise BuildError(f"{path}: damaged gzip file ({exc})") from None
    return data


def read_idx(path: Path, magic: int, dims: int) -> np.ndarray:
    data = _read(path)
    header = 4 + 4 * dims
    if len(data) < header:
        raise BuildError(f"{path}: too short for an IDX header")
    found, *shape = struct.unpack(f">{1 + dims}I", data[:header])
    if found != magic:
        raise BuildError(f"{path}: IDX magic number {found}, expected {magic}")
    size = int(np.prod(shape))
    if len(data) - header != size:
        raise BuildError(f"{path}: {len(data) - header} bytes of data, the header says {size} ({' x '.join(map(str, shape))})")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


class MnistSource:
    name = "mnist"

    def __init__(self, folder: str | Path) -> None:
        self.dir = Path(folder)
        if not self.dir.is_dir():
            raise BuildError(f"MNIST folder not found: {self.dir}")
        self.images_path = _find(self.dir, IMAGES)
        self.labels_path = _find(self.dir, LABELS)
        self.images = read_idx(self.images_path, 2051, 3)
        self.labels = read_idx(self.labels_path, 2049, 1)
        if len(self.images) != len(self.labels):
            raise BuildError(f"{self.images_path} holds {len(self.images)} images but {self.labels_path} "
                             f"{len(self.labels)} labels")
        self.by_label = {d: np.flatnonzero(self.labels == d).tolist() for d in range(10)}
        empty = [d for d, idx in self.by_label.items() if not idx]
        if empty:
            raise BuildError(f"{self.labels_path}: no image of digit(s) {empty}")

    def pixels(self, index: int) -> np.ndarray:
        return self.images[index]

    def label(self, index: int) -> int:
        return int(self.labels[index])

    def fingerprint_parts(self) -> list[Path]:
        return [self.images_path, self.labels_path]
