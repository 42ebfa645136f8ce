"""Reading a build's images without a copy: one Parquet column read row group by row group (image bytes straight
from the memory-mapped file, where the builders stored them plainly), a shared-storage build's image table by
sha256, and a row's PIL images whatever the storage (`load_images`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from builders.core.contract.location import parse_hub_location
from builders.core.contract.manifest import MANIFEST_NAME, split_files
from builders.core.contract.regular_files import open_regular
from builders.core.contract.schema import ID, IMAGE_SHA256, IMAGE_TABLE_CONFIG, IMAGE_TABLE_SPLIT, IMAGES

# Row groups of image bytes kept in memory per column reader, where an image's place in the file cannot be known
# (a compressed column): rows read in order, or rows that share images, are served from memory.
ROW_GROUP_CACHE_BYTES = 512 * 1024 * 1024


class _ByteLocations:
    """Where each image's bytes lie in one row group of a memory-mapped Parquet file, so that reading an image
    copies its own bytes and nothing else.

    The builders write image bytes uncompressed and PLAIN-encoded: each value is stored whole, after its 4-byte
    length, in row order. The row group is decoded once, each value found in the column chunk's byte range right
    after the previous one and compared byte for byte with the decoded value; the decoded copy is then dropped.
    """

    def __init__(self, mapping: Any, first: list[int], offsets: list[int], lengths: list[int]) -> None:
        self._map = mapping
        self._first = first  # per row: index of its first value (a list column), or of its value; len(rows) + 1
        self._offsets = offsets  # per value: where its bytes start in the file, -1 for a null
        self._lengths = lengths

    @classmethod
    def find(cls, mapping: Any, chunk: Any, values: Any) -> _ByteLocations | None:
        """The locations of `values` (the row group's decoded column: structs with `bytes`, or lists of them)
        in `chunk`'s byte range of `mapping`; None where the chunk does not store them plainly."""
        import pyarrow as pa

        if (
            chunk.compression != "UNCOMPRESSED"
            or chunk.has_dictionary_page
            or not set(chunk.encodings) <= {"PLAIN", "RLE", "BIT_PACKED"}
        ):  # RLE, BIT_PACKED: the levels
            return None
        first, blobs = [0], []
        for part in values.chunks:
            if pa.types.is_list(part.type) or pa.types.is_large_list(part.type):
                offsets = part.offsets.to_pylist()
                first += [first[-1] + (b - offsets[0]) for b in offsets[1:]]
                blobs.append(part.flatten().field("bytes"))
            else:
                first += range(first[-1] + 1, first[-1] + 1 + len(part))
                blobs.append(part.field("bytes"))
        at, end = chunk.data_page_offset, chunk.data_page_offset + chunk.total_compressed_size
        locations: list[int] = []
        lengths: list[int] = []
        for blob in (b for part in blobs for b in part):
            if not blob.is_valid:
                locations.append(-1)
                lengths.append(0)
                continue
            data = blob.as_py()
            found = mapping.find(len(data).to_bytes(4, "little") + data[:32], at, end)
            if found < 0 or mapping[found + 4 : found + 4 + len(data)] != data:  # whole, byte for byte
                return None
            locations.append(found + 4)
            lengths.append(len(data))
            at = found + 4 + len(data)
        return cls(mapping, first, locations, lengths)

    def data(self, row: int, index: int | None) -> bytes | None:
        value = self._first[row] + (index or 0)
        if index is not None and not 0 <= index < self._first[row + 1] - self._first[row]:
            raise IndexError(f"image {index} of a row of {self._first[row + 1] - self._first[row]}")
        start = self._offsets[value]
        return None if start < 0 else self._map[start : start + self._lengths[value]]


class ParquetColumn:
    """One column of a split stored as Parquet files, read when one of its rows is asked for: the column's bytes
    are never all in memory, and nothing is converted or copied to disk.

    `files` are opened `pyarrow.parquet.ParquetFile`s and `maps` the memory mappings they read (`mmap.mmap`, or
    None where there is none). An image column (structs with `bytes`) stored plainly, as the builders write it, is
    read image by image straight from the mapping (`image_bytes`, `_ByteLocations`); any other column, a row
    group at a time, the last ones kept up to `ROW_GROUP_CACHE_BYTES`. `before_read(i)` is called before anything
    is read from `files[i]` (the harness checks there that the file is still the one it verified). Safe to share
    between threads (a backend may read images from several).
    """

    def __init__(
        self,
        files: Sequence[Any],
        column: str,
        budget_bytes: int | None = None,
        before_read: Any = None,
        maps: Sequence[Any] | None = None,
    ) -> None:
        import threading
        from collections import OrderedDict

        self.column = column
        self._files = list(files)
        self._maps = list(maps) if maps is not None else [None] * len(self._files)
        self._budget = budget_bytes or ROW_GROUP_CACHE_BYTES
        self._before_read = before_read or (lambda file: None)
        self._starts: list[int] = []  # first row of each row group, over all files
        self._groups: list[tuple[int, int]] = []  # (file, row group)
        rows = 0
        for i, file in enumerate(self._files):
            for group in range(file.metadata.num_row_groups):
                self._starts.append(rows)
                self._groups.append((i, group))
                rows += file.metadata.row_group(group).num_rows
        self.num_rows = rows
        self._cache: OrderedDict[int, Any] = OrderedDict()
        self._cached_bytes = 0
        self._located: dict[int, _ByteLocations | None] = {}
        self._lock = threading.Lock()

    def _place(self, row: int) -> tuple[int, int]:
        import bisect

        if not 0 <= row < self.num_rows:
            raise IndexError(f"row {row} of {self.num_rows}")
        group = bisect.bisect_right(self._starts, row) - 1
        return group, row - self._starts[group]

    def cell(self, row: int) -> Any:
        """The value of `row` as a pyarrow scalar."""
        group, local = self._place(row)
        return self._group(group)[local]

    def image_bytes(self, row: int, index: int | None = None) -> bytes | None:
        """The `bytes` of the image struct of `row` (its `index`-th one, for a list column); None when it has
        none (an image stored by path)."""
        group, local = self._place(row)
        locations = self._locations(group)
        if locations is not None:
            self._before_read(self._groups[group][0])
            return locations.data(local, index)
        cell = self._group(group)[local]
        item = cell.values[index] if index is not None else cell
        return item["bytes"].as_py()

    def _chunk(self, group: int) -> Any:
        """The metadata of the column chunk of the image bytes in `group`, or None."""
        file, index = self._groups[group]
        meta = self._files[file].metadata.row_group(index)
        paths = (f"{self.column}.bytes", f"{self.column}.list.element.bytes")
        return next((meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema in paths), None)

    def _locations(self, group: int) -> _ByteLocations | None:
        with self._lock:
            if group not in self._located:
                file, index = self._groups[group]
                chunk = self._chunk(group)
                located = None
                if self._maps[file] is not None and chunk is not None:
                    self._before_read(file)
                    values = self._files[file].read_row_group(index, columns=[self.column]).column(0)
                    located = _ByteLocations.find(self._maps[file], chunk, values)
                self._located[group] = located
            return self._located[group]

    def _group(self, group: int) -> Any:
        with self._lock:
            if group in self._cache:
                self._cache.move_to_end(group)
                return self._cache[group]
            file, index = self._groups[group]
            self._before_read(file)
            values = self._files[file].read_row_group(index, columns=[self.column]).column(0)
            self._cache[group] = values
            self._cached_bytes += values.nbytes
            while self._cached_bytes > self._budget and len(self._cache) > 1:
                _, dropped = self._cache.popitem(last=False)
                self._cached_bytes -= dropped.nbytes
            return values


class ImageTable:
    """The image table of a shared-storage build, read lazily: sha256 -> encoded bytes.

    Only the sha256 column is read up front (to index it); an image's bytes are read from its Parquet file's
    row group when asked for (`ParquetColumn`).
    """

    def __init__(
        self, files: Sequence[Any], location: str, before_read: Any = None, maps: Sequence[Any] | None = None
    ) -> None:
        self.location = location
        self._row: dict[str, int] = {}
        for file in files:
            for sha in file.read(columns=["sha256"]).column(0).to_pylist():
                self._row.setdefault(sha, len(self._row))
        self._images = ParquetColumn(files, "image", before_read=before_read, maps=maps)
        if self._images.num_rows != len(self._row):
            raise ValueError(f"the image table of {location} lists an image twice")

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, sha256: object) -> bool:
        return sha256 in self._row

    def data(self, sha256: str) -> bytes:
        """The encoded bytes of the image with this sha256; KeyError naming it when the table lacks it."""
        if sha256 not in self._row:
            raise KeyError(f"image {sha256} is not in the image table of {self.location}")
        data = self._images.image_bytes(self._row[sha256])
        if data is None:
            raise KeyError(f"image {sha256} of the image table of {self.location} has no bytes")
        return data


