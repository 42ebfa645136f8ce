"""Rows of a build that a task leaves out under its metadata, and how to score them all.

A task whose `process_docs` keeps some of its config's rows by a metadata setting (MMNeedle's `subset: paper`: the
first 1,000 or 100 of each polarity, the paper's evaluated subset) names, as `metadata.all_rows`, the metadata that
keeps every row (`{subset: full}`). After loading, the harness runs `process_docs` again under it: a build that holds
more (a `--full` build) is said in one line before the run (`left_out_line`), recorded in the results
(`datasets[task].rows_left_out`) and shown by `harness report`. `all_rows` only describes the task: it is left out of
the task's identity, so journals written before it was declared still resume.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ALL_ROWS = "all_rows"  # the metadata key naming the metadata under which the task scores every row


@dataclass(frozen=True)
class RowsLeftOut:
    """A task that scores `scored` of the `held` rows it would score under its `all_rows` metadata."""

    scored: int
    held: int
    all_with: str  # the flag that scores them all: `--metadata '{"subset": "full"}'`

    def record(self) -> dict[str, Any]:
        return {"scored": self.scored, "held": self.held, "all_with": self.all_with}


def without_all_rows(metadata: Mapping[str, object] | None) -> dict[str, Any] | None:
    """`metadata` less `all_rows`, as the task's identity holds it."""
    return None if metadata is None else {k: v for k, v in metadata.items() if k != ALL_ROWS}


def rows_left_out(
    process_docs: Callable[..., Any] | None,
    dataset: object,
    metadata: Mapping[str, object],
    scored: int,
    call: Callable[..., Any],
) -> RowsLeftOut | None:
    """What a task leaves out of `dataset` (its config's split), having kept `scored` rows under `metadata`; None
    when it keeps all it could (or declares no `all_rows`). `call` calls a hook as the task does (`call_hook`)."""
    wanted = metadata.get(ALL_ROWS)
    if process_docs is None or not isinstance(wanted, Mapping) or dataset is None:
        return None
    every = {**metadata, **wanted}
    if every == dict(metadata):  # the run already asks for every row (`--metadata '{"subset": "full"}'`)
        return None
    held = len(call(process_docs, dataset, metadata=every))
    if held <= scored:
        return None
    return RowsLeftOut(scored, held, f"--metadata '{json.dumps(dict(wanted))}'")


def left_out_line(tasks: Sequence[tuple[str, RowsLeftOut]]) -> list[str]:
    """One line per way of scoring all rows: the tasks that leave rows out and what they score."""
    lines = []
    for all_with in dict.fromkeys(left.all_with for _, left in tasks):
        named = [(name, left) for name, left in tasks if left.all_with == all_with]
        shown = ", ".join(f"{name} {left.scored:,} of {left.held:,}" for name, left in named[:3])
        more = f" and {len(named) - 3} more tasks" if len(named) > 3 else ""
        subject = "a task scores" if len(named) == 1 else f"{len(named)} tasks score"
        lines.append(
            f"harness: {subject} fewer rows than the build holds for them, as their metadata picks ({shown}{more}); "
            f"{all_with} scores all of them"
        )
    return lines
