"""The same-items verdict on a run-to-run spread *measured* from two runs of one model (issue 63, item 1): the bound
`Changes.bound` takes is statsmodels' Clopper-Pearson, a seeded simulation at 100 ids x 6 rows (3 % of rows changing
between runs, as in `test_verdict_run_to_run`) gives ✓ for a faithful reproduction and ✗ for a 10-point gap, each in
at least 80 % of replications, with the spread measured each time from a second run; a table whose tasks were not all
measured keeps the declared figure and its legend says why."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.outputs.report import verdict
from harness.outputs.report.run_to_run import Changes, MeasuredRunToRun, measured_run_to_run
from tests.harness.outputs.test_verdict_run_to_run import _rerun, mark_shares, simulated_marks

REPLICATIONS = 200


def test_the_bound_is_clopper_pearsons_one_sided_upper_limit() -> None:
    for changed, rows in ((0, 600), (18, 600), (3, 40), (40, 40)):
        _, upper = proportion_confint(changed, rows, alpha=0.10, method="beta")  # two-sided 90 %: one-sided 95 %
        assert Changes(rows, changed, float(changed)).bound() == pytest.approx(upper, rel=1e-9)
    # partial credit: the mean squared change per changed row times that bound
    _, upper = proportion_confint(10, 200, alpha=0.10, method="beta")
    assert Changes(200, 10, 2.5).bound() == pytest.approx(upper * 0.25)


def _measured(rng: np.random.Generator, frozen: np.ndarray) -> MeasuredRunToRun:
    """Two runs of one model on the frozen rows, compared row by row as `harness compare` does."""
    first, second = _rerun(frozen, rng), _rerun(frozen, rng)
    changed = int(np.count_nonzero(first != second))
    return MeasuredRunToRun({"t": Changes(len(frozen), changed, float(changed))}, "two simulated runs")


def _measured_mode(rng: np.random.Generator, paper: np.ndarray) -> verdict.Mode:
    """The same-items mode on the spread measured from two simulated runs of the paper's rows."""
    spread = _measured(rng, paper).spread(["t"], verdict.ASSUMED_RUN_TO_RUN)
    return verdict.Mode(verdict.SAME_ITEMS, "the paper's rows", 5.0, run_to_run=spread)


def _marks(seed: int, gap: float) -> dict[str, float]:
    simulated = simulated_marks(seed, gap, REPLICATIONS, _measured_mode)
    return mark_shares((mark for _, _, mark in simulated), REPLICATIONS)


def test_a_measured_spread_agrees_with_a_faithful_run_and_not_with_a_ten_point_gap() -> None:
    faithful = _marks(163, 0.0)
    assert faithful.get("✓", 0) >= 0.8, faithful
    lower = _marks(164, 0.10)
    assert lower.get("✗", 0) >= 0.8, lower
    assert lower.get("✓", 0) == 0, lower


def test_mode_of_uses_the_measurement_where_it_covers_the_tables_tasks() -> None:
    from harness.outputs.results.provenance import DataOrigin, TaskData

    origin = DataOrigin(*[None] * 11)
    rule = verdict.VerdictRule(5.0, "5 points", lambda origin: "the paper's rows", "a fresh draw")
    tasks = [TaskData(name, origin, 600, 600, 600, None) for name in ("a", "b")]
    measured = MeasuredRunToRun({"a": Changes(600, 12, 12.0), "b": Changes(300, 0, 0.0)}, "two runs of 'm' in x")
    with measured_run_to_run(measured):
        spread = verdict.mode_of(rule, tasks).run_to_run
        partial = verdict.mode_of(rule, [*tasks, TaskData("c", origin, 1, 1, 1, None)]).run_to_run
    assert spread is not None and spread.discordance == pytest.approx(Changes(900, 12, 12.0).bound())
    assert spread.source.startswith("measured: 12 of 900 paired rows changed")
    legend = verdict.explanation(verdict.Mode(verdict.SAME_ITEMS, "the paper's rows", 5.0, run_to_run=spread))
    assert "two runs of 'm' in x" in legend and "measured" in legend
    assert partial is not None and partial.discordance == verdict.ASSUMED_RUN_TO_RUN.discordance
    assert "assumed, not measured" in partial.source and "measured 2 of these 3 tasks only" in partial.source
    assert verdict.mode_of(rule, tasks).run_to_run is verdict.ASSUMED_RUN_TO_RUN  # outside the block
