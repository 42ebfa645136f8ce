"""The sample table of one task's journal, `journal_<task>.jsonl`: a small index in memory, never the prompts.

A journal of 1,000,000 samples is a GB and more (its records' image lists; from before the prompt store, written with
`--log_samples`, far more, mostly prompts). The index keeps, per sample (its latest record, as the harness reads a
journal), only what the table filters and sorts by: doc id, sample id, status, every numeric metric, the prompt's
token count, whether it was truncated or failed, its cluster keys (`cluster`: rows sharing one are the same item, a
sample page's siblings; kept as a hash of each key, the keys read from the row's line), and where its line is in the
file: numbers in numpy arrays, texts in Arrow columns (`text_columns`), some 130 bytes a sample. It is built by one
streaming pass over the journal (`journal_columns`). A page reads only its rows' records (`record`: a seek to the line
and a read of its length). No line past `safe_files.LINE_MOST` is parsed (it counts as no sample record), and no more
than `JOURNAL_LINES_MOST` lines are indexed (the page says so).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from builders.core import contract
from harness.api import SCORED, STATUSES
from harness.running.task.judge_log import JUDGE_LINE_MOST, JudgedValue, JudgeLog, judge_metrics_of
from harness.view.samples.journal_columns import (
    Block,
    arrow_can_read,
    blocks,
    columns_by_arrow,
    columns_by_line,
    probe_metrics,
    read_line,
    sample_rows,
)
from harness.view.samples.safe_files import JOURNAL_LINES_MOST
from harness.view.samples.text_columns import HASHES, Clusters, Texts, hashed_clusters

# What the table's status filter offers: each journal status, plus the verdicts of a scored answer by the
# chosen metric (full marks or not) and the samples the task's rule truncated.
RIGHT, WRONG, TRUNCATED = "right", "wrong", "truncated"
SHOWS = ("all", RIGHT, WRONG, *STATUSES, TRUNCATED)
JudgeLine = tuple[Path, int, int]  # a row's line of its judge log: the log, the line's offset and length


def natural_key(text: str) -> tuple[int, float, str]:
    """A value's place in a sorted column: numbers by value, before text."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


