"""A config's content hash as its build's manifest states it (`content_sha256`: the sha256 of its rows' digests as
the builder wrote them, `contract.row_digest`), computed again from the rows of the files a run verified: how a run
knows a journal written before issue 99 is of the data it reads.

Until issue 99 a run recorded its data (a journal header's `task.dataset`, the results' `fingerprint`) as the
manifest's `content_sha256` of the config, read from the manifest; since, as `files:` and the sha256 of the files it
read (`harness.inputs.data.files_fingerprint`). The manifest's statement proves nothing of the rows (a manifest whose
file hashes were rewritten still states it), so an earlier journal is taken as this run's data only where the rows
read now hash to its value (`earlier_data`): the same rows, whichever version wrote the journal. Every column is
read but the images' bytes (their path alone is hashed); a float32 column holds the builder's float cast, read back at
its shortest repr (0.2, not 0.20000000298023224), as builders write such values. Where that repr is not what the
builder wrote, the rows hash otherwise and the journal is refused: only the hash decides, so no other data passes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import pyarrow as pa

from builders.core import contract
from harness.inputs.data import LoadedDataset
from harness.inputs.integrity import DataFile

EARLIER = re.compile(r"[0-9a-f]{64}")  # a manifest's content_sha256: a run's data as recorded before issue 99
BATCH_ROWS = 1024


def _float32_as(kind: pa.DataType, to: pa.DataType) -> pa.DataType:
    """`kind` with every float32 in it (at any depth) made `to`."""
    if pa.types.is_float32(kind):
        return to
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_float32_as(field.type, to)) for field in kind])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        item = kind.value_field.with_type(_float32_as(kind.value_type, to))
        if pa.types.is_fixed_size_list(kind):
            return pa.list_(item, kind.list_size)
        return pa.large_list(item) if pa.types.is_large_list(kind) else pa.list_(item)
    return kind


def _as_written(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with each float32 value as the float its shortest repr is (through text, as pyarrow prints it)."""
    schema = batch.schema
    texted = pa.schema([f.with_type(_float32_as(f.type, pa.string())) for f in schema])
    if texted.equals(schema):
        return batch
    return batch.cast(texted).cast(pa.schema([f.with_type(_float32_as(f.type, pa.float64())) for f in schema]))


def rows_content_sha256(files: Sequence[DataFile]) -> str:
    """The manifest's `content_sha256` of a config whose rows are those of `files` (read from the hashed bytes, in
    order), as the builder computed it; ValueError where the rows cannot be read or digested as a builder's."""
    digest = hashlib.sha256()
    try:
        for file in files:
            parquet = file.parquet()
            leaves = [parquet.schema.column(i).path for i in range(len(parquet.schema))]
            images = [leaf for leaf in leaves if leaf.startswith(f"{contract.IMAGES}.") and leaf.endswith(".path")]
            columns = [name for name in parquet.schema_arrow.names if name != contract.IMAGES] + images[:1]
            for batch in parquet.iter_batches(BATCH_ROWS, columns=columns, use_threads=False):
                for row in _as_written(batch).to_pylist():
                    digest.update(contract.row_digest(row))
            file.check_unchanged()
    except (pa.ArrowException, OSError, TypeError, KeyError) as err:
        raise ValueError(f"its rows cannot be read as a builder wrote them ({type(err).__name__}: {err})") from None
    return digest.hexdigest()


def earlier_data(data: LoadedDataset | None, recorded: object) -> str | None:
    """Whether `recorded`, a journal's data fingerprint, names `data`: None where it does (it is `data`'s fingerprint,
    or of the form before issue 99 and the rows `data` read hash to it: `rows_content_sha256`); "" where it is of the
    form now (simply another data); else why its earlier form is not shown to be `data`."""
    if data is not None and recorded == data.fingerprint:
        return None
    if data is None or not isinstance(recorded, str) or not EARLIER.fullmatch(recorded):
        return ""
    said = f"its data was recorded as the build manifest's content hash {recorded[:12]}... (its form before issue 99)"
    if not data.verified or data.split is None:
        return f"{said}, and this run's data is not a verified build: its rows cannot be shown to be that data"
    try:
        now = rows_content_sha256(data.split.files)
    except ValueError as err:
        return f"{said}, and {data.location}: {err}"
    if now != recorded:
        return (
            f"{said}, and the rows of {data.location} read now hash to {now[:12]}... (float32 values at their "
            "shortest repr): they cannot be shown to be that data"
        )
    return None
