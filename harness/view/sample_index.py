"""The sample table of one task's journal, `journal_<task>.jsonl`: a small index in memory, never the prompts.

A journal of 100,000 samples is tens of MB (from before the prompt store, written with `--log_samples`, some 200 MB
and more, mostly prompts). The index keeps, per
sample (its latest record, as the harness reads a journal), only what the table filters and sorts by: doc id,
sample id, status, every numeric metric, the prompt's token count, whether it was truncated or failed, its cluster
keys (`cluster`: rows sharing one are the same item, a sample page's siblings), and where its line starts in the
file. It is parsed by Arrow's JSON reader with a schema of those fields alone (the prompt
and answer are skipped, not turned into Python strings); a journal the reader refuses (a line cut short by a
kill, an odd line) is read line by line with the harness's own rules instead. A record is read whole only when
its row is shown (`record`). No line past `safe_files.LINE_MOST` is parsed (it counts as no sample record), and no
more than `JOURNAL_LINES_MOST` lines are indexed (the page says so).
"""

from __future__ import annotations

import json
import math
import mmap
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.api import SCORED, STATUSES
from harness.running.journal import parse_line, record_problem
from harness.view.safe_files import JOURNAL_LINES_MOST, LINE_MOST, open_regular

# What the table's status filter offers: each journal status, plus the verdicts of a scored answer by the
# chosen metric (full marks or not) and the samples the task's rule truncated.
RIGHT, WRONG, TRUNCATED = "right", "wrong", "truncated"
SHOWS = ("all", RIGHT, WRONG, *STATUSES, TRUNCATED)
PROBED_LINES = 200  # sample records read first to learn the metrics' names


@dataclass
class SampleIndex:
    """One row per sample: its latest record's small fields, and where that record's line is."""

    path: Path
    stamp: tuple[int, int]  # the journal's size and mtime when indexed
    sample_ids: list[str] = field(default_factory=list)
    doc_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    statuses: list[str] = field(default_factory=list)
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # NaN: not recorded
    truncated: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # name -> value per row (NaN: none)
    clusters: list[tuple[str, ...]] = field(default_factory=list)  # each row's cluster keys (none recorded: empty)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    skipped: int = 0  # lines that are no sample record of the task (cut short, not JSON, another shape)
    problem: str | None = None  # why the journal was not read (not a regular file inside the results folder)
    limited: str | None = None  # why only part of it was indexed (more lines than any run writes)

    def __len__(self) -> int:
        return len(self.sample_ids)

    def position(self, sample_id: str) -> int | None:
        try:
            return self.sample_ids.index(sample_id)
        except ValueError:
            return None

    def record(self, row: int) -> dict[str, Any]:
        """The whole journal record of one row (read from its line; the journal is append-only)."""
        try:
            with open_regular(self.path) as handle:
                handle.seek(int(self.offsets[row]))
                value = read_line(handle.read(int(self.lengths[row])))
        except OSError:  # replaced by something else since it was indexed
            return {}
        return value if isinstance(value, dict) else {}

    def full_marks(self, metric: str) -> float:
        """What a fully right answer scores on `metric`: 100 for metrics on the papers' 0-100 scale, else 1."""
        values = self.metrics.get(metric)
        return 100.0 if values is not None and np.nanmax(values, initial=0.0) > 1.0 else 1.0

    def select(
        self,
        show: str = "all",
        metric: str | None = None,
        low: float | None = None,
        high: float | None = None,
        axes: dict[str, list[tuple[str, ...]]] | None = None,
        wanted: dict[str, str] | None = None,
    ) -> np.ndarray:
        """The rows that pass the filters: a status or verdict (`SHOWS`), `metric` within [low, high], and for each
        axis in `wanted` its value. `axes` holds each axis's values per document (a document with several, such as
        K needles' cells, passes on any)."""
        keep = np.ones(len(self), bool)
        statuses = np.asarray(self.statuses, dtype=object)
        scored = np.isin(statuses, list(SCORED))
        values = self.metrics.get(metric or "", np.full(len(self), math.nan))
        if show in (RIGHT, WRONG):
            full = values >= self.full_marks(metric or "") - 1e-9
            keep &= scored & ~np.isnan(values) & (full if show == RIGHT else ~full)
        elif show == TRUNCATED:
            keep &= self.truncated
        elif show in STATUSES:
            keep &= statuses == show
        if low is not None:
            keep &= values >= low
        if high is not None:
            keep &= values <= high
        for label, value in (wanted or {}).items():
            per_doc = (axes or {}).get(label)
            if per_doc is not None:
                hit = np.fromiter((value in members for members in per_doc), bool, len(per_doc))
                keep &= self._by_doc(hit, False)
        return np.flatnonzero(keep)

    def _by_doc(self, per_doc: np.ndarray, missing: Any) -> np.ndarray:
        """A value per row from one per document (`missing` for a doc id the data does not have)."""
        inside = (self.doc_ids >= 0) & (self.doc_ids < len(per_doc))
        if not len(per_doc):
            return np.full(len(self), missing)
        return np.where(inside, per_doc[np.clip(self.doc_ids, 0, len(per_doc) - 1)], missing)

    def order(
        self, rows: np.ndarray, key: str, descending: bool, axes: dict[str, list[tuple[str, ...]]] | None = None
    ) -> np.ndarray:
        """`rows` sorted by a column (`doc`, `sample`, `status`, `tokens`, a metric, or an axis), stably; rows
        without a value last either way."""
        if key in self.metrics or key == "tokens" or key in (axes or {}):
            if key in (axes or {}):
                per_doc = (axes or {})[key]
                ranks = np.empty(len(per_doc), np.float64)
                ranks[sorted(range(len(per_doc)), key=lambda d: _axis_sort_key(per_doc[d]))] = np.arange(len(per_doc))
                ranks[[d for d, members in enumerate(per_doc) if not members]] = math.nan
                values = self._by_doc(ranks, math.nan)[rows]
            else:
                values = (self.metrics[key] if key in self.metrics else self.tokens)[rows]
            missing = np.isnan(values)
            sortable = np.where(missing, 0.0, -values if descending else values)
            return rows[np.lexsort((sortable, missing))]
        if key in ("sample", "status"):
            texts = self.sample_ids if key == "sample" else self.statuses
            ordered = sorted(rows.tolist(), key=lambda i: texts[i], reverse=descending)
            return np.asarray(ordered, dtype=np.int64)
        by_doc = rows[np.argsort(self.doc_ids[rows], kind="stable")]
        return by_doc[::-1] if descending else by_doc


