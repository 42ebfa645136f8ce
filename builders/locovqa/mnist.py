"""MNIST (LeCun et al., 1998): the training set's images and labels (spec §1.5: "digits from the MNIST training
set of around 60K images"), in its standard IDX files, gzipped or not, or as the Hub release `ylecun/mnist`
publishes them (one Parquet file, each image a PNG):

    MNIST_DIR/train-images-idx3-ubyte[.gz]   magic 2051, count, rows, cols, then uint8 pixels
    MNIST_DIR/train-labels-idx1-ubyte[.gz]   magic 2049, count, then uint8 labels
    MNIST_FILE = .../mnist/train-00000-of-00001.parquet   columns image {bytes: PNG, path}, label (int)
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from pathlib import Path

import numpy as np

from builders.core.errors import BuildError
from builders.core.release_bounds import check_size, open_release_file, read_bounded, read_file
from builders.core.release_paths import release_path
from builders.locovqa.bounds import MNIST_IDX, MNIST_PARQUET

IMAGES = "train-images-idx3-ubyte"
LABELS = "train-labels-idx1-ubyte"
HUB_PARQUET = "mnist/train-00000-of-00001.parquet"  # ylecun/mnist since its conversion to Parquet (77f3279)


def _find(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx")):
        path = release_path(folder, name, f"MNIST file {folder / name}")
        if path.is_file():
            return path
    raise BuildError(f"MNIST file not found: {folder / stem} (or {stem}.gz)")


def _read(path: Path) -> bytes:
    """The file's bytes, gunzipped if it is gzipped, within `MNIST_IDX` either way (a small gzip file that inflates
    past it stops there)."""
    data = read_file(path, MNIST_IDX)
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                return read_bounded(unzipped.read, MNIST_IDX, f"{path} (gunzipped)")
        except (OSError, EOFError, zlib.error) as exc:
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
        raise BuildError(
            f"{path}: {len(data) - header} bytes of data, the header says {size} ({' x '.join(map(str, shape))})"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def read_parquet(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(pixels N x 28 x 28 uint8, labels N uint8) of the Hub release's Parquet; a row that is not a 28 x 28
    grey-scale PNG with a digit label is a `BuildError` naming the file and the row."""
    import io

    import pyarrow.parquet as pq
    from PIL import Image

    try:
        with open_release_file(path) as handle:
            check_size(handle, MNIST_PARQUET, str(path))
            table = pq.read_table(handle, columns=["image", "label"])
    except BuildError:
        raise
    except Exception as exc:  # pyarrow's errors for a damaged or foreign file have no common base
        raise BuildError(f"{path}: not a readable MNIST Parquet file with columns image and label ({exc})") from None
    images = np.empty((table.num_rows, 28, 28), dtype=np.uint8)
    labels = np.empty(table.num_rows, dtype=np.uint8)
    for i, (image, label) in enumerate(
        zip(table.column("image").to_pylist(), table.column("label").to_pylist(), strict=True)
    ):
        try:
            with Image.open(io.BytesIO(image["bytes"])) as decoded:
                pixels = np.asarray(decoded.convert("L"))
        except Exception:  # Pillow raises many types for bytes that are not an image
            pixels = None
        if pixels is None or pixels.shape != (28, 28) or label not in range(10):
            raise BuildError(f"{path}: row {i} is not a 28 x 28 digit image with a label 0-9")
        images[i], labels[i] = pixels, label
    return images, labels


class MnistSource:
    name = "mnist"

    def __init__(self, folder: str | Path) -> None:
        self.dir = Path(folder)
        if self.dir.suffix == ".parquet" and self.dir.is_file():  # the Hub release's file, named as the source
            self.images_path = self.labels_path = self.dir
            self.images, self.labels = read_parquet(self.dir)
        elif not self.dir.is_dir():
            raise BuildError(
                f"MNIST folder not found: {self.dir} (expected the IDX files train-images-idx3-ubyte"
                f"[.gz] and train-labels-idx1-ubyte[.gz], or the Hub release's {HUB_PARQUET})"
            )
        else:
            self.images_path = _find(self.dir, IMAGES)
            self.labels_path = _find(self.dir, LABELS)
            self.images = read_idx(self.images_path, 2051, 3)
            self.labels = read_idx(self.labels_path, 2049, 1)
        if len(self.images) != len(self.labels):
            raise BuildError(
                f"{self.images_path} holds {len(self.images)} images but {self.labels_path} {len(self.labels)} labels"
            )
        self.by_label = {d: np.flatnonzero(self.labels == d).tolist() for d in range(10)}
        empty = [d for d, idx in self.by_label.items() if not idx]
        if empty:
            raise BuildError(f"{self.labels_path}: no image of digit(s) {empty}")

    def pixels(self, index: int) -> np.ndarray:
        return self.images[index]

    def label(self, index: int) -> int:
        return int(self.labels[index])

    def fingerprint_parts(self) -> list[Path]:
        return list(dict.fromkeys([self.images_path, self.labels_path]))
