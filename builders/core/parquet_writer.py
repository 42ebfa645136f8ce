"""Streams rows into sharded Parquet files laid out as a Hugging Face dataset repo expects.

One `ShardedParquetWriter` per config writes `<config>/test-00000-of-0000N.parquet`:
- row groups are flushed as they fill (a byte budget), so memory holds one row group at most;
- a shard is closed once it passes the shard byte budget (500 MB, as `push_to_hub`);
- the schema carries the `datasets` feature metadata, so `load_dataset` restores
  `List(Image())` and the other types without reading the README;
- the Parquet options are the ones `datasets` itself writes with: image bytes uncompressed and
  PLAIN-encoded (JPEG does not compress), other columns snappy + dictionary, content-defined
  chunking (so the Hub's Xet storage dedupes repeated images) and a page index.
Nothing depends on time or on the order in which workers finished, so the same rows give
byte-identical files. Each file's sha256 (listed in the manifest) is computed from the bytes as they are
written, not by reading the file back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features
from datasets import config as datasets_config
from datasets.arrow_writer import get_parquet_column_options

ROW_GROUP_BYTES = 64 * 1024 * 1024
SHARD_BYTES = 500 * 1000 * 1000
MAX_ROWS_PER_GROUP = 1000


@dataclass
class WrittenFile:
    path: str  # relative to the dataset folder
    num_bytes: int
    sha256: str


@dataclass
class ConfigResult:
    name: str
    num_rows: int
    files: list[WrittenFile] = field(default_factory=list)
    content_sha256: str = ""

    @property
    def num_bytes(self) -> int:
        return sum(f.num_bytes for f in self.files)


class HashingFile:
    """A binary file that hashes what is written to it: the Parquet writer's sink, so that a written file's
    sha256 costs no second read of it."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close(), called by the Parquet writer
        self._digest = hashlib.sha256()
        self.closed = False

    def write(self, data: bytes | memoryview) -> int:
        self._digest.update(data)
        return self._file.write(data)

    def tell(self) -> int:
        return self._file.tell()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self.closed:
            self._file.close()
            self.closed = True

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