def _axis_sort_key(members: tuple[str, ...]) -> tuple[int, tuple[Any, ...]]:
    """Numbers by value, then text; a sample without a value last."""
    if not members:
        return (1, ())
    return (0, tuple((0, float(m), "") if _is_number(m) else (1, 0.0, m) for m in members))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def line_spans(data: Any, end: int, most: int = JOURNAL_LINES_MOST) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of each complete line in data[:end], the first `most` of them."""
    starts: list[int] = []
    lengths: list[int] = []
    position = 0
    while position < end and len(starts) < most:
        stop = data.find(b"\n", position, end)
        if stop < 0:
            break
        starts.append(position)
        lengths.append(stop - position)
        position = stop + 1
    return np.asarray(starts, np.int64), np.asarray(lengths, np.int64)


def _probe_metrics(data: Any, starts: np.ndarray, lengths: np.ndarray, task: str) -> list[str]:
    """The numeric metrics of the first sample records, in their order."""
    names: dict[str, None] = {}
    seen = 0
    for start, length in zip(starts, lengths, strict=True):
        record = read_line(bytes(data[start : start + length])) if length <= LINE_MOST else None
        if isinstance(record, dict) and record_problem(record, task) is None:
            for name, value in (record.get("metrics") or {}).items():
                if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
                    names.setdefault(name)
            seen += 1
            if seen >= PROBED_LINES:
                break
    return list(names)


def _arrow_can_read(data: mmap.mmap, starts: np.ndarray, lengths: np.ndarray) -> bool:
    """Whether Arrow's JSON reader may be given these lines: each within the bound (it reads what it is given at
    once) and each a JSON object by its first byte (pyarrow 26 crashes the process on a line that is `null`)."""
    if not len(starts):
        return True
    if int(lengths.max()) > LINE_MOST or int(lengths.min()) == 0:
        return False
    return bool(np.all(np.frombuffer(data, np.uint8)[starts] == ord("{")))


def _columns_by_arrow(data: object, end: int, metrics: list[str], lines: int) -> dict[str, list[Any]] | None:
    """The index's fields of every line, parsed by Arrow; None when the reader refuses a line."""
    import pyarrow as pa
    import pyarrow.json as pj

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
            ("cluster", pa.list_(pa.string())),
        ]
    )
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=False)
    try:
        table = pj.read_json(pa.BufferReader(pa.py_buffer(data).slice(0, end)), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != lines:
        return None
    out = {
        name: table.column(name).to_pylist()
        for name in ("type", "task", "doc_id", "sample_id", "status", "token_count", "cluster")
    }
    out["truncated"] = table.column("truncation").is_valid().to_pylist()
    metric_struct = table.column("metrics").combine_chunks()
    for name in metrics:
        out[f"metric:{name}"] = metric_struct.field(name).to_numpy(zero_copy_only=False)
    return out


def _columns_by_line(data: Any, starts: np.ndarray, lengths: np.ndarray, metrics: list[str]) -> dict[str, Any]:
    """The same fields, one line at a time (a journal Arrow refuses); a line that is no JSON object gives Nones,
    a field of the wrong type None."""
    names = ("type", "task", "doc_id", "sample_id", "status", "token_count")
    out: dict[str, list[Any]] = {name: [] for name in (*names, "truncated", "cluster")}
    values: dict[str, list[float]] = {name: [] for name in metrics}
    for start, length in zip(starts, lengths, strict=True):
        record = read_line(bytes(data[start : start + length])) if length <= LINE_MOST else None  # past it: skipped
        record = record if isinstance(record, dict) else {}
        for name in ("type", "task", "sample_id", "status"):
            out[name].append(record.get(name) if isinstance(record.get(name), str) else None)
        for name in ("doc_id", "token_count"):
            value = record.get(name)
            number = as_float(value)
            out[name].append(None if math.isnan(number) else number)
        out["truncated"].append(record.get("truncation") is not None)
        out["cluster"].append(record.get("cluster") if isinstance(record.get("cluster"), list) else None)
        scores = record.get("metrics")
        scores = scores if isinstance(scores, dict) else {}
        for name in metrics:
            value = scores.get(name)
            values[name].append(as_float(value))
    columns: dict[str, Any] = dict(out)
    for name in metrics:
        columns[f"metric:{name}"] = np.asarray(values[name], np.float64)
    return columns


def read_line(line: bytes) -> object:
    """A journal line's JSON value, or None where it cannot be read (`parse_line`'s reasons, or a number past
    Python's 4,300-digit limit for int(str), which it raises as a ValueError)."""
    try:
        value, _ = parse_line(line)
    except ValueError:
        return None
    return value


def as_float(value: object) -> float:
    """A JSON number as a float; NaN for anything else, and for an integer too large for a float."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.nan


def _numbers(values: list[Any]) -> np.ndarray:
    return np.asarray([math.nan if v is None else v for v in values], np.float64)


def build_index(path: Path, task: str) -> SampleIndex:
    """Index a journal (see the module's docstring); an empty index when there is none, or when it is no regular
    file (then `problem` says so)."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return SampleIndex(path, (0, 0))
    except OSError as err:
        return SampleIndex(path, (0, 0), problem=f"{path.name}: {err.strerror or err}")
    with handle:
        stat = os.fstat(handle.fileno())
        index = SampleIndex(path, (stat.st_size, stat.st_mtime_ns))
        if stat.st_size == 0:
            return index
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            end = data.rfind(b"\n") + 1  # a last line without its newline was cut short by a kill
            starts, lengths = line_spans(data, end)
            if len(starts) == JOURNAL_LINES_MOST and starts[-1] + lengths[-1] + 1 < end:
                index.limited = f"only its first {JOURNAL_LINES_MOST:,} lines are indexed (more than any run writes)"
                end = int(starts[-1] + lengths[-1] + 1)
            metrics = _probe_metrics(data, starts, lengths, task)
            columns = (
                _columns_by_arrow(data, end, metrics, len(starts)) if _arrow_can_read(data, starts, lengths) else None
            )
            if columns is None:
                columns = _columns_by_line(data, starts, lengths, metrics)
    kinds = np.asarray(columns["type"], dtype=object)
    doc_ids = _numbers(columns["doc_id"])
    valid = (
        (kinds == "sample")
        & (np.asarray(columns["task"], dtype=object) == task)
        & np.asarray([isinstance(s, str) for s in columns["sample_id"]], bool)
        & ~np.isnan(doc_ids)
        & (doc_ids == np.floor(doc_ids))
        & np.isin(np.asarray(columns["status"], dtype=object), list(STATUSES))
    )
    sample_ids = columns["sample_id"]
    latest = {sample_ids[row]: row for row in np.flatnonzero(valid).tolist()}  # a later record replaces an earlier
    rows = np.fromiter(latest.values(), np.int64, len(latest))
    rows = rows[np.argsort(doc_ids[rows], kind="stable")]
    index.sample_ids = [sample_ids[r] for r in rows.tolist()]
    index.doc_ids = doc_ids[rows].astype(np.int64)
    index.statuses = [columns["status"][r] for r in rows.tolist()]
    index.tokens = _numbers(columns["token_count"])[rows]
    index.truncated = np.asarray(columns["truncated"], bool)[rows]
    index.metrics = {name: np.asarray(columns[f"metric:{name}"], np.float64)[rows] for name in metrics}
    index.clusters = [cluster_keys(columns["cluster"][r]) for r in rows.tolist()]
    index.offsets, index.lengths = starts[rows], lengths[rows]
    index.skipped = int(np.count_nonzero(~valid & (kinds != "header")))
    return index


def cluster_keys(value: object) -> tuple[str, ...]:
    """A record's `cluster` as the keys it names: its strings, once each (anything else in it is no key)."""
    return tuple(dict.fromkeys(k for k in value if isinstance(k, str))) if isinstance(value, list) else ()


def axis_members(value: object) -> tuple[str, ...]:
    """An axis value as the filter matches it: a list gives each element; None nothing."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(m for item in value for m in axis_members(item))
    if isinstance(value, float):  # float32 columns (depths) read back as 0.20000000298023224: shown as 0.2
        return (str(int(value)),) if value.is_integer() else (f"{value:.6g}",)
    return (str(value),)


def axis_values(values: Sequence[object]) -> list[tuple[str, ...]]:
    """An axis's values per document as the filter matches them."""
    return [axis_members(value) for value in values]


def dumps_record(record: Mapping[str, object]) -> str:
    return json.dumps(record, indent=1, ensure_ascii=False, default=str)
