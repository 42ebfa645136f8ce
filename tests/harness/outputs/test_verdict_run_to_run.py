"""The same-items verdict judged by the spread that separates two runs of the paper's own rows (issue 63, item 1): a
seeded simulation at MMLongBench's design (100 ids x 6 rows, intra-cluster correlation .5, p = .5, 3 % of rows
changing between runs) gives ✓ for a faithful reproduction and ✗ for a model 10 points lower, each in at least 80 % of
replications; the item-sampling error the verdict used before gives ≈ for the faithful run almost always."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pytest

from harness.outputs.report import verdict
from harness.outputs.report.verdict import Paper, RunToRun
from harness.outputs.report.verdict_family import Family
from harness.outputs.results.estimates import Estimate
from harness.uncertainty.comparisons import equivalence_p
from harness.uncertainty.variance import design_from_keys, influence_error

IDS, ROWS_PER_ID = 100, 6
FLIPPED = 0.03  # rows whose score changes between two runs of one model in the simulation
REPLICATIONS = 300
DESIGN = design_from_keys([[i // ROWS_PER_ID] for i in range(IDS * ROWS_PER_ID)])  # each id's rows one cluster
SAME = verdict.Mode(verdict.SAME_ITEMS, "the paper's rows", 5.0, run_to_run=verdict.ASSUMED_RUN_TO_RUN)


def _estimate(scores: np.ndarray) -> Estimate:
    """Our run's 0-100 estimate with its errors, as a results file records it (clustered on the id)."""
    found = influence_error((scores - scores.mean()) / len(scores), DESIGN)  # a mean's influences
    return Estimate(
        100 * float(scores.mean()),
        100 * found.stderr,
        100 * found.stderr_clustered,
        found.n,
        found.n_clusters,
        100,
        found.design_effect,
    )


def _mark(ours: Estimate, paper: float, mode: verdict.Mode = SAME) -> str:
    family = Family(method="holm")
    return family.add(verdict.compare(ours, Paper(paper, IDS * ROWS_PER_ID, IDS), mode)).verdict.mark


def _paper_run(rng: np.random.Generator) -> np.ndarray:
    """The paper's scores on its frozen rows: each id's chance from Beta(.5, .5) (intra-cluster correlation
    1 / (a + b + 1) = .5, mean .5), each row a 0/1 draw at it."""
    chance = np.repeat(rng.beta(0.5, 0.5, IDS), ROWS_PER_ID)
    return (rng.random(IDS * ROWS_PER_ID) < chance).astype(float)


def _rerun(paper: np.ndarray, rng: np.random.Generator, gap: float = 0.0) -> np.ndarray:
    """The same rows run again: 3 % of them change; a model `gap` lower also loses that share of all rows."""
    ours = np.where(rng.random(len(paper)) < FLIPPED, 1.0 - paper, paper)
    right = np.flatnonzero(ours == 1.0)
    ours[rng.choice(right, int(round(gap * len(ours))), replace=False)] = 0.0
    return ours


def _one_cell_mark(comparison: verdict.Comparison) -> str:
    """A table of one cell's mark (Holm over one test leaves p as it is), without statsmodels' per-call cost."""
    if comparison.equivalent:
        return "✓"
    return "✗" if comparison.p_disagree < verdict.ALPHA else "≈"


def simulated_marks(
    seed: int, gap: float, replications: int, mode_for: Callable[[np.random.Generator, np.ndarray], verdict.Mode]
) -> Iterator[tuple[Estimate, float, str]]:
    """(our estimate, the paper's score, the one-cell mark) of each of `replications` seeded simulations: the paper's
    rows, then our rerun of them `gap` lower, judged in the mode `mode_for` gives for the paper's rows."""
    rng = np.random.default_rng(seed)
    for _ in range(replications):
        paper = _paper_run(rng)
        mode = mode_for(rng, paper)
        ours, target = _estimate(_rerun(paper, rng, gap)), 100 * float(paper.mean())
        yield ours, target, _one_cell_mark(verdict.compare(ours, Paper(target, IDS * ROWS_PER_ID, IDS), mode))


def mark_shares(marks: Iterable[str], replications: int) -> dict[str, float]:
    """Each mark's share of the `replications`."""
    counts: dict[str, float] = {}
    for mark in marks:
        counts[mark] = counts.get(mark, 0) + 1 / replications
    return counts


def _marks(seed: int, gap: float) -> dict[str, float]:
    marks = []
    for i, (ours, target, mark) in enumerate(simulated_marks(seed, gap, REPLICATIONS, lambda rng, paper: SAME)):
        if i < 5:  # the report's own path gives the same mark
            assert _mark(ours, target) == mark
        marks.append(mark)
    return mark_shares(marks, REPLICATIONS)


def test_a_faithful_reproduction_agrees_and_a_ten_point_gap_disagrees() -> None:
    faithful = _marks(63, 0.0)
    assert faithful.get("✓", 0) >= 0.8, faithful
    lower = _marks(64, 0.10)
    assert lower.get("✗", 0) >= 0.8, lower
    assert lower.get("✓", 0) == 0, lower  # a 10-point gap never passes


