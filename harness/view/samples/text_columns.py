"""The text columns of a journal index (sample ids, statuses; cluster keys by their hashes), held by Arrow: one buffer per column, not
a Python object per row, so a journal of a million samples is tens of MB in memory, not GBs. Item `i` reads as the
Python value the pages show (a `str`, a tuple of keys); whole-column work (membership, sorting, lookup) runs in Arrow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CLUSTER = pa.list_(pa.string())
HASHES = pa.list_(pa.uint64())
PRIME, LENGTH_MIX = 1099511628211, 0x9E3779B97F4A7C15  # FNV's 64-bit prime; the golden ratio's bits


def _rows(rows: np.ndarray | Sequence[int]) -> pa.Array:
    return pa.array(np.asarray(rows, np.int64), pa.int64())


class Texts(Sequence[str]):
    """A column of strings (None where a row has none)."""

    def __init__(self, array: pa.Array | pa.ChunkedArray | Iterable[str | None] = ()) -> None:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        self.array: pa.Array = array if isinstance(array, pa.Array) else pa.array(list(array), pa.string())

    def __len__(self) -> int:
        return len(self.array)

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> Texts: ...
    def __getitem__(self, row: int | slice) -> str | Texts:
        if isinstance(row, slice):
            return Texts(self.array[row])
        return self.array[int(row)].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self.array.to_pylist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Texts):
            return self.array.equals(other.array)
        return isinstance(other, Sequence) and list(self) == list(other)

    def take(self, rows: np.ndarray | Sequence[int]) -> Texts:
        return Texts(self.array.take(_rows(rows)))

    def isin(self, values: Iterable[str]) -> np.ndarray:
        """Per row, whether it is one of `values` (a row without a value is not)."""
        found = pc.is_in(self.array, value_set=pa.array(list(values), pa.string()))
        return np.asarray(found.fill_null(False).to_numpy(zero_copy_only=False), bool)

    def find(self, value: str) -> int | None:
        """The first row holding `value`, or None."""
        row = pc.index(self.array, pa.scalar(value, pa.string())).as_py()
        return None if row < 0 else int(row)

    def sorted_rows(self, rows: np.ndarray, descending: bool) -> np.ndarray:
        """`rows` ordered by their text (code point order, as Python's), stably either way."""
        order = pc.sort_indices(
            self.array.take(_rows(rows)), sort_keys=[("", "descending" if descending else "ascending")]
        )
        return rows[order.to_numpy()]


class Clusters(Sequence[tuple[str, ...]]):
    """Each row's cluster keys, held as a 64-bit hash of each key (`key_hashes`: 8 bytes a key, where the keys
    themselves, MMNeedle's image hashes in JSON, are some 100), the keys read from the row's own record when asked
    (`keys_of`). `rows_with` finds the rows by hash; a caller keeps those whose keys, read, share one."""

    def __init__(
        self, hashes: pa.Array | pa.ChunkedArray | None = None, keys_of: Callable[[int], object] | None = None
    ) -> None:
        if isinstance(hashes, pa.ChunkedArray):
            hashes = hashes.combine_chunks()
        self.hashes: pa.Array = pa.array([], HASHES) if hashes is None else hashes
        self.keys_of = keys_of  # a row's record's `cluster` value

    def __len__(self) -> int:
        return len(self.hashes)

    @overload
    def __getitem__(self, row: int) -> tuple[str, ...]: ...
    @overload
    def __getitem__(self, row: slice) -> Sequence[tuple[str, ...]]: ...
    def __getitem__(self, row: int | slice) -> tuple[str, ...] | Sequence[tuple[str, ...]]:
        if isinstance(row, slice):
            return [self[i] for i in range(len(self))[row]]
        return cluster_keys(self.keys_of(int(row))) if self.keys_of is not None else ()

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return (self[row] for row in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def rows_with(self, keys: Iterable[str]) -> np.ndarray:
        """The rows holding the hash of any of `keys`, in order (each to be checked by its keys: a hash may collide)."""
        flat, parents = _flat(self.hashes)
        if not len(flat):
            return np.zeros(0, np.int64)
        hit = np.isin(flat.to_numpy(), key_hashes(pa.array(list(keys), pa.string())))
        return np.unique(parents[hit]).astype(np.int64)


def _flat(lists: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A list column's values, in order, and the row each belongs to (from its offsets: a taken or sliced list column
    may hold values no row refers to)."""
    offsets = lists.offsets.to_numpy().astype(np.int64)
    counts = np.diff(offsets)
    values = lists.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])) if len(offsets) else lists.values
    return values, np.repeat(np.arange(len(lists), dtype=np.int64), counts)


def key_hashes(keys: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string of `keys` (a polynomial over its UTF-8 bytes, with its length), in array work."""
    keys = keys.cast(pa.large_string())  # 64-bit offsets, read from the array's own slice of them
    offsets = np.frombuffer(keys.buffers()[1], np.int64, len(keys) + 1, keys.offset * 8)
    data = keys.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    raw, offsets = raw[int(offsets[0]) : int(offsets[-1])], offsets - offsets[0]
    lengths = np.diff(offsets)
    powers = np.cumprod(np.full(int(lengths.max(initial=0)) + 1, PRIME, np.uint64), dtype=np.uint64)
    where = np.arange(len(raw), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    sums = np.concatenate((np.zeros(1, np.uint64), np.cumsum(raw.astype(np.uint64) * powers[where], dtype=np.uint64)))
    with np.errstate(over="ignore"):
        return (sums[offsets[1:]] - sums[offsets[:-1]]) ^ (lengths.astype(np.uint64) * np.uint64(LENGTH_MIX))


def hashed_clusters(lists: pa.Array) -> pa.Array:
    """A list column of keys as the list column of their hashes (nulls in it: no key)."""
    flat, parents = _flat(lists)
    valid = np.asarray(flat.is_valid(), bool)
    hashes = key_hashes(flat.fill_null(""))
    counts = np.bincount(parents[valid], minlength=len(lists))
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(hashes[valid], pa.uint64()))


def cluster_keys(value: object) -> tuple[str, ...]:
    """A record's `cluster` as the keys it names: its strings, once each (anything else in it is no key)."""
    return tuple(dict.fromkeys(k for k in value if isinstance(k, str))) if isinstance(value, list) else ()


def concat(columns: Sequence[Texts]) -> Texts:
    arrays = [c.array for c in columns]
    return Texts(pa.concat_arrays(arrays) if arrays else pa.array([], pa.string()))


def concat_clusters(columns: Sequence[Clusters], keys_of: Callable[[int], object]) -> Clusters:
    arrays = [c.hashes for c in columns]
    return Clusters(pa.concat_arrays(arrays) if arrays else None, keys_of)
