"""One streaming pass over a journal, for its index (`sample_index.build_index`): the file is read in blocks of whole
lines (`BLOCK`, grown to hold one line up to `safe_files.LINE_MOST`; a longer line is passed by in bounded reads), and
each block's lines are parsed by Arrow's JSON reader with a schema of the index's fields alone (a block it refuses: line
by line with the harness's own rules). Each block is cut down at once to its sample records of the task and their
small fields, so memory holds one block and the columns kept, never the file: a journal of a million samples (GBs
with its records' image lists) is indexed in some hundreds of MB.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from harness.api import STATUSES
from harness.running.journal.journal_file import parse_line, record_problem
from harness.view.samples.safe_files import LINE_MOST, METRICS_MOST
from harness.view.samples.text_columns import CLUSTER

MiB = 1 << 20
BLOCK = 16 * MiB  # a block read at once: lines up to this length are read in one go
PROBED_LINES = 200  # sample records read first to learn the metrics' names
NEWLINE = ord("\n")


@dataclass
class Block:
    """Complete lines of the journal: their bytes, and each line's start (in the file) and length."""

    data: bytes
    offset: int  # where `data` starts in the file
    starts: np.ndarray  # in `data`
    lengths: np.ndarray


def blocks(fd: int, size: int) -> Iterator[Block | int]:
    """The file's complete lines, a block at a time; an int for each line past `LINE_MOST` (its length), passed by
    unread. A last line without its newline was cut short by a kill: no line yet."""
    position = 0
    while position < size:
        data = os.pread(fd, min(BLOCK, size - position), position)
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) == BLOCK:  # one line longer than a block: read it whole when within the bound
            data = os.pread(fd, min(LINE_MOST + 1, size - position), position)
            end = data.find(b"\n") + 1
            if end == 0 and len(data) == LINE_MOST + 1:
                stop = _next_newline(fd, position + len(data), size)
                if stop < 0:
                    return
                yield stop - position
                position = stop + 1
                continue
        if end == 0:
            return
        body = np.frombuffer(data, np.uint8, end)
        stops = np.flatnonzero(body == NEWLINE)
        starts = np.concatenate(([0], stops[:-1] + 1)).astype(np.int64)
        yield Block(data[:end] if end < len(data) else data, position, starts, (stops - starts).astype(np.int64))
        position += end


def _next_newline(fd: int, position: int, size: int) -> int:
    while position < size:
        data = os.pread(fd, min(BLOCK, size - position), position)
        found = data.find(b"\n")
        if found >= 0:
            return position + found
        position += len(data)
    return -1


def read_line(line: bytes) -> object:
    """A journal line's JSON value, or None where it cannot be read (`parse_line`'s reasons, or a number past
    Python's 4,300-digit limit for int(str), which it raises as a ValueError)."""
    try:
        value, _ = parse_line(line)
    except ValueError:
        return None
    return value


def probe_metrics(fd: int, size: int, task: str) -> list[str]:
    """The numeric metrics of the first sample records, in their order."""
    names: dict[str, None] = {}
    seen = 0
    for block in blocks(fd, size):
        if isinstance(block, int):
            continue
        for start, length in zip(block.starts.tolist(), block.lengths.tolist(), strict=True):
            record = read_line(block.data[start : start + length]) if length <= LINE_MOST else None
            if isinstance(record, dict) and record_problem(record, task) is None:
                for name, value in (record.get("metrics") or {}).items():
                    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
                        if len(names) < METRICS_MOST:
                            names.setdefault(name)
                seen += 1
                if seen >= PROBED_LINES:
                    return list(names)
    return list(names)


def arrow_can_read(block: Block) -> bool:
    """Whether Arrow's JSON reader may be given these lines: each within the bound (it reads what it is given at
    once) and each a JSON object by its first byte (pyarrow 26 crashes the process on a line that is `null`)."""
    if not len(block.starts):
        return True
    if int(block.lengths.max()) > LINE_MOST or int(block.lengths.min()) == 0:
        return False
    return bool(np.all(np.frombuffer(block.data, np.uint8)[block.starts] == ord("{")))