def test_the_item_sampling_interval_is_wider_than_the_band_where_the_run_to_run_one_agrees() -> None:
    # what the verdict did before: the interval of ours on its clustered (item-sampling) error, ±1.96 x ~3.9 points
    # at this design, wider than ±5 allows: a faithful run is ≈, never ✓
    rng = np.random.default_rng(65)
    paper = _paper_run(rng)
    ours = _estimate(_rerun(paper, rng))
    low, high = ours.interval() or (np.nan, np.nan)
    assert high - low > 10
    assert _mark(ours, 100 * float(paper.mean())) == "✓"


def test_the_run_to_run_error_and_its_legend() -> None:
    spread = RunToRun(0.04, "measured")
    assert spread.stderr(600, 3.0) == pytest.approx(np.sqrt(0.04 * 3 / 600))
    assert spread.stderr(600, 0.5) == spread.stderr(600, None) == pytest.approx(np.sqrt(0.04 / 600))
    with pytest.raises(ValueError, match="share of rows in"):
        RunToRun(0.0, "none")
    # ours 60.0 on 600 rows, the paper's 58.0: ±1.96 x 100 x sqrt(.05 x 2 / 600) = ±2.53 around +2.0
    found = verdict.compare(Estimate(60.0, 2.0, 3.0, 600, 100, 100, 2.0), Paper(58.0), SAME)
    assert (found.low, found.high) == pytest.approx((2.0 - 2.530, 2.0 + 2.530), abs=1e-3)
    assert found.equivalent
    # a straddling interval is ≈ whatever its width, and the legend says so
    found = verdict.compare(Estimate(51.0, 2.0, 3.0, 600, 100, 100, 2.0), Paper(56.0), SAME)
    assert found.low < -5 < found.high and _mark(Estimate(51.0, 2.0, 3.0, 600, 100, 100, 2.0), 56.0) == "≈"
    legend = verdict.explanation(SAME)
    assert "reaches across an edge of ±5 points" in legend and "5 % of rows changing between two runs" in legend
    assert "assumed, not measured" in legend
    # the interval stays on the scale: ours 99.5 of 100 rows
    found = verdict.compare(Estimate(99.5, 0.5, 0.5, 100, 100, 100, 1.0), Paper(99.0), SAME)
    assert found.high <= 1.0 + 1e-12
    # no declared spread: nothing is tested, and the legend says so
    bare = verdict.Mode(verdict.SAME_ITEMS, "the paper's rows", 5.0)
    assert verdict.compare(Estimate(60.0, 2.0, 3.0, 600, 100, 100, 2.0), Paper(58.0), bare).why == (
        "no run-to-run spread declared"
    )
    assert "none declared" in verdict.explanation(bare)


def test_inconclusive_prints_the_smallest_gap_it_rules_out() -> None:
    # ours 51.0 on 600 rows, the paper's 56.0: -5.0 ± 1.96 x 100 x sqrt(.05 x 2 / 600) = [-7.53, -2.47], across -5
    ours = Estimate(51.0, 2.0, 3.0, 600, 100, 100, 2.0)
    found = verdict.compare(ours, Paper(56.0), SAME)
    stderr = 100 * np.sqrt(0.05 * 2 / 600)
    assert found.rules_out == pytest.approx(5.0 + 1.959964 * stderr, abs=1e-4) == pytest.approx(-found.low)
    cell = Family(method="holm").add(found)
    assert str(cell) == "51.0 (56.0) -5.0 [-7.5, -2.5] ≈ within ±7.5" and cell.verdict.mark == "≈"
    # it is the equivalence margin two one-sided tests reject at the level ✓ uses (2.5 % a side), and no smaller
    assert equivalence_p(found.difference, stderr, found.rules_out) == pytest.approx(0.025)
    assert equivalence_p(found.difference, stderr, found.rules_out - 0.1) > 0.025
    assert equivalence_p(found.difference, stderr, found.rules_out + 0.1) < 0.025
    # a gap of 2 points: the interval [-0.53, +4.53] lies inside ±5, ✓, and nothing is printed beside it
    agree = Family(method="holm").add(verdict.compare(Estimate(58.0, 2.0, 3.0, 600, 100, 100, 2.0), Paper(56.0), SAME))
    assert str(agree).endswith("[-0.5, +4.5] ✓")
    # 12 points off: wholly outside ±5, ✗, nothing beside it either
    apart = Family(method="holm").add(verdict.compare(Estimate(44.0, 2.0, 3.0, 600, 100, 100, 2.0), Paper(56.0), SAME))
    assert str(apart).endswith(" ✗")
    # the fresh-sample test says it too, from Newcombe's interval of the difference
    fresh = verdict.Mode(verdict.FRESH_SAMPLE, "new draws", 5.0)
    other = verdict.compare(Estimate(50.0, 5.0, 5.0, 100, 100, 100, 1.0), Paper(53.0, 100), fresh)
    shown = str(Family(method="holm").add(other))
    assert shown.endswith(f"≈ within ±{max(-other.low, other.high):.1f}") and other.rules_out > 5
    for mode in (SAME, fresh):
        assert "`within ±g` is the smallest gap the cell rules out" in verdict.explanation(mode)
    # LoCoVQA's direction verdict has no margin: its ≈ stands alone
    direction = verdict.compare_direction(-0.01, -0.03, 0.01, 0.4, -1, SAME)
    assert str(Family(method="holm").add(direction)).endswith(" ≈")
