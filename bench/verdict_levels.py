#!/usr/bin/env python
"""Two verdicts beside a paper, checked by seeded simulation (issue 76, items 4b and 4c).

1. **LoCoVQA's direction** (`tasks/locovqa/decay_slope.py`, `within_item_slope`): how often a flat truth reads as
   falling (the slope's interval below 0: ✓ beside a paper whose fit falls) or rising (above 0), nominally 2.5 % each,
   with the interval before issue 76 (slope ± t_{items-1} · CR1 error) and now (studentized by the flat null's
   within-item permutations). Items at the paper's six lengths (1, 4, 9, 16, 25, 36 images), each with its own level
   drawn from a band and a 0/1 score at it, the same at every length; and, to show the interval still covers where the
   curve moves, a falling curve (-0.01 a unit, each item its own slope around it).
2. **The same-items verdict's ≈** (`harness/outputs/report/verdict.py`): at the issue's design (100 ids × 6 rows,
   intra-cluster correlation .5, p = .5; 11 % of rows changing between two runs, the spread the verdict is told), the
   marks of a faithful rerun and of a run 10 points lower, the gap `≈ within ±g` prints, and how often a run's g
   (every cell's, whatever its mark) is at most the true gap: what "rules out" promises to keep under 2.5 % a side.

Usage: .venv/bin/python bench/verdict_levels.py [--replications 3000]   (one core, about 4 min)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.outputs.report import verdict
from harness.outputs.report.verdict import Paper, RunToRun
from harness.outputs.results.estimates import Estimate
from harness.uncertainty.comparisons import interval
from harness.uncertainty.variance import design_from_keys, influence_error
from tasks.locovqa.decay_slope import within_item_slope

LENGTHS = np.array([1.0, 4.0, 9.0, 16.0, 25.0, 36.0])
ITEMS = (10, 11, 12, 30)
BANDS = ((0.0, 0.2), (0.05, 0.3), (0.1, 0.5), (0.3, 0.7), (0.7, 0.95), (0.8, 1.0))


def curve_rows(rng: np.random.Generator, items: int, band: tuple[float, float], slope: float, spread: float):
    """(x, [item], 0/1 score) rows of `items` items at every length: chance = level + own slope · x, clipped."""
    level = rng.uniform(*band, items)
    own = slope + rng.normal(0, spread, items) if spread else np.full(items, slope)
    chance = np.clip(level[:, None] + own[:, None] * LENGTHS[None, :], 0, 1)
    scores = (rng.random(chance.shape) < chance).astype(float)
    return [(float(x), [f"item{i}"], float(scores[i, j])) for i in range(items) for j, x in enumerate(LENGTHS)]


def direction_cell(items: int, band: tuple[float, float], slope: float, spread: float, replications: int):
    """(falls, rises, covers) shares before (t) and now (permutation), over the replications with a slope."""
    rng = np.random.default_rng([items, round(band[0] * 100), round(band[1] * 100), round(-slope * 1000)])
    counts = np.zeros((2, 3))
    made = 0
    for _ in range(replications):
        found = within_item_slope(curve_rows(rng, items, band, slope, spread))
        if found is None:  # nothing varied: no interval, no verdict
            continue
        made += 1
        before = interval(found.slope, found.stderr, 0.95, items - 1)
        for k, (low, high) in enumerate((before, (found.low, found.high))):
            counts[k] += (high < 0, low > 0, low <= slope <= high)
    return counts / max(made, 1), made


def direction_table(replications: int) -> None:
    print("### LoCoVQA's direction verdict: a flat truth read as falling / rising (nominal 2.5 % each)\n")
    print("| items | item levels | t (before): falls | rises | permutation (now): falls | rises | curves |")
    print("|---|---|---|---|---|---|---|")
    found = {}
    for items in ITEMS:
        for band in BANDS:
            shares, made = found[items, band] = direction_cell(items, band, 0.0, 0.0, replications)
            print(
                f"| {items} | {band[0]:g}-{band[1]:g} | {shares[0, 0] * 100:.2f} % | {shares[0, 1] * 100:.2f} % | "
                f"{shares[1, 0] * 100:.2f} % | {shares[1, 1] * 100:.2f} % | {made} |"
            )
    noise = 2 * np.sqrt(0.025 * 0.975 / replications)  # two binomial errors of a 2.5 % rate
    print()
    for k, name in enumerate(("t (before)", "permutation (now)")):
        rates = np.array([found[key][0][k, :2] for key in found])
        few = np.array([found[key][0][k, :2] for key in found if key[0] <= 12])
        print(
            f"- {name}: worst one-sided rate {rates.max() * 100:.2f} %, mean at 10-12 items {few.mean() * 100:.2f} % "
            f"(worst side {few.mean(axis=0).max() * 100:.2f} %), {int(np.sum(rates > 0.025 + noise))} of "
            f"{rates.size} rates above 2.5 % + two binomial errors ({(0.025 + noise) * 100:.2f} %)"
        )
    print()
    print("| items | curve | t (before): covers | permutation (now): covers |")
    print("|---|---|---|---|")
    for items in (10, 12, 30):
        shares, _ = direction_cell(items, (0.55, 0.95), -0.01, 0.004, replications)
        print(f"| {items} | falling, -0.01 a unit | {shares[0, 2] * 100:.1f} % | {shares[1, 2] * 100:.1f} % |")


IDS, ROWS = 100, 6
DESIGN = design_from_keys([[i // ROWS] for i in range(IDS * ROWS)])


def _estimate(scores: np.ndarray) -> Estimate:
    found = influence_error((scores - scores.mean()) / len(scores), DESIGN)
    error = (100 * found.stderr, 100 * found.stderr_clustered)
    return Estimate(100 * float(scores.mean()), *error, found.n, found.n_clusters, 100, found.design_effect)


def margin_table(replications: int, changing: float = 0.11) -> None:
    mode = verdict.Mode(verdict.SAME_ITEMS, "simulated", 5.0, run_to_run=RunToRun(changing, "simulated"))
    print(f"\n### The same-items verdict at 100 ids × 6 rows, {changing * 100:g} % of rows changing between runs\n")
    print("| run | ✓ | ✗ | ≈ | g beside ≈: median [5 %, 95 %] | runs whose g is at most the true gap (all marks) |")
    print("|---|---|---|---|---|---|")
    for gap in (0.0, 0.10):
        rng = np.random.default_rng([76, round(gap * 100)])
        marks, margins, missed = {"✓": 0, "✗": 0, "≈": 0}, [], 0
        for _ in range(replications):
            chance = np.repeat(rng.beta(0.5, 0.5, IDS), ROWS)
            paper = (rng.random(IDS * ROWS) < chance).astype(float)
            ours = np.where(rng.random(len(paper)) < changing, 1.0 - paper, paper)
            right = np.flatnonzero(ours == 1.0)
            ours[rng.choice(right, round(gap * len(ours)), replace=False)] = 0.0
            found = verdict.compare(_estimate(ours), Paper(100 * float(paper.mean()), IDS * ROWS, IDS), mode)
            mark = "✓" if found.equivalent else "✗" if found.p_disagree < verdict.ALPHA else "≈"
            marks[mark] += 1
            missed += 100 * gap >= found.rules_out  # a 95 % interval's far end: at most 2.5 % a side
            if mark == "≈":
                margins.append(found.rules_out)
        shares = " | ".join(f"{marks[m] / replications * 100:.1f} %" for m in ("✓", "✗", "≈"))
        spread = (
            f"{np.median(margins):.1f} [{np.quantile(margins, 0.05):.1f}, {np.quantile(margins, 0.95):.1f}]"
            if margins
            else "–"
        )
        share = f"{missed / replications * 100:.1f} %"
        print(f"| {'faithful' if gap == 0 else f'{gap * 100:g} points lower'} | {shares} | {spread} | {share} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=3000)
    args = parser.parse_args()
    start = time.perf_counter()
    direction_table(args.replications)
    margin_table(args.replications)
    print(f"\n{args.replications} replications a row, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
