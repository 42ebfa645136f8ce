"""The text columns of a journal index (sample ids, statuses, cluster keys), held by Arrow: one buffer per column, not
a Python object per row, so a journal of a million samples is tens of MB in memory, not GBs. Item `i` reads as the
Python value the pages show (a `str`, a tuple of keys); whole-column work (membership, sorting, lookup) runs in Arrow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CLUSTER = pa.list_(pa.string())


def _rows(rows: Any) -> pa.Array:
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
    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return Texts(self.array[row])
        return self.array[int(row)].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self.array.to_pylist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Texts):
            return self.array.equals(other.array)
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def take(self, rows: Any) -> Texts:
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
    """Each row's cluster keys, as a list column of the strings its record named (`keys` reads one row's)."""

    def __init__(self, array: pa.Array | pa.ChunkedArray | None = None) -> None:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        self.array: pa.Array = pa.array([], CLUSTER) if array is None else array

    def __len__(self) -> int:
        return len(self.array)

    @overload
    def __getitem__(self, row: int) -> tuple[str, ...]: ...
    @overload
    def __getitem__(self, row: slice) -> Clusters: ...
    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return Clusters(self.array[row])
        return cluster_keys(self.array[int(row)].as_py())

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return (cluster_keys(value) for value in self.array.to_pylist())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def take(self, rows: Any) -> Clusters:
        return Clusters(self.array.take(_rows(rows)))

    def rows_with(self, keys: Iterable[str]) -> np.ndarray:
        """The rows naming any of `keys`, in order."""
        flat = self.array.flatten()
        if not len(flat):
            return np.zeros(0, np.int64)
        hit = np.asarray(pc.is_in(flat, value_set=pa.array(list(keys), pa.string())).fill_null(False), bool)
        parents = pc.list_parent_indices(self.array).to_numpy()
        return np.unique(parents[hit]).astype(np.int64)


def cluster_keys(value: object) -> tuple[str, ...]:
    """A record's `cluster` as the keys it names: its strings, once each (anything else in it is no key)."""
    return tuple(dict.fromkeys(k for k in value if isinstance(k, str))) if isinstance(value, list) else ()


def concat(columns: Sequence[Texts]) -> Texts:
    arrays = [c.array for c in columns]
    return Texts(pa.concat_arrays(arrays) if arrays else pa.array([], pa.string()))


def concat_clusters(columns: Sequence[Clusters]) -> Clusters:
    arrays = [c.array for c in columns]
    return Clusters(pa.concat_arrays(arrays) if arrays else None)