_TABLES: dict[tuple[str, str | None], ImageTable] = {}


def _hub_repo(location: str, revision: str | None) -> tuple[str, str | None] | None:
    """(repo id, revision) when `location` names a Hub repo (`hf://ORG/NAME[@REVISION]`, or `ORG/NAME` with a
    revision or that is not a local folder), None for a local folder. A revision given twice must agree."""
    hub = parse_hub_location(location)
    if hub is None:
        return None if revision is None and Path(location).is_dir() else (location, revision)
    if hub.name is None:
        raise ValueError(f"{location!r}: name the dataset repo, hf://ORG/NAME[@REVISION]")
    if hub.revision is not None and revision is not None and hub.revision != revision:
        raise ValueError(f"{location!r} names revision {hub.revision!r}, revision={revision!r} another")
    return f"{hub.org}/{hub.name}", hub.revision or revision


def _image_table_files(location: str, revision: str | None, load_kwargs: Mapping[str, Any]) -> list[str]:
    """The image table's Parquet files of a local build folder, or of a Hub repo (downloaded into the Hub cache:
    `load_kwargs` go to `huggingface_hub.snapshot_download`)."""
    folder = Path(location)
    repo = _hub_repo(location, revision)
    if repo is not None:
        from huggingface_hub import snapshot_download

        folder = Path(
            snapshot_download(
                repo[0],
                repo_type="dataset",
                revision=repo[1],
                allow_patterns=[MANIFEST_NAME, f"{IMAGE_TABLE_CONFIG}/*"],
                **load_kwargs,
            )
        )
    files = split_files(folder, IMAGE_TABLE_CONFIG, IMAGE_TABLE_SPLIT) or sorted(
        str(p) for p in (folder / IMAGE_TABLE_CONFIG).glob(f"{IMAGE_TABLE_SPLIT}-*.parquet")
    )
    if not files:
        raise FileNotFoundError(f"{location} has no image table ({IMAGE_TABLE_CONFIG}/{IMAGE_TABLE_SPLIT}-*.parquet)")
    return files


