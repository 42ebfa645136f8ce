"""What a run shows while it works, besides one bar per task: a bar over every task's samples with an ETA for
the whole run, and a bar over the tasks while their data loads (`datasets`' own lines are quiet:
`harness.inputs.build_files.datasets_quiet`)."""

from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm

OVERALL = "all tasks"
LOADING = "loading data"


def bar(total: int, desc: str, unit: str, enabled: bool, **options: Any) -> Any:
    """A bar on stderr, as every bar of a run is drawn."""
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled,
        file=sys.stderr,
        mininterval=0.5,
        dynamic_ncols=True,
        **options,
    )


class OverallProgress:
    """Samples generated over every task of the run, with the ETA of the whole run.

    Its total starts as every task's documents and drops, as each task is screened, by those that need no
    generation (finished in the journal, or failing the screen): the ETA counts only work still to do, at the
    rate samples are generated.
    """

    def __init__(self, expected: list[int], enabled: bool) -> None:
        self.expected = expected  # per task, in run order: its documents in this run
        self.bar = bar(sum(expected), OVERALL, "sample", enabled, position=0)

    def screened(self, task_index: int, pending: int) -> None:
        """Task `task_index` (of the run's order) has `pending` samples to generate."""
        self.bar.total -= self.expected[task_index] - pending
        self.bar.refresh()

    def update(self, samples: int) -> None:
        self.bar.update(samples)

    def close(self) -> None:
        self.bar.close()