def columns_by_arrow(block: Block, metrics: list[str]) -> dict[str, Any] | None:
    """The index's fields of every line of the block, parsed by Arrow; None when the reader refuses a line."""
    schema = pa.schema(
        [
            ("type", pa.string()),
            ("task", pa.string()),
            ("doc_id", pa.int64()),
            ("sample_id", pa.string()),
            ("status", pa.string()),
            ("token_count", pa.float64()),
            ("truncation", pa.struct([("rule", pa.string())])),
            ("metrics", pa.struct([(name, pa.float64()) for name in metrics] or [("_", pa.float64())])),
            ("cluster", CLUSTER),
        ]
    )
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=False)
    longest = int(block.lengths.max()) + 1 if len(block.lengths) else 1
    reading = pj.ReadOptions(block_size=max(MiB, min(longest, LINE_MOST + 1)))
    try:
        table = pj.read_json(pa.BufferReader(block.data), read_options=reading, parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(block.starts):
        return None
    texts = ("type", "task", "sample_id", "status", "cluster")
    out: dict[str, Any] = {name: table.column(name).combine_chunks() for name in texts}
    for name in ("doc_id", "token_count"):
        out[name] = _floats(table.column(name).combine_chunks())
    out["truncated"] = np.asarray(table.column("truncation").is_valid(), bool)
    metric_struct = table.column("metrics").combine_chunks()
    for name in metrics:
        out[f"metric:{name}"] = _floats(metric_struct.field(name))
    return out


def _floats(array: pa.Array) -> np.ndarray:
    """A numeric column as floats, NaN where a row has none. An integer past 2**53 (a doc id of a journal from
    anyone) is rounded as `as_float` rounds it, not refused by Arrow's safe cast."""
    floats = array.cast(pa.float64(), safe=False)
    return np.asarray(floats.fill_null(math.nan).to_numpy(zero_copy_only=False), np.float64)


def columns_by_line(block: Block, metrics: list[str]) -> dict[str, Any]:
    """The same fields, one line at a time (a block Arrow refuses); a line that is no JSON object gives Nones, a field
    of the wrong type None."""
    texts: dict[str, list[str | None]] = {name: [] for name in ("type", "task", "sample_id", "status")}
    numbers: dict[str, list[float]] = {
        name: [] for name in ("doc_id", "token_count", *(f"metric:{m}" for m in metrics))
    }
    truncated: list[bool] = []
    clusters: list[list[str] | None] = []
    for start, length in zip(block.starts.tolist(), block.lengths.tolist(), strict=True):
        record = read_line(block.data[start : start + length]) if length <= LINE_MOST else None  # past it: skipped
        record = record if isinstance(record, dict) else {}
        for name, column in texts.items():
            column.append(record.get(name) if isinstance(record.get(name), str) else None)
        numbers["doc_id"].append(as_float(record.get("doc_id")))
        numbers["token_count"].append(as_float(record.get("token_count")))
        truncated.append(record.get("truncation") is not None)
        cluster = record.get("cluster")
        clusters.append([k for k in cluster if isinstance(k, str)] if isinstance(cluster, list) else None)
        scores = record.get("metrics")
        scores = scores if isinstance(scores, dict) else {}
        for name in metrics:
            numbers[f"metric:{name}"].append(as_float(scores.get(name)))
    out: dict[str, Any] = {name: pa.array(column, pa.string()) for name, column in texts.items()}
    out["cluster"] = pa.array(clusters, CLUSTER)
    out["truncated"] = np.asarray(truncated, bool)
    out.update({name: np.asarray(column, np.float64) for name, column in numbers.items()})
    return out


def as_float(value: object) -> float:
    """A JSON number as a float; NaN for anything else, and for an integer too large for a float."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.nan


def sample_rows(columns: dict[str, Any], task: str) -> tuple[np.ndarray, np.ndarray]:
    """(the lines that are sample records of `task` the index keeps, the lines that are no header and not kept)."""
    import pyarrow.compute as pc

    def equal(name: str, value: str) -> np.ndarray:
        return np.asarray(pc.equal(columns[name], value).fill_null(False), bool)

    doc_ids = columns["doc_id"]
    kept = (
        equal("type", "sample")
        & equal("task", task)
        & np.asarray(columns["sample_id"].is_valid(), bool)
        & ~np.isnan(doc_ids)
        & (doc_ids == np.floor(doc_ids))
        & np.asarray(pc.is_in(columns["status"], value_set=pa.array(list(STATUSES))).fill_null(False), bool)
    )
    return np.flatnonzero(kept), np.flatnonzero(~kept & ~equal("type", "header"))