def image_table(location: str, revision: str | None = None, **load_kwargs: Any) -> ImageTable:
    """One `ImageTable` per (location, revision) per process, its files memory-mapped."""
    import mmap

    import pyarrow as pa
    import pyarrow.parquet as pq

    key = (str(location), revision)
    if key not in _TABLES:
        maps = []
        for path in _image_table_files(str(location), revision, load_kwargs):
            with open_regular(path) as file:  # never waits on a FIFO planted as a data file
                maps.append(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
        files = [pq.ParquetFile(pa.BufferReader(pa.py_buffer(m))) for m in maps]
        _TABLES[key] = ImageTable(files, str(location), maps=maps)
    return _TABLES[key]


def load_images(
    location: str | Path, row: Mapping[str, Any], revision: str | None = None, **load_kwargs: Any
) -> list[Any]:
    """A row's images as PIL images, in prompt order, whatever the build's image storage.

    `location` is the built folder or Hub repo the row was loaded from: a folder, `ORG/NAME`, or
    `hf://ORG/NAME@REVISION` as `--data_dir` takes it (for a Hub repo, `load_kwargs`, e.g. `cache_dir`, go to
    `huggingface_hub.snapshot_download` when the image table is first read):

        ds = datasets.load_dataset("data/mmneedle", "m10_n4_k1", split="test")
        images = load_images("data/mmneedle", ds[0])
        images = load_images("hf://ORG/mmlongbench@v1.0.0", row)
    """
    import io

    from PIL import Image

    embedded = row.get(IMAGES)
    if embedded is not None:
        return [_as_pil(item) for item in embedded]
    table = image_table(str(location), revision, **load_kwargs)
    out = []
    for sha in _hashes(row):
        image = Image.open(io.BytesIO(table.data(sha)))
        image.load()
        out.append(image)
    return out


def _hashes(row: Mapping[str, object]) -> Sequence[str]:
    hashes = row.get(IMAGE_SHA256)
    if not isinstance(hashes, list):
        raise ValueError(f"row {row.get(ID)!r} has neither {IMAGES!r} nor {IMAGE_SHA256!r}")
    return hashes


def _as_pil(item: object) -> Any:
    import io

    from PIL import Image

    if isinstance(item, Mapping):  # Image(decode=False)
        image = Image.open(io.BytesIO(item["bytes"]))
        image.load()
        return image
    return item
