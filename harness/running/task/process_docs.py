"""`process_docs`, the hook that picks a task's rows, under either of two contracts: lm-eval's, whose hook takes and
returns a `datasets.Dataset`, and a pyarrow Table's, for a hook whose first parameter is annotated `pyarrow.Table`
(the benchmarks' own). `datasets` is imported only for a hook of the first kind: a run whose tasks need none imports
none (about 0.8 s of a run's start).

A Table's hook is given the split a piece at a time as it is read (`harness.running.task.rows.read_docs`): it keeps or
drops each row by what the row holds; lm-eval's the whole split, as its contract has it.

The rows are a pyarrow Table either way (`harness.inputs.parquet_split.SplitFiles.batches`), their features in its
`huggingface` schema metadata as `datasets` writes them: the Dataset a hook is given is made of that Table, and the
Table of the Dataset it returns carries the returned features, so the documents read the same through either contract
(`row_decoder`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import pyarrow as pa

from harness.inputs.build_files import datasets_quiet
from harness.inputs.declared_columns import hf_features, with_features
from harness.running.task.hook import TaskHook, call_hook

RowDecoder = Callable[[dict[str, Any]], dict[str, Any]]  # a row as Arrow gives it -> the row as `datasets` does

# The features whose values are Arrow's own Python values (what `datasets` formats a row as, undecoded).
PLAIN_FEATURES = frozenset({"Value", "ClassLabel", "List", "LargeList", "Sequence"})


@lru_cache(maxsize=64)
def takes_table(func: Callable[..., object]) -> bool:
    """Whether a hook's first parameter is annotated `pyarrow.Table`."""
    try:
        first = next(iter(inspect.signature(func, eval_str=True).parameters.values()))
    except Exception:  # no parameter, or an annotation that does not evaluate: not a Table's hook
        return False
    return first.annotation is pa.Table


def journal_source(func: Callable[..., object]) -> str | None:
    """A Table's hook's source as the journals know it: its Table annotations spelled as lm-eval's contract spells
    them (`datasets.Dataset`), since the container that carries the rows decides no reply; so a hook moved from one
    contract to the other keeps its journals (a benchmark's hook that took a Dataset before it took a Table). None for
    a hook of lm-eval's contract (its source as written)."""
    if not takes_table(func):
        return None
    try:
        source = inspect.getsource(func)
        signature = inspect.signature(
            func
        )  # annotations as written: strings, under `from __future__ import annotations`
    except (OSError, TypeError, ValueError):
        return None
    for spelled in {next(iter(signature.parameters.values())).annotation, signature.return_annotation}:
        if isinstance(spelled, str):
            source = source.replace(f": {spelled}", ": datasets.Dataset").replace(
                f"-> {spelled}", "-> datasets.Dataset"
            )
    return source


def processed(hook: TaskHook, rows: pa.Table, metadata: Mapping[str, object], fingerprint: str) -> pa.Table:
    """The rows `hook` keeps of `rows`, as a Table with their features (`fingerprint`: the Dataset's, as the data's)."""
    if takes_table(inspect.unwrap(hook)):
        kept = call_hook(hook, rows, metadata=metadata)
        if not isinstance(kept, pa.Table):
            raise hook.wrong(
                (rows,), f"returned {type(kept).__name__}, where a process_docs taking a pyarrow.Table returns one"
            )
        return kept
    import datasets

    with datasets_quiet():
        given = datasets.Dataset(datasets.table.InMemoryTable(rows), fingerprint=fingerprint)
        kept = call_hook(hook, given, metadata=metadata)
        if not isinstance(kept, datasets.Dataset):
            raise hook.wrong((given,), f"returned {type(kept).__name__}, where process_docs returns a datasets.Dataset")
        return with_features(kept.with_format("arrow")[:], kept.features.to_dict())


def _plain(feature: object) -> bool:
    if isinstance(feature, dict):
        kind = feature.get("_type")
        return (kind is None or kind in PLAIN_FEATURES) and all(_plain(value) for value in feature.values())
    return not isinstance(feature, list) or all(_plain(value) for value in feature)


def row_decoder(docs: pa.Table) -> RowDecoder | None:
    """What turns a row of `docs` (`to_pylist`'s) into the row `datasets` gives: None where its features are plain
    (the same row), else their `decode_example` (an `Audio` column a hook added, say: `datasets` imported then)."""
    features = {name: feature for name, feature in hf_features(docs.schema).items() if name in docs.column_names}
    if all(_plain(feature) for feature in features.values()):
        return None
    import datasets

    return datasets.Features.from_dict(features).decode_example
