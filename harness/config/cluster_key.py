"""`cluster_key:` in a task's YAML (lmms-eval's name): the row columns that say which rows share an item, so that
standard errors count an item once however many rows ask it (`harness.uncertainty`, docs/statistics.md).

Three forms:

    cluster_key: source_id                   # one column: rows with the same value are one cluster
    cluster_key: [dataset, source_id]        # several: the values together are the key
    cluster_key:                             # a crossed design: a key, and list columns whose values link rows
      key: [subset, sample_id]               #   (optional) as above
      overlap: image_sha256                  #   a column or a list of them; rows sharing any value are linked

A row's keys are strings namespaced by the task's `dataset_path` (its benchmark), so that the ids of two benchmarks
never merge while the same item of one benchmark merges across its tasks (an MMLongBench source id at 8K and at
128K, a LoCoVQA item at every context length): `mmlongbench:{"dataset":"viquae","source_id":"viquae_0"}`. A key
column that is null or empty in a row gives that row no key from it (the row stands alone); a column the rows lack
is an error naming the YAML line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import TaskConfigError

FORMS = "a column name, a list of column names, or a mapping with `key:` and/or `overlap:` (column names)"


@dataclass(frozen=True)
class ClusterKey:
    """A task's `cluster_key:`: the key columns, the overlap columns, and where the YAML wrote it."""

    columns: tuple[str, ...]
    overlap: tuple[str, ...] = ()
    where: str = ""  # "file:line" of `cluster_key:`

    def to_yaml(self) -> str | list[str] | dict[str, list[str]]:
        """The YAML form it was read from (the results' `configs` record it so)."""
        if self.overlap:
            return {**({"key": list(self.columns)} if self.columns else {}), "overlap": list(self.overlap)}
        return self.columns[0] if len(self.columns) == 1 else list(self.columns)

    def keys(self, namespace: str, row: Mapping[str, object]) -> list[str]:
        """The row's cluster keys (see the module's docstring); a `TaskConfigError` naming the YAML line when the row
        lacks a column."""
        missing = [c for c in (*self.columns, *self.overlap) if c not in row]
        if missing:
            raise TaskConfigError(
                f"{self.where}: `cluster_key` names {', '.join(repr(c) for c in missing)}, which the task's rows lack "
                f"(they have: {', '.join(sorted(map(str, row))[:30])})"
            )
        out: list[str] = []
        values = [row[c] for c in self.columns]
        if self.columns and all(_present(v) for v in values):
            out.append(_key(namespace, dict(zip(self.columns, values, strict=True))))
        for column in self.overlap:
            value = row[column]
            items = value if isinstance(value, list | tuple) else [value]
            out.extend(_key(namespace, {column: item}) for item in items if _present(item))
        return list(dict.fromkeys(out))


def _present(value: object) -> bool:
    return value is not None and value != "" and value != [] and value != ()


def _key(namespace: str, values: Mapping[str, object]) -> str:
    return f"{namespace}:" + json.dumps(values, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _columns(value: object, where: str, what: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise TaskConfigError(f"{where}: `cluster_key`{what} must be {FORMS}; got {str(value)[:80]!r}")
    if len(set(names)) != len(names):
        raise TaskConfigError(f"{where}: `cluster_key`{what} names a column twice: {names}")
    return tuple(names)


def parse_cluster_key(value: object, where: str) -> ClusterKey | None:
    """`cluster_key:` as written at `where` ("file:line"); None for null. A bad value is one line naming the file
    and line and the forms it may take."""
    if value is None:
        return None
    if isinstance(value, dict):
        unknown = sorted(str(k) for k in value if k not in ("key", "overlap"))
        if unknown or not value:
            raise TaskConfigError(
                f"{where}: `cluster_key` mapping takes `key:` and `overlap:` only"
                + (f", not {', '.join(unknown)}" if unknown else ", and neither is given")
            )
        columns = _columns(value["key"], where, ".key") if "key" in value else ()
        overlap = _columns(value["overlap"], where, ".overlap") if "overlap" in value else ()
        both = set(columns) & set(overlap)
        if both:
            raise TaskConfigError(f"{where}: `cluster_key` names {', '.join(sorted(both))} as a key and an overlap")
        return ClusterKey(columns, overlap, where)
    return ClusterKey(_columns(value, where, ""), (), where)