@dataclass
class SampleIndex:
    """One row per sample: its latest record's small fields, and where that record's line is."""

    path: Path
    stamp: tuple[int, int]  # the journal's size and mtime when indexed
    sample_ids: Texts = field(default_factory=Texts)
    doc_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    statuses: Texts = field(default_factory=Texts)
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # NaN: not recorded
    truncated: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # name -> value per row (NaN: none)
    clusters: Clusters = field(default_factory=Clusters)  # each row's cluster keys (none recorded: empty)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    skipped: int = 0  # lines that are no sample record of the task (cut short, not JSON, another shape)
    problem: str | None = None  # why the journal was not read (not a regular file inside the results folder)
    limited: str | None = None  # why only part of it was indexed (more lines than any run writes)
    judge_log: Path | None = None  # the judge log joined (`add_judged`)
    judge_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # each row's line in it
    judge_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # 0: no line adds metrics
    judge_stamp: tuple[int, int] = (0, 0)  # the judge log's size and mtime when indexed; (0, 0): none
    _doc_order: np.ndarray | None = field(default=None, repr=False)
    _partners: dict[int, tuple[SampleIndex, np.ndarray]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return len(self.sample_ids)

    def record(self, row: int) -> dict[str, Any]:
        """The whole journal record of one row (read from its line alone; the journal is append-only), with its
        judge's metrics (`add_judged`)."""
        return read_record(self.journal_of(row), int(self.offsets[row]), int(self.lengths[row]), self.judge_line(row))

    def journal_of(self, row: int) -> Path:
        """The journal that holds the row's record."""
        return self.path

    def judge_line(self, row: int) -> JudgeLine | None:
        """Where the row's judge metrics are (`add_judged`); None: nowhere."""
        log, length = self.judge_log_of(row), int(self.judge_lengths[row]) if len(self.judge_lengths) else 0
        return (log, int(self.judge_offsets[row]), length) if log is not None and length else None

    def judge_log_of(self, row: int) -> Path | None:
        """The judge log that holds the row's judge metrics, if any."""
        return self.judge_log

    def task_of(self, row: int) -> str | None:
        """The row's task where the index holds several (`groups.GroupIndex`); None: one task's index."""
        return None

    def row_values(self, axis: list[tuple[str, ...]], row: int) -> tuple[str, ...]:
        """The row's values on an axis given per document (none for a doc id the data does not have)."""
        doc = int(self.doc_ids[row])
        return axis[doc] if 0 <= doc < len(axis) else ()

    def cluster_of(self, row: int) -> object:
        """The `cluster` of the row's record, read from its line (the index keeps its keys' hashes alone)."""
        return self.record(row).get("cluster")

    def doc_order(self) -> np.ndarray:
        """The rows by (doc id, sample id), as the pairing of two runs orders them; computed once."""
        with self._lock:
            if self._doc_order is None:
                table = pa.table({"doc": pa.array(self.doc_ids), "sample": self.sample_ids.array})
                order = pc.sort_indices(table, sort_keys=[("doc", "ascending"), ("sample", "ascending")])
                self._doc_order = order.to_numpy().astype(np.int64)
            return self._doc_order

    def rows_in(self, other: SampleIndex) -> np.ndarray:
        """For each row, the row of `other` with its sample id (-1: none); kept while both indexes stand (a hash
        join of a million ids is most of a second)."""
        with self._lock:
            found = self._partners.get(id(other))
            if found is None or found[0] is not other:
                rows = pc.index_in(self.sample_ids.array, value_set=other.sample_ids.array)
                found = self._partners[id(other)] = (other, np.asarray(rows.fill_null(-1).to_numpy(), np.int64))
            return found[1]

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
        scored = self.statuses.isin(SCORED)
        values = self.metrics.get(metric or "", np.full(len(self), math.nan))
        if show in (RIGHT, WRONG):
            full = values >= self.full_marks(metric or "") - 1e-9
            keep &= scored & ~np.isnan(values) & (full if show == RIGHT else ~full)
        elif show == TRUNCATED:
            keep &= self.truncated
        elif show in STATUSES:
            keep &= self.statuses.isin([show])
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

    def _by_doc(self, per_doc: np.ndarray, missing: bool | float | str) -> np.ndarray:
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
                by_value = sorted(range(len(per_doc)), key=lambda d: [natural_key(m) for m in per_doc[d]])
                ranks[by_value] = np.arange(len(per_doc))  # numbers by value, then text
                ranks[[d for d, members in enumerate(per_doc) if not members]] = math.nan  # no value: last
                values = self._by_doc(ranks, math.nan)[rows]
            else:
                values = (self.metrics[key] if key in self.metrics else self.tokens)[rows]
            missing = np.isnan(values)
            sortable = np.where(missing, 0.0, -values if descending else values)
            return rows[np.lexsort((sortable, missing))]
        if key in ("sample", "status"):
            texts = self.sample_ids if key == "sample" else self.statuses
            return texts.sorted_rows(np.asarray(rows, np.int64), descending)
        by_doc = rows[np.argsort(self.doc_ids[rows], kind="stable")]
        return by_doc[::-1] if descending else by_doc


def judge_metrics_at(judge: JudgeLine, record: dict[str, Any]) -> dict[str, JudgedValue]:
    """The judge's metrics of `record` from its judge log's line (`add_judged` found where); none where the line is
    no longer that sample's (the log replaced)."""
    log, offset, length = judge
    try:
        with contract.open_regular(log) as handle:
            line = JudgeLog(log).judge_line(os.pread(handle.fileno(), min(length, JUDGE_LINE_MOST), offset))
    except OSError:
        return {}
    if line is None or line["sample_id"] != str(record.get("sample_id")):
        return {}
    return judge_metrics_of(line, record.get("doc_id"), record.get("status"))


def read_record(path: Path, offset: int, length: int, judge: JudgeLine | None = None) -> dict[str, Any]:
    """The record of the line at `offset`, `length` bytes long, with its judge's metrics beside its own where
    `judge` says where they are (`add_judged`); {} where it is no longer one (the file replaced)."""
    try:
        with contract.open_regular(path) as handle:
            value = read_line(os.pread(handle.fileno(), length, offset))
    except OSError:  # replaced by something else since it was indexed
        return {}
    if not isinstance(value, dict):
        return {}
    metrics = judge_metrics_at(judge, value) if judge is not None else {}
    if metrics and isinstance(value.get("metrics"), dict):
        value["metrics"] = {**value["metrics"], **metrics}
    return value


@dataclass
class _Kept:
    """The sample records of the task found so far, each block's cut down to the index's fields."""

    metrics: list[str]
    texts: dict[str, list[pa.Array]] = field(default_factory=lambda: {"sample_id": [], "status": [], "cluster": []})
    numbers: dict[str, list[np.ndarray]] = field(default_factory=dict)
    lines: int = 0  # lines read
    skipped: int = 0

    def add(self, block: Block, task: str) -> None:
        columns = columns_by_arrow(block, self.metrics) if arrow_can_read(block) else None
        if columns is None:
            columns = columns_by_line(block, self.metrics)
        rows, others = sample_rows(columns, task)
        self.skipped += len(others)
        taken = pa.array(rows, pa.int64())
        for name, pieces in self.texts.items():
            found = columns[name].take(taken)
            pieces.append(hashed_clusters(found) if name == "cluster" else found)
        numbers = {
            "doc_id": columns["doc_id"][rows],
            "token_count": columns["token_count"][rows],
            "truncated": columns["truncated"][rows],
            "offset": block.offset + block.starts[rows],
            "length": block.lengths[rows],
            **{f"metric:{m}": columns[f"metric:{m}"][rows] for m in self.metrics},
        }
        for name, values in numbers.items():
            self.numbers.setdefault(name, []).append(values)

    def taken(self, name: str, rows: np.ndarray, kind: pa.DataType) -> pa.ChunkedArray:
        """The `rows` of a text column, taken from its blocks' pieces (no whole copy first); the pieces let go."""
        pieces = self.texts.pop(name)
        return pa.chunked_array(pieces, kind).take(pa.array(rows, pa.int64()))

    def column(self, name: str, dtype: npt.DTypeLike) -> np.ndarray:
        return joined(self.numbers.get(name, []), dtype)


def joined(pieces: Sequence[np.ndarray], dtype: npt.DTypeLike) -> np.ndarray:
    return np.concatenate(pieces).astype(dtype) if pieces else np.zeros(0, dtype)


def build_index(path: Path, task: str) -> SampleIndex:
    """Index a journal (see the module's docstring); an empty index when there is none, or when it is no regular
    file (then `problem` says so)."""
    try:
        handle = contract.open_regular(path)
    except FileNotFoundError:
        return SampleIndex(path, (0, 0))
    except OSError as err:
        return SampleIndex(path, (0, 0), problem=f"{path.name}: {err.strerror or err}")
    with handle:
        stat = os.fstat(handle.fileno())
        index = SampleIndex(path, (stat.st_size, stat.st_mtime_ns))
        fd, size = handle.fileno(), stat.st_size
        kept = _Kept(probe_metrics(fd, size, task))
        for block in blocks(fd, size):
            if kept.lines >= JOURNAL_LINES_MOST:
                index.limited = f"only its first {JOURNAL_LINES_MOST:,} lines are indexed (more than any run writes)"
                break
            if isinstance(block, int):  # a line past the bound: no sample record
                kept.lines += 1
                kept.skipped += 1
                continue
            room = JOURNAL_LINES_MOST - kept.lines
            if len(block.starts) > room:
                index.limited = f"only its first {JOURNAL_LINES_MOST:,} lines are indexed (more than any run writes)"
                block = Block(block.data, block.offset, block.starts[:room], block.lengths[:room])
            kept.lines += len(block.starts)
            kept.add(block, task)
    _latest(index, kept)
    hand_back()  # or the next journal's build (on another thread) adds its peak to what this pass freed
    return index


def _trim() -> Callable[[int], object] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


MALLOC_TRIM = _trim()


def hand_back() -> None:
    """What an index build or a page's array work freed (a million-row join, sort or mask), handed back to the
    system: Arrow's allocator and C's keep it per thread otherwise, and a viewer of two million-row journals held some
    600 MB more than its indexes (bench/view_million.py)."""
    pa.default_memory_pool().release_unused()
    if MALLOC_TRIM is not None:
        MALLOC_TRIM(0)


def _latest(index: SampleIndex, kept: _Kept) -> None:
    """Each sample's latest record (a later record replaces an earlier), by doc id, samples of one document in the
    order they first appear."""
    sample_ids = Texts(pa.chunked_array(kept.texts.pop("sample_id"), pa.string()))
    doc_ids = kept.column("doc_id", np.float64)
    # Each sample id's number in the order ids first appear (Arrow's dictionary encoding numbers them so), and the
    # line of its last record.
    first = sample_ids.array.dictionary_encode().indices.to_numpy().astype(np.int64)
    rows = np.full(int(first.max()) + 1 if len(first) else 0, -1, np.int64)
    np.maximum.at(rows, first, np.arange(len(first), dtype=np.int64))
    del first
    rows = rows[np.lexsort((np.arange(len(rows)), doc_ids[rows]))]
    index.sample_ids = sample_ids.take(rows)
    del sample_ids  # the index's own copy alone is kept
    index.doc_ids = doc_ids[rows].astype(np.int64)
    index.statuses = Texts(kept.taken("status", rows, pa.string()))
    index.tokens = kept.column("token_count", np.float64)[rows]
    index.truncated = kept.column("truncated", bool)[rows]
    index.metrics = {name: kept.column(f"metric:{name}", np.float64)[rows] for name in kept.metrics}
    index.clusters = Clusters(kept.taken("cluster", rows, HASHES), index.cluster_of)
    index.offsets, index.lengths = kept.column("offset", np.int64)[rows], kept.column("length", np.int64)[rows]
    index.judge_offsets, index.judge_lengths = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    index.skipped = kept.skipped


def axis_members(value: object) -> tuple[str, ...]:
    """An axis value as the filter matches it: a list gives each element; None nothing."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(m for item in value for m in axis_members(item))
    if isinstance(value, float):  # float32 columns (depths) read back as 0.20000000298023224: shown as 0.2
        return (str(int(value)),) if value.is_integer() else (f"{value:.6g}",)
    return (str(value),)
