#!/usr/bin/env python
"""Two runs of one model, paired (issue 88, item 3): how often `harness compare`'s raw p falls under .05 when nothing
differs: with the clustered error as measured and t_{C-1} (before), with `comparison_error` (floor: never below the
plain one, a design effect estimated under 1 taken as 1) and t_{C-1}, and with that error and `comparison_df`'s
degrees of freedom (now: the clusters the variance rests on, as `harness compare`).

Each replication: C items of m rows; each item has a chance drawn from Beta with mean p and intra-cluster correlation
ρ (the model's item effect, shared by both runs); each run scores every row 0/1 or with partial credit (a count of
4 needles, soft accuracy in quarters) independently given the item's chance: two seeds of one model. The row is a
group of k tasks that share no item, pooled by strict_mean, as `mmlongbench_niah_8k` is, its first-order form summed
over its tasks (`harness.uncertainty.influence.combine`) and clustered (`influence_error`); the p is
`two_sided_p`, as compare.py's `_row`. Designs: the demo's (`mmlongbench_niah_8k` on
the offline fixture: 10 tasks of 3 items x 2-3 rows, here 10 x 3 x 3) and the paper's (MMLongBench: 100 ids x 6 rows;
MM-NIAH validation, 6 tasks pooled, 100 items of 1 row each), p .1, .5 and .9, ρ 0, .3 and .7.

Usage: .venv/bin/python bench/paired_null.py [--replications 1000]   (one core, about 4 min)
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from harness.uncertainty.comparisons import comparison_df, comparison_error, two_sided_p
from harness.uncertainty.influence import combine, linearize_mean

DESIGNS = {  # name: (tasks, items a task, rows an item)
    "demo: 10 tasks x 3 items x 3 rows": (10, 3, 3),
    "MMLongBench: 100 ids x 6 rows": (1, 100, 6),
    "MM-NIAH: 6 tasks x 100 items x 1 row": (6, 100, 1),
}
CHANCES = (0.1, 0.5, 0.9)
ICCS = (0.0, 0.3, 0.7)


def one_run(chance: np.ndarray, rows: int, partial: bool, rng: np.random.Generator) -> np.ndarray:
    """Every row of one run: 0/1 at its item's chance, or (partial credit) right needles of 4, in quarters."""
    if partial:
        return rng.binomial(4, np.repeat(chance, rows)) / 4
    return (rng.random(len(chance) * rows) < np.repeat(chance, rows)).astype(float)


def p_values(design: tuple[int, int, int], p: float, icc: float, partial: bool, rng: np.random.Generator):
    """(p before, p with the floor, p now, design effect) of one replication: the group's A - B over its tasks' paired rows."""
    tasks, items, rows = design
    parts = []
    for task in range(tasks):
        if icc > 0:
            total = 1 / icc - 1
            chance = rng.beta(p * total, (1 - p) * total, items)
        else:
            chance = np.full(items, p)
        difference = one_run(chance, rows, partial, rng) - one_run(chance, rows, partial, rng)
        names = [f"{task}/{i}" for i in range(items * rows)]
        keys = [(f"{task}/item{i // rows}",) for i in range(items * rows)]
        parts.append((1 / tasks, linearize_mean(difference, names, keys)))
    estimate = sum(w * part.estimate for w, part in parts)
    error = combine(parts, estimate).error()
    df = error.n_clusters - 1
    floored = comparison_error(error.stderr, error.stderr_clustered)
    before = two_sided_p(estimate, error.stderr_clustered, df)
    floor = two_sided_p(estimate, floored, df)
    now = two_sided_p(estimate, floored, comparison_df(error.n_clusters, error.overlap, error.effective_clusters))
    return before, floor, now, error.design_effect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    args = parser.parse_args()
    start = time.perf_counter()
    print("| design | scores | p | ρ | p < .05 before | floor | now | deff < 1 |")
    print("|---|---|---|---|---|---|---|---|")
    worst = {"before": 0.0, "floor": 0.0, "now": 0.0}
    for (name, design), partial, p, icc in itertools.product(DESIGNS.items(), (False, True), CHANCES, ICCS):
        rng = np.random.default_rng([list(DESIGNS).index(name), int(partial), round(p * 100), round(icc * 100)])
        found = np.array([p_values(design, p, icc, partial, rng) for _ in range(args.replications)])
        finite = np.isfinite(found[:, 0])
        rates = {k: float(np.mean(found[finite, i] < 0.05)) for i, k in enumerate(worst)}
        below = float(np.mean(found[finite, 3] < 1))
        worst = {k: max(worst[k], rates[k]) for k in worst}
        scores = "partial credit (quarters)" if partial else "0/1"
        shown = " | ".join(f"{rates[k]:.1%}" for k in worst)
        print(f"| {name} | {scores} | {p:g} | {icc:g} | {shown} | {below:.0%} |")
    print("\nworst: " + ", ".join(f"{k} {v:.1%}" for k, v in worst.items()))
    print(f"{args.replications} replications a row, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