class ShardedParquetWriter:
    """Writes one config's single split; use as a context manager, `write` rows in order."""

    def __init__(
        self,
        dataset_dir: Path,
        config: str,
        features: Features,
        content_digest: Callable[[dict[str, Any]], bytes],
        split: str = "test",
        row_group_bytes: int = ROW_GROUP_BYTES,
        shard_bytes: int = SHARD_BYTES,
    ) -> None:
        self.dataset_dir = dataset_dir
        self.config = config
        self.split = split
        self.features = features
        self.schema = features.arrow_schema
        self._options = get_parquet_column_options(features, self.schema)
        self._content_digest = content_digest
        self._content = hashlib.sha256()
        self._row_group_bytes = row_group_bytes
        self._shard_bytes = shard_bytes
        self._rows: list[dict[str, Any]] = []
        self._rows_bytes = 0
        self._image_bytes: dict[str, ImageByteBuffer] = {}  # one per image column
        self._shard_paths: list[Path] = []
        self._shard_sinks: list[HashingFile] = []
        self._writer: pq.ParquetWriter | None = None
        self._shard_written = 0
        self.num_rows = 0
        (dataset_dir / config).mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> ShardedParquetWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_shard()

    def _open_shard(self, **options: Any) -> None:
        path = self.dataset_dir / self.config / f"{self.split}-{len(self._shard_paths):05d}.partial"
        sink = HashingFile(path)
        self._shard_paths.append(path)
        self._shard_sinks.append(sink)
        self._writer = pq.ParquetWriter(sink, self.schema, **options)

    def _close_shard(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._shard_sinks:
            self._shard_sinks[-1].close()

    def write(self, row: dict[str, Any], nbytes: int) -> None:
        """Add one row; `nbytes` is its approximate size (mostly its image bytes)."""
        self._content.update(self._content_digest(row))
        self._rows.append(row)
        self._rows_bytes += nbytes
        self.num_rows += 1
        if (
            self._rows_bytes >= self._row_group_bytes
            or len(self._rows) >= MAX_ROWS_PER_GROUP
            or self._shard_written + self._rows_bytes >= self._shard_bytes  # the shard is full: close it
        ):
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        table = rows_to_table(self._rows, self.schema, self._image_bytes)
        if self._writer is None:
            self._open_shard(
                use_content_defined_chunking=datasets_config.DEFAULT_CDC_OPTIONS, write_page_index=True, **self._options
            )
            assert self._writer is not None
            self._writer.add_key_value_metadata(
                {"content_defined_chunking": json.dumps(datasets_config.DEFAULT_CDC_OPTIONS)}
            )
            self._shard_written = 0
        self._writer.write_table(table, row_group_size=len(self._rows))
        self._shard_written += self._rows_bytes
        self._rows = []
        self._rows_bytes = 0
        if self._shard_written >= self._shard_bytes:
            self._close_shard()

    def close(self) -> ConfigResult:
        """Flush, close and give the shards their final `-of-N` names."""
        self._flush()
        self._close_shard()
        if not self._shard_paths:  # no rows: still write one (empty) shard so the config loads
            self._open_shard()
            self._close_shard()
        total = len(self._shard_paths)
        result = ConfigResult(self.config, self.num_rows, content_sha256=self._content.hexdigest())
        for i, (partial, sink) in enumerate(zip(self._shard_paths, self._shard_sinks, strict=True)):
            final = partial.with_name(f"{self.split}-{i:05d}-of-{total:05d}.parquet")
            partial.rename(final)
            result.files.append(
                WrittenFile(final.relative_to(self.dataset_dir).as_posix(), final.stat().st_size, sink.hexdigest())
            )
        return result


class ImageByteBuffer:
    """One writable buffer that an image column's bytes in a row group are copied into, reused from one row
    group to the next: a fresh 64 MB allocation per row group costs more in page faults than the copy itself
    (4x, measured in bench/build_mmlongbench.py's store-once floor). A table built on it is valid until the
    next `take`; the writer writes each table before building the next, and keeps one buffer per column."""

    def __init__(self) -> None:
        self._data = bytearray()

    def take(self, blobs: list[bytes]) -> pa.Buffer:
        total = sum(len(blob) for blob in blobs)
        if len(self._data) < total:  # a new buffer, never a resize: a table may still export the old one
            self._data = bytearray(-(-total // (1 << 20)) << 20)  # whole MB: row groups of similar sizes fit
        view = memoryview(self._data)
        at = 0
        for blob in blobs:
            view[at : at + len(blob)] = blob
            at += len(blob)
        return pa.py_buffer(view[:total])


def rows_to_table(
    rows: list[dict[str, Any]], schema: pa.Schema, image_bytes: dict[str, ImageByteBuffer] | None = None
) -> pa.Table:
    """Rows to an Arrow table of `schema`.

    Image columns (`struct<bytes, path>`, and lists of them) are assembled from one byte buffer per column
    (reused from `image_bytes`, keyed by column name, or new ones) and offsets: about 5x faster than
    `Table.from_pylist`, whose per-value appends (and buffer regrowth) dominate a build's write stage when
    rows carry megabytes of JPEG.
    """
    columns = []
    for column in schema:
        values = [row[column.name] for row in rows]
        buffer = image_bytes.setdefault(column.name, ImageByteBuffer()) if image_bytes is not None else None
        if _is_image(column.type):
            columns.append(_image_array(values, column.type, buffer))
        elif pa.types.is_list(column.type) and _is_image(column.type.value_type):
            columns.append(_image_list_array(values, column.type, buffer))
        else:
            columns.append(pa.array(values, type=column.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _is_image(pa_type: pa.DataType) -> bool:
    return (
        pa.types.is_struct(pa_type)
        and [f.name for f in pa_type] == ["bytes", "path"]
        and pa.types.is_binary(pa_type.field("bytes").type)
    )


def _image_list_array(
    values: list[list[dict[str, Any]]], pa_type: pa.ListType, image_bytes: ImageByteBuffer | None
) -> pa.Array:
    struct = _image_array([image for row in values for image in row], pa_type.value_type, image_bytes)
    row_offsets = [0]
    for row in values:
        row_offsets.append(row_offsets[-1] + len(row))
    return pa.ListArray.from_arrays(pa.array(row_offsets, type=pa.int32()), struct, type=pa_type)


def _image_array(images: list[dict[str, Any]], pa_type: pa.StructType, image_bytes: ImageByteBuffer | None) -> pa.Array:
    data = [image["bytes"] for image in images]
    if any(blob is None for blob in data):  # images by path only: nothing to join
        return pa.array(images, type=pa_type)
    byte_offsets = [0]
    for blob in data:
        byte_offsets.append(byte_offsets[-1] + len(blob))
    if byte_offsets[-1] >= 2**31:
        raise ValueError("a row group's image bytes exceed 2 GB; lower the row group budget")
    blobs = pa.Array.from_buffers(
        pa.binary(),
        len(data),
        [
            None,
            pa.array(byte_offsets, type=pa.int32()).buffers()[1],
            image_bytes.take(data) if image_bytes is not None else pa.py_buffer(b"".join(data)),
        ],
    )
    paths = pa.array([image["path"] for image in images], type=pa.string())
    return pa.StructArray.from_arrays([blobs, paths], fields=list(pa_type))
