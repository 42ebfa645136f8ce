"""An image of a verified build named by where it lies, so that another process (a Ray replica,
`harness.models.backends.replicas`) reads its bytes itself instead of receiving them from the run's driver.

`BuildImage` is small and picklable: the build's Parquet files (path, sha256 and size of each, as the driver verified
them), and the image's place in them (a row's image column, or the build's image table by sha256). Calling it in any
process reads the image the way the driver would: the files opened and memory-mapped by `harness.inputs.integrity`
(hashed once per file identity, the hash remembered in the hash cache), refused unless they are byte for byte the
files the driver verified, then the image's bytes read from the mapping (`harness.inputs.parquet_split`) and checked
against its sha256. Where the files are not at the same path in that process (no shared storage), `unreadable` says
why, and the images travel as bytes instead.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.api import ImageRef
from harness.inputs.integrity import DataFile, check_image_bytes, check_image_size, open_files
from harness.inputs.parquet_split import ImageColumn, RowImage, SharedImageColumn, SplitFiles, image_table


@dataclass(frozen=True)
class BuildFiles:
    """The Parquet files of one split (or one image table) as the driver verified them."""

    location: str  # the build's folder or Hub location, for messages
    paths: tuple[str, ...]
    sha256: tuple[str, ...]
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class BuildImage:
    """One image of a build, read where it is called (`harness.api.ImageRef.load`)."""

    files: BuildFiles
    sha256: str  # what its bytes must hash to
    column: str | None = None  # an image column of the rows; None: the build's image table, by sha256
    row: int = 0  # the row of the split's files (its source row, not a document number)
    index: int = 0  # the image's place in the row's list
    folder: str | None = None  # where an image stored by path is read from (inside it only)
    allowed: str | None = None  # where the folder's links may lead (a Hub snapshot's repo cache)
    size: tuple[int, int] | None = None  # (width, height) as its row declares it, checked against its header

    def __call__(self) -> bytes:
        if self.column is None:
            data = _opened(self.files, table=True).data(self.sha256)
        else:
            split = _opened(self.files, table=False)
            folder = Path(self.folder) if self.folder else None
            column = ImageColumn(split, self.column, [self.row], folder, Path(self.allowed) if self.allowed else None)
            data = column.read(0, self.index)
        check_image_bytes(data, self.sha256)
        return check_image_size(data, self.size, self.sha256) if self.size is not None else data


@lru_cache(maxsize=256)
def _files(files: tuple[DataFile, ...], location: str) -> BuildFiles:
    """One `BuildFiles` per set of opened files, so that a batch's images share it (pickled once)."""
    return BuildFiles(
        location, tuple(str(f.path) for f in files), tuple(f.sha256 for f in files), tuple(f.size for f in files)
    )


def locate(ref: ImageRef) -> BuildImage | None:
    """Where `ref`'s bytes lie in its build, for another process to read them; None for an image that is not read
    straight from a build (made by a task's hook, scaled by an input policy, given in code)."""
    load = ref.load
    if not isinstance(load, RowImage):
        return None
    column = load.column
    if isinstance(column, ImageColumn):
        split = column.split
        return BuildImage(
            _files(tuple(split.files), split.location),
            ref.sha256,
            column.column,
            column.source_row(load.doc_id),
            load.index,
            str(column.folder) if column.folder is not None else None,
            str(column.allowed) if column.allowed is not None else None,
            load.size,
        )
    if isinstance(column, SharedImageColumn) and column.files is not None:
        return BuildImage(_files(tuple(column.files), column.location), ref.sha256, size=load.size)
    return None


# The readers this process opened, by the files they read: a replica opens each build once.
_READERS: dict[tuple[BuildFiles, bool], Any] = {}
_LOCK = threading.Lock()


def _verified(files: BuildFiles) -> list[DataFile]:
    """`files` opened, mapped and hashed in this process; ValueError unless they are the files the driver verified."""
    opened = open_files([Path(p) for p in files.paths])
    for file, sha256, size in zip(opened, files.sha256, files.sizes, strict=True):
        if file.sha256 != sha256 or file.size != size:
            raise ValueError(
                f"{file.path}: sha256 {file.sha256[:16]}... ({file.size} bytes) here, {sha256[:16]}... "
                f"({size} bytes) where the run verified it; the nodes do not see the same build"
            )
    return opened


def _opened(files: BuildFiles, table: bool) -> Any:
    """A `SplitFiles` (or, `table`, an `ImageTable`) over `files`, opened once per process."""
    key = (files, table)
    with _LOCK:
        if key not in _READERS:
            opened = _verified(files)
            _READERS[key] = image_table(opened, files.location) if table else SplitFiles(opened, files.location)
        return _READERS[key]


def unreadable(files: BuildFiles) -> str | None:
    """Why this process cannot read `files` as the driver verified them (not at the same path, or other bytes); None
    when it can (they are then open, mapped and hashed here)."""
    try:
        _verified(files)
    except Exception as err:  # a missing file is a UserError from `open_files`; other bytes a ValueError
        return f"{type(err).__name__}: {err}"
    return None
