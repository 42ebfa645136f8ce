"""One split's rows, read with pyarrow from the data files the harness opened and hashed (`harness.inputs.integrity`):
no `datasets` Arrow cache, no second copy of a file.

The rows' text and number columns are read a piece at a time (`SplitFiles.batches`: a row group, or a part of a large
one), so that a caller keeps only the rows it uses; each piece a pyarrow Table with the `datasets` features (the
files' `huggingface` schema metadata) in its metadata as `datasets` writes them, so that a `datasets.Dataset` made of
it (where a task's `process_docs` takes one: `harness.running.task.process_docs`) reads them as `datasets` would;
nothing here imports `datasets`. A row group is read only when Parquet's own count of its columns' decoded bytes (the
file's metadata, read before a row is) is within `ROW_GROUP_MOST`. Image columns are not read: their bytes are read
from the file's row group when a request's batch runs (`ImageColumn`, through `builders.core.contract.ParquetColumn`),
and how many images each row holds comes from the image structs' `path` leaf (a row group's at a time), without a
byte of the images. A build that stores its images once is read the same way through its image table
(`SharedImageColumn`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builders.core import contract
from harness.errors import UserError
from harness.inputs import declared_columns
from harness.inputs.declared_columns import HF_METADATA, features_metadata, hf_features, is_image_feature
from harness.inputs.integrity import DataFile, check_image_bytes, check_image_size, resolve_inside

if TYPE_CHECKING:
    import pyarrow.parquet as pq

# Each row's position in the split's files: kept through `process_docs` (which may select rows), so that a
# document finds its images; dropped from what the hooks render and score.
SOURCE_ROW = "__source_row__"
# An image a row names by path inside its build (`Image()` with a path): at most what any release's image may hold.
IMAGE_MOST = 256 * contract.MiB
# The columns of one row group read at once (its text and numbers; an image column), as decoded (Parquet's count): the
# builders write row groups of about 64 MiB (`builders.core.parquet_writer.ROW_GROUP_BYTES`); a cell larger than this
# is refused before it is read.
ROW_GROUP_MOST = 512 * contract.MiB
# A larger row group is read in pieces of about this many decoded bytes (Parquet's count, which a column that repeats
# its values counts small), and of at most this many rows.
PIECE_BYTES, PIECE_ROWS = 64 * contract.MiB, 65_536


def _image_leaf(schema: Any, column: str) -> str:
    """The cheapest leaf of an image column (its `path`), whose levels still say how many images a row has."""
    leaves = [schema.column(i).path for i in range(len(schema)) if schema.column(i).path.startswith(f"{column}.")]
    return next((leaf for leaf in leaves if leaf.endswith(".path")), leaves[0] if leaves else column)


class SplitFiles:
    """The opened Parquet files of one split: their rows without image columns as a pyarrow Table, and readers of
    the image columns."""

    def __init__(self, files: list[DataFile], location: str, verified: bool = False) -> None:
        """`verified`: files a build manifest vouches for, which declare their features and the contract's columns
        as `builders build` writes them (`harness.inputs.declared_columns`)."""
        self.files = files
        self.location = location
        self.verified = verified
        try:
            self.parquet = [f.parquet() for f in files]
            schema = self.parquet[0].schema_arrow
        except (pa.ArrowException, ValueError, OSError) as err:
            raise UserError(f"{location}: cannot read {files[0].path} as Parquet: {err}") from None
        self.features = hf_features(schema, str(files[0].path))
        for file, pf in zip(files[1:], self.parquet[1:], strict=True):
            if not pf.schema_arrow.equals(schema):
                raise UserError(f"{location}: {file.path} has other columns than {files[0].path}")
            if hf_features(pf.schema_arrow, str(file.path)) != self.features:
                raise UserError(f"{location}: {file.path} declares other features than {files[0].path}")
        if verified and not self.features:
            raise UserError(
                f"{files[0].path}: declares no features (the {HF_METADATA.decode()} schema metadata `builders build` "
                "writes), so its columns cannot be checked"
            )
        if self.features:
            contract_features = contract.row_feature_dicts() if verified else {}
            declared_columns.check_schema(schema, self.features, str(files[0].path), contract_features)
        self.columns = schema.names
        self.image_columns = [name for name, feature in self.features.items() if is_image_feature(feature)]
        self._counts: dict[tuple[str, int], list[int]] = {}  # by column and row group (`_starts`)
        self._within: set[tuple[str, int]] = set()  # image columns' row groups checked against `ROW_GROUP_MOST`
        self._starts: list[tuple[int, int, int]] = []  # each row group's first row in the split, file and number
        first = 0
        for number, pf in enumerate(self.parquet):
            for group in range(pf.metadata.num_row_groups):
                self._starts.append((first, number, group))
                first += pf.metadata.row_group(group).num_rows
        self._readers: dict[str, contract.ParquetColumn] = {}
        self._listed: dict[str, bool] = {}

    def where(self, row: int, first: int = 0) -> str:
        """The file row `first + row` of the split lies in, and its row there (0 the first)."""
        row += first
        for file, pf in zip(self.files, self.parquet, strict=True):
            if row < pf.metadata.num_rows:
                return f"{file.path}: row {row}"
            row -= pf.metadata.num_rows
        return f"{self.location}: row {row}"

    @property
    def num_rows(self) -> int:
        return sum(pf.metadata.num_rows for pf in self.parquet)

    def batches(self, read_as_text: Mapping[str, str] | None = None) -> Iterator[pa.Table]:
        """The rows in order, a piece at a time (at least one piece, empty where there are none), image columns left
        out, each with its `SOURCE_ROW` and their features (`with_features`); the contract's columns (of a verified
        build) and those a task reads as text (`read_as_text`: column -> the task's key) checked value by value
        (`declared_columns.check_values`). A row group is read only within `ROW_GROUP_MOST` (`_check_size`)."""
        names = [n for n in self.columns if n not in self.image_columns]
        expected = declared_columns.contract_values(names) if self.verified else {}
        for name, key in (read_as_text or {}).items():
            if name in names:
                first = str(self.files[0].path)
                expected[name] = declared_columns.read_as_text(self.features, name, key, first)
        kept = {n: self.features[n] for n in names if n in self.features}
        metadata = features_metadata(kept and {**kept, SOURCE_ROW: {"dtype": "int64", "_type": "Value"}})
        start = 0
        for file, pf in zip(self.files, self.parquet, strict=True):
            for group in range(pf.metadata.num_row_groups):
                rows = pf.metadata.row_group(group).num_rows
                decoded = self._decoded(pf, group, names, start)
                piece = max(1, min(rows, PIECE_ROWS, PIECE_BYTES * rows // max(1, decoded)))
                try:
                    for batch in pf.iter_batches(piece, row_groups=[group], columns=names, use_threads=False):
                        file.check_unchanged()  # the rows came from the hashed bytes, not from a file rewritten since
                        table = pa.Table.from_batches([batch])
                        declared_columns.check_values(table, expected, partial(self.where, first=start))
                        yield _with_rows(table, start).replace_schema_metadata(metadata)
                        start += table.num_rows
                except (pa.ArrowException, OSError) as err:
                    raise UserError(f"{self.where(start)}: cannot read the rows from here: {err}") from None
                except ValueError as err:  # `check_unchanged`
                    raise UserError(str(err)) from None
        if start == 0:
            yield _with_rows(self.parquet[0].schema_arrow.empty_table().select(names), 0).replace_schema_metadata(
                metadata
            )

    def _decoded(self, pf: pq.ParquetFile, group: int, names: list[str], start: int) -> int:
        """The decoded bytes of the columns `names` in row group `group` of `pf` (the split's rows from `start`), as
        the file's metadata counts them; a `UserError` naming the largest column where they pass `ROW_GROUP_MOST`."""
        meta = pf.metadata.row_group(group)
        sizes = dict.fromkeys(names, 0)
        for i in range(meta.num_columns):
            chunk = meta.column(i)
            name = chunk.path_in_schema.split(".")[0]
            if name in sizes:
                sizes[name] += chunk.total_uncompressed_size
        if sum(sizes.values()) > ROW_GROUP_MOST:
            column = max(sizes, key=lambda n: sizes[n])
            rows = "" if meta.num_rows == 1 else f" and the {meta.num_rows - 1:,} after it in its row group"
            raise UserError(
                f"{self.where(start)}{rows}: column {column!r} holds {sizes[column] / contract.MiB:,.1f} MiB decoded "
                f"(Parquet's count), past the {contract.size_text(ROW_GROUP_MOST)} the harness reads of one row group "
                "at once; nothing of it was read"
            )
        return sum(sizes.values())

    def count(self, column: str, row: int) -> int:
        """How many images `row`'s cell of `column` holds, from the row group that holds it (read once, its `path`
        leaf alone: no image bytes)."""
        place = self._group_of(row)
        first, file, group = self._starts[place]
        if (column, place) not in self._counts:
            pf = self.parquet[file]
            values = pf.read_row_group(group, columns=[_image_leaf(pf.schema, column)], use_threads=False).column(0)
            if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
                counts = [n or 0 for n in pc.list_value_length(values).to_pylist()]  # a null list holds none
            else:
                counts = pc.cast(values.is_valid(), pa.int8()).to_pylist()
            self._counts[(column, place)] = counts
        return self._counts[(column, place)][row - first]

    def _group_of(self, row: int) -> int:
        """The row group (its place in `_starts`) that holds the split's `row`."""
        return bisect.bisect_right(self._starts, (row, len(self.parquet))) - 1

    def _image_group(self, column: str, row: int) -> None:
        """A ValueError (its sample `invalid_input`) where the row group holding `row` stores more of the image column
        `column` than `ROW_GROUP_MOST` (Parquet's count, from the file's metadata): `contract.ParquetColumn` reads an
        image column a row group at a time."""
        place = self._group_of(row)
        if (column, place) not in self._within:
            first, file, group = self._starts[place]
            try:
                self._decoded(self.parquet[file], group, [column], first)
            except UserError as err:
                raise ValueError(str(err)) from None
            self._within.add((column, place))

    def cell(self, column: str, row: int) -> pa.Scalar:
        """The cell of the image column `column` in `row`, as a pyarrow scalar (`Image(decode=False)`'s fields)."""
        self._image_group(column, row)
        return self.reader(column).cell(row)

    def reader(self, column: str) -> contract.ParquetColumn:
        if column not in self._readers:
            self._readers[column] = contract.ParquetColumn(
                self.parquet,
                column,
                before_read=lambda i: self.files[i].check_unchanged(),
                maps=[f.mapping for f in self.files],
            )
        return self._readers[column]

    def image_bytes(self, column: str, row: int, index: int) -> bytes | None:
        """The bytes of image `index` of `row` (read straight from the mapping where the file stores them
        plainly); None for an image stored by path."""
        if column not in self._listed:  # `schema_arrow` builds the schema again on every call
            self._listed[column] = pa.types.is_list(self.parquet[0].schema_arrow.field(column).type)
        self._image_group(column, row)
        return self.reader(column).image_bytes(row, index if self._listed[column] else None)


def _with_rows(table: pa.Table, start: int) -> pa.Table:
    """`table` with each row's `SOURCE_ROW`, the first `start`: from numpy's buffer, since `pa.array`, like pyarrow's
    every conversion of Python or NumPy values, imports pandas where it is installed (~0.3 s of a run that needs
    none)."""
    positions = pa.py_buffer(np.arange(start, start + table.num_rows, dtype=np.int64))
    return table.append_column(SOURCE_ROW, pa.Array.from_buffers(pa.int64(), table.num_rows, [None, positions]))


def source_rows(docs: pa.Table, task: str) -> list[int]:
    """Each document's row in the split's files, read once (an Arrow column looked up document by document costs
    microseconds per image read)."""
    if SOURCE_ROW not in docs.column_names:
        raise UserError(
            f"task {task!r}: process_docs dropped the column {SOURCE_ROW!r}, which finds each "
            "document's images; keep it"
        )
    return docs.column(SOURCE_ROW).to_pylist()  # not `to_numpy`, which imports pandas


@dataclass(frozen=True, eq=False)
class ImageColumn:
    """Reads one encoded image of one document on demand, from its row group of the memory-mapped file.

    Only the bytes of the asked-for image are copied out; nothing is decoded here. An image stored by path
    (no bytes) is read from that path only inside the data folder (`folder`; `allowed`: where its links may lead).
    """

    split: SplitFiles
    column: str
    rows: list[int]  # each document's row in the split's files (`source_rows`)
    folder: Path | None
    allowed: Path | None = None

    def __post_init__(self) -> None:
        if self.column not in self.split.image_columns:
            names = ", ".join(self.split.columns)
            raise UserError(f"image column {self.column!r} not in the dataset (columns: {names})")

    def source_row(self, doc_id: int) -> int:
        """The document's row in the split's files."""
        return int(self.rows[doc_id])

    def count(self, doc_id: int) -> int:
        return self.split.count(self.column, int(self.rows[doc_id]))

    def value(self, doc_id: int) -> Any:
        """The cell as `Image(decode=False)` gives it (`{"bytes", "path"}`, or a list of them)."""
        return self.split.cell(self.column, int(self.rows[doc_id])).as_py()

    def read(self, doc_id: int, index: int) -> bytes:
        row = int(self.rows[doc_id])
        data = self.split.image_bytes(self.column, row, index)
        if data is None:
            cell = self.split.cell(self.column, row)
            item = cell.values[index] if isinstance(cell, pa.ListScalar | pa.LargeListScalar) else cell
            path = item["path"].as_py() if "path" in item.type.names else None
            if not path or self.folder is None:
                raise ValueError(f"image {index} of row {row} has neither bytes nor a path")
            data = contract.read_regular(resolve_inside(self.folder, path, self.allowed), IMAGE_MOST, "an image file")
        return data


class SharedImageColumn:
    """The images of rows that name theirs by `image_sha256`, read from the build's image table on demand."""

    def __init__(
        self,
        docs: pa.Table,
        table: contract.ImageTable,
        files: list[DataFile] | None = None,
        location: str = "",
    ) -> None:
        if contract.IMAGE_SHA256 not in docs.column_names:
            raise UserError(
                f"the rows have no {contract.IMAGE_SHA256!r} column to find their images by "
                f"(columns: {', '.join(docs.column_names)})"
            )
        self._hashes = docs.column(contract.IMAGE_SHA256)
        self._table = table
        self.column = contract.IMAGES
        self.files = files  # the image table's opened files (where another process finds its images: `build_images`)
        self.location = location
        self._last: tuple[int, list[str]] = (-1, [])  # the row read last: its images are read one after another

    def _row(self, doc_id: int) -> list[str]:
        last = self._last
        if last[0] != doc_id:
            last = self._last = (doc_id, self._hashes[doc_id].as_py() or [])
        return last[1]

    def count(self, doc_id: int) -> int:
        return len(self._row(doc_id))

    def value(self, doc_id: int) -> Any:
        return [{"bytes": self.read(doc_id, i), "path": None} for i in range(self.count(doc_id))]

    def read(self, doc_id: int, index: int) -> bytes:
        return self._table.data(self._row(doc_id)[index])


class RowImage:
    """The load of one image of one document (`harness.api.ImageRef.load`): its bytes from the column, checked against
    the sha256 its row declares where it declares one. A class, not a closure, so that a Ray pool can tell where the
    bytes lie (`harness.inputs.build_images.locate`) and let its replicas read them themselves."""

    __slots__ = ("column", "doc_id", "index", "declared", "size")

    def __init__(
        self,
        column: ImageColumn | SharedImageColumn,
        doc_id: int,
        index: int,
        declared: str | None,
        size: tuple[int, int] | None = None,
    ) -> None:
        self.column = column
        self.doc_id = doc_id
        self.index = index
        self.declared = declared
        self.size = size  # (width, height), as its row's `image_sizes` declares it

    def __call__(self) -> bytes:
        data = self.column.read(self.doc_id, self.index)
        if self.declared is not None:
            check_image_bytes(data, self.declared)
        return check_image_size(data, self.size, self.declared) if self.size is not None else data


def image_table(files: list[DataFile], location: str) -> contract.ImageTable:
    """The image table of a shared-storage build, from its opened (and hashed) files."""
    for file in files:
        try:
            schema = file.parquet().schema_arrow
        except (pa.ArrowException, ValueError, OSError) as err:
            raise UserError(f"{location}: cannot read {file.path} as Parquet: {err}") from None
        declared = hf_features(schema, str(file.path))
        if not declared:
            raise UserError(f"{file.path}: declares no features (the {HF_METADATA.decode()} schema metadata)")
        declared_columns.check_schema(schema, declared, str(file.path), contract.image_table_feature_dicts())
    try:
        return contract.ImageTable(
            [f.parquet() for f in files],
            location,
            before_read=lambda i: files[i].check_unchanged(),
            maps=[f.mapping for f in files],
        )
    except (pa.ArrowException, ValueError, KeyError, OSError) as err:
        raise UserError(
            f"{location}: cannot read the image table ({contract.IMAGE_TABLE_CONFIG}): {type(err).__name__}: {err}"
        ) from None
