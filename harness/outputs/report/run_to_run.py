"""The run-to-run spread the same-items verdict reads (`harness.outputs.report.verdict`, issue 63 item 1): what separates
two runs of one model on the same rows (`RunToRun`), declared by a benchmark with its source, or measured from two runs
of one model compared with `harness compare` (`measured_from` its compare.json: per task, the rows that changed and
their mean squared change) and used by `harness report --run_to_run` (or `--paired` over two runs of one model) for
every table whose tasks it covers (`measured_run_to_run`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from harness.errors import UserError
from harness.outputs.results.compare_file import CompareFile

LEVEL = 0.95  # of the upper bound on the share of rows that change


@dataclass(frozen=True)
class RunToRun:
    """What separates two runs of one model on the same rows: `discordance`, the share of rows whose score changes
    between the runs (for a score with partial credit, the mean squared change per row on 0..1), and `source`, where
    the figure comes from (a measurement with `harness compare`, or an assumption said as one)."""

    discordance: float
    source: str

    def __post_init__(self) -> None:
        if not 0.0 < self.discordance <= 1.0:
            raise ValueError(f"a run-to-run discordance is a share of rows in (0, 1], got {self.discordance}")

    def stderr(self, rows: int, design_effect: float | None) -> float:
        """The error of ours - paper on 0..1 over `rows` rows: each changed row moves the mean by ±1/rows, so the
        variance is discordance / rows, times the design effect our rows show (changes to one item's rows are taken
        to go together as its scores do; at least 1)."""
        deff = design_effect if design_effect is not None and math.isfinite(design_effect) else 1.0
        return math.sqrt(self.discordance * max(deff, 1.0) / rows)


@dataclass(frozen=True)
class MeasuredRunToRun:
    """The run-to-run spread two runs of one model showed, per task (`harness.outputs.report.run_to_run`, from `harness
    compare`'s compare.json): task -> `Changes` on its rows; `source` says which runs and file."""

    tasks: Mapping[str, Changes]
    source: str

    def spread(self, tasks: list[str], declared: RunToRun | None) -> RunToRun | None:
        """The measured spread of these tasks' rows pooled, where every one of them was measured; else the
        declared figure, its source saying why the measurement was not used."""
        measured = [self.tasks[t] for t in tasks if t in self.tasks]
        if tasks and len(measured) == len(tasks):
            pooled = Changes.pooled(measured)
            return RunToRun(pooled.bound(), f"measured: {pooled.text()} between {self.source}")
        if declared is None or not measured:
            return declared
        note = f"; {self.source} measured {len(measured)} of these {len(tasks)} tasks only, so it is not used"
        return RunToRun(declared.discordance, declared.source + note)


@dataclass(frozen=True)
class Changes:
    """Rows of one task (or several pooled) in two runs of one model: `rows` paired, `changed` whose score differs,
    `squared` the sum over rows of the squared change on 0..1 (= `changed` for a 0/1 score)."""

    rows: int
    changed: int
    squared: float

    @staticmethod
    def pooled(parts: Iterable[Changes]) -> Changes:
        parts = list(parts)
        return Changes(sum(p.rows for p in parts), sum(p.changed for p in parts), sum(p.squared for p in parts))

    def bound(self) -> float:
        """The run-to-run discordance the verdict uses: the mean squared change per changed row times the exact
        (Clopper-Pearson) one-sided 95 % upper bound on the share of rows that change, so that two runs that
        happened to agree on every row do not claim no spread at all; for a 0/1 score, that bound itself."""
        from scipy import stats

        share = (
            1.0
            if self.changed >= self.rows
            else float(stats.beta.ppf(LEVEL, self.changed + 1, self.rows - self.changed))
        )
        per_changed = self.squared / self.changed if self.changed else 1.0
        return min(1.0, max(share * per_changed, 1e-12))

    def text(self) -> str:
        return (
            f"{self.changed:,} of {self.rows:,} paired rows changed (mean squared change {self.squared / self.rows:.3g}; "
            f"{self.bound() * 100:.3g} % at the 95 % upper bound on the share changed)"
        )


MEASURED: ContextVar[MeasuredRunToRun | None] = ContextVar("measured_run_to_run", default=None)


@contextlib.contextmanager
def measured_run_to_run(measured: MeasuredRunToRun | None) -> Iterator[None]:
    """Within the block, the same-items verdict uses `measured` where it covers a table's tasks (`mode_of`)."""
    token = MEASURED.set(measured)
    try:
        yield
    finally:
        MEASURED.reset(token)


def measured_from(compared: CompareFile, where: str) -> MeasuredRunToRun:
    """The per-task changes in a compare.json of two runs of one model (`where`: the file, for the legend); each
    task's metric that changed the most (the spread is not understated whichever metric a cell shows). A comparison
    of two models is refused: their differences are not run to run."""
    if not compared["same_model"]:
        models = f"{compared['a']['model']!r} and {compared['b']['model']!r}"
        raise UserError(f"{where}: compares {models}, not two runs of one model: no run-to-run spread to measure")
    tasks: dict[str, Changes] = {}
    for row in compared["rows"]:
        changed, squared = row.get("changed_rows"), row.get("mean_squared_change")
        if row["kind"] != "task" or changed is None or not isinstance(squared, float) or not math.isfinite(squared):
            continue
        found = Changes(int(row["n_paired"]), int(changed), squared * row["n_paired"])
        if found.rows and (row["name"] not in tasks or found.squared > tasks[row["name"]].squared):
            tasks[row["name"]] = found
    if not tasks:
        raise UserError(f"{where}: no task's rows with a per-row score on a known scale (an older compare.json?)")
    model = compared["a"]["model"]
    return MeasuredRunToRun(
        tasks, f"two runs of {model!r} ({compared['a']['folder']}, {compared['b']['folder']}) compared in {where}"
    )
