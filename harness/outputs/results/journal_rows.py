"""The scored rows behind a task's results, for the statistics that need rows and not only their aggregate (a length
trend paired on ids, a curve bootstrapped over its items): each sample's metrics and cluster keys, read from the
journal (`journal_<task>.jsonl`) beside the results file that holds the task's newest value.

Only the records of that run are read: their fingerprint is the results file's `task_hashes[task]` (an older run's
records, left in a journal that later started over, are not). A results folder may come from elsewhere: the journal
must be a regular file of its folder (no link), of bounded size, and a line that cannot be read is left out. Nothing
found gives None, and the caller says the statistic needs the journal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from builders.core import contract
from harness.api import SCORED
from harness.running.journal.journal_file import journal_name, parse_line

if TYPE_CHECKING:
    from harness.outputs.results.model_results import ModelResults

MOST_BYTES = 1 << 30  # a 128K MMLongBench task's journal is a few MB; a file past 1 GiB is no journal of ours


@dataclass(frozen=True)
class Row:
    """One scored sample: its id, the scorer's values (numbers, or a breakdown's [key, value] pairs) and its cluster
    keys (its own id where it has none)."""

    sample_id: str
    metrics: dict[str, object]
    keys: tuple[str, ...]

    def value(self, metric: str) -> float | None:
        """A metric's number (None: absent, or not a number)."""
        return _number(self.metrics.get(metric))

    def pairs(self, metric: str) -> list[tuple[str, float]]:
        """A breakdown metric's (key, value) pairs, keys as text (`[["mmbench", 1.0]]`, `[[3, 0.0]]`)."""
        found = self.metrics.get(metric)
        out = []
        for pair in found if isinstance(found, list) else []:
            value = _number(pair[1], bools=True) if isinstance(pair, list) and len(pair) == 2 else None
            if value is not None:
                out.append((str(pair[0]), value))
        return out


def _number(value: object, bools: bool = False) -> float | None:
    """A journal's value as a float (a bool as 0/1 where `bools`); None where it is no number (another type, an integer
    past a float's range: a journal may come from anyone)."""
    if not isinstance(value, int | float) or (isinstance(value, bool) and not bools):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def task_rows(data: ModelResults, task: str) -> list[Row] | None:
    """The scored rows of `task` in the run whose results `data` shows, in the journal's order (a sample recorded
    twice: its last record); None where the journal is missing or is not that run's."""
    results = data.source_file(task)
    if results is None:
        return None
    try:
        raw = contract.read_regular(results.parent / journal_name(task), MOST_BYTES, "a journal", follow=False)
    except OSError:
        return None
    digest = (data.sources[task].get("task_hashes") or {}).get(task)
    rows: dict[str, Row] = {}
    for line in raw.split(b"\n"):
        record, problem = parse_line(line) if line.strip() else (None, "empty")
        if problem or not isinstance(record, dict) or record.get("type") != "sample" or record.get("task") != task:
            continue
        if digest is not None and record.get("fingerprint") != digest:
            continue
        sample_id, metrics, keys = record.get("sample_id"), record.get("metrics"), record.get("cluster")
        if not isinstance(sample_id, str):
            continue
        if not isinstance(metrics, dict) or record.get("status") not in SCORED:
            rows.pop(sample_id, None)  # its last record was not scored
            continue
        shared = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        rows[sample_id] = Row(sample_id, dict(metrics), shared or (f"row:{sample_id}",))
    return list(rows.values()) or None
