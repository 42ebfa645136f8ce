#!/usr/bin/env python
"""Coverage of the report's interval (`harness/outputs/results/estimates.py`, `Estimate.interval`) at the edges, before
and after issue 76 (item 4a), beside the candidates it was chosen from.

Each cell: C items (clusters) of m rows of a 0/1 score; each item's chance is Beta with mean p and intra-cluster
correlation ρ (a + b = 1/ρ - 1), as in tests/harness/outputs/test_interval_korn_graubard.py. Per replication the
plain error sd(ddof=1)/√n and the CR1 clustered error are computed with numpy (checked against
`harness.uncertainty.variance.mean_error` on the first replication of each cell), and each interval is asked whether
it holds p. Intervals:

- `before`: Wilson on n_eff = p(1 - p) / SE² times Korn-Graubard's (t_{n-1} / t_{C-1})² (the report until issue 76);
- `wilson t`: Wilson on n_eff with t_{C-1} in place of z;
- `CP (KG)`: Clopper-Pearson on Korn-Graubard's n (their own proposal);
- `Jeffreys (KG)`: Jeffreys' interval on Korn-Graubard's n;
- `shipped`: `Estimate.interval` as the report now computes it (Korn-Graubard with df = min(C - 1, x), x the rows of
  the rarer outcome, never below min(n_eff, C)).

Where no error can be estimated (every row alike) every interval is Wilson on the clusters, as the report's.

Clusters here are equal (CR2 is then CR1 and Bell-McCaffrey's df C - 1); clusters of different sizes, and the interval
issue 98 shipped for them: bench/unequal_cluster_coverage.py.

Usage: .venv/bin/python bench/report_interval_coverage.py [--replications 2000]   (one core, about 1-2 min)
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from harness.outputs.results.estimates import Estimate
from harness.uncertainty.comparisons import FEW_CLUSTERS as FEW
from harness.uncertainty.variance import mean_error

SIZES = (3, 6, 10)
CHANCES = (0.02, 0.05, 0.2, 0.5, 0.95)
CLUSTERS = (10, 15, 20, 30)
ICCS = (0.1, 0.3)
# issue 88: fewer items, stronger correlation, rarer outcomes
FEW_SIZES = (3, 6)
FEW_CHANCES = (0.02, 0.05, 0.5, 0.95, 0.98)
FEW_CLUSTERS = (3, 5, 8, 10, 15)
FEW_ICCS = (0.1, 0.5, 0.7, 0.9)
LEVEL = 0.95
METHODS = (
    "before",
    "wilson t",
    "CP (KG)",
    "Jeffreys (KG)",
    "issue 76",
    "CP at the items' n",
    "CP, items' n under 10",
    "shipped",
)


def draw(m: int, p: float, clusters: int, icc: float, replications: int, rng: np.random.Generator) -> np.ndarray:
    """(replications, clusters, m) 0/1 scores: items' chances Beta(p·k, (1 - p)·k), k = 1/ρ - 1."""
    total = 1 / icc - 1
    chance = rng.beta(p * total, (1 - p) * total, (replications, clusters))
    return (rng.random((replications, clusters, m)) < chance[:, :, None]).astype(float)


def errors(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per replication: the mean, the plain error sd(ddof=1)/√n and CR1's sqrt(C/(C-1) Σ_c (Σ_{i in c} ψ_i)²)."""
    replications, clusters, m = scores.shape
    n = clusters * m
    mean = scores.reshape(replications, n).mean(axis=1)
    plain = scores.reshape(replications, n).std(axis=1, ddof=1) / math.sqrt(n)
    totals = (scores.sum(axis=2) - m * mean[:, None]) / n
    clustered = np.sqrt(clusters / (clusters - 1) * (totals**2).sum(axis=1))
    return mean, plain, clustered


def intervals(mean: np.ndarray, plain: np.ndarray, clustered: np.ndarray, n: int, clusters: int):
    """method -> (low, high) arrays, each replication's interval by the candidates written here."""
    variance = np.maximum(plain, clustered) ** 2
    estimated = variance > 0
    n_eff = np.where(estimated, mean * (1 - mean) / np.where(estimated, variance, 1.0), clusters)
    quantile = 1 - (1 - LEVEL) / 2
    korn_graubard = min(1.0, (stats.t.ppf(quantile, n - 1) / stats.t.ppf(quantile, clusters - 1)) ** 2)
    n_kg = np.where(estimated, n_eff * korn_graubard, n_eff)
    out = {
        "before": proportion_confint(mean * n_kg, n_kg, 1 - LEVEL, "wilson"),
        "CP (KG)": proportion_confint(mean * n_kg, n_kg, 1 - LEVEL, "beta"),
        "Jeffreys (KG)": proportion_confint(mean * n_kg, n_kg, 1 - LEVEL, "jeffreys"),
    }
    # Wilson with t_{C-1} for z: centre (p + q²/2n)/(1 + q²/n), half-width q/(1 + q²/n)·sqrt(p(1-p)/n + q²/4n²)
    q = np.where(estimated, stats.t.ppf(quantile, clusters - 1), stats.norm.ppf(quantile))
    shrink = 1 + q * q / n_eff
    centre = (mean + q * q / (2 * n_eff)) / shrink
    half = q / shrink * np.sqrt(mean * (1 - mean) / n_eff + q * q / (4 * n_eff**2))
    out["wilson t"] = (centre - half, centre + half)
    # issue 76's rule (the report until issue 88): Korn-Graubard with df = min(C - 1, x), never below min(n_eff, C)
    rarer = n * np.minimum(mean, 1 - mean)
    df = np.minimum(clusters - 1, rarer)
    factor = np.minimum(1.0, (stats.t.ppf(quantile, n - 1) / stats.t.ppf(quantile, np.maximum(df, 1e-9))) ** 2)
    floor = np.minimum(n_eff, clusters)
    n_76 = np.where(estimated, np.where(df > 0, np.maximum(n_eff * factor, floor), floor), n_eff)
    out["issue 76"] = proportion_confint(mean * n_76, n_76, 1 - LEVEL, "wilson")
    # Clopper-Pearson where the n is no more than the items (the rows stand for C draws), Wilson otherwise
    cp = proportion_confint(mean * n_76, n_76, 1 - LEVEL, "beta")
    at_items = estimated & (n_76 <= clusters)
    out["CP at the items' n"] = tuple(np.where(at_items, c, w) for c, w in zip(cp, out["issue 76"], strict=True))
    # and under 10 items no more than the items
    n_few = np.where(estimated, np.minimum(n_76, clusters), n_76) if clusters < FEW else n_76
    cp = proportion_confint(mean * n_few, n_few, 1 - LEVEL, "beta")
    wilson = proportion_confint(mean * n_few, n_few, 1 - LEVEL, "wilson")
    at_items = estimated & (n_few <= clusters)
    out["CP, items' n under 10"] = tuple(np.where(at_items, c, w) for c, w in zip(cp, wilson, strict=True))
    return {k: (np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)) for k, (low, high) in out.items()}


def shipped(mean: np.ndarray, plain: np.ndarray, clustered: np.ndarray, n: int, clusters: int):
    """`Estimate.interval` per replication: the report's own code."""
    bounds = [
        Estimate(float(v), float(s), float(c), n, clusters, 1).interval() or (math.nan, math.nan)
        for v, s, c in zip(mean, plain, clustered, strict=True)
    ]
    low, high = np.array(bounds).T
    return low, high


def cell(m: int, p: float, clusters: int, icc: float, replications: int) -> dict[str, tuple[float, float]]:
    """method -> (coverage, mean width) in one cell, seeded by the cell."""
    rng = np.random.default_rng([m, round(p * 100), clusters, round(icc * 100)])
    scores = draw(m, p, clusters, icc, replications, rng)
    mean, plain, clustered = errors(scores)
    found = mean_error(list(scores[0].ravel()), [[c] for c in range(clusters) for _ in range(m)])
    assert math.isclose(found.stderr, plain[0], rel_tol=1e-9, abs_tol=1e-15), (found.stderr, plain[0])
    assert math.isclose(found.stderr_clustered, clustered[0], rel_tol=1e-9, abs_tol=1e-15)
    n = clusters * m
    bounds = intervals(mean, plain, clustered, n, clusters)
    bounds["shipped"] = shipped(mean, plain, clustered, n, clusters)
    return {
        k: (float(np.mean((low <= p) & (p <= high))), float(np.mean(high - low))) for k, (low, high) in bounds.items()
    }


def summary(found: dict, grid: list, base_method: str) -> None:
    print("| interval | worst cell (rows, p, items, ρ) | coverage there | cells < 93 % | mean width | vs before |")
    print("|---|---|---|---|---|---|")
    base = np.mean([found[k][base_method][1] for k in grid])
    for method in METHODS:
        worst = min(grid, key=lambda k: found[k][method][0])
        short = sum(found[k][method][0] < 0.93 for k in grid)
        width = np.mean([found[k][method][1] for k in grid])
        print(
            f"| {method} | {worst} | {found[worst][method][0] * 100:.1f} % | {short} of {len(grid)} | "
            f"{width * 100:.2f} pts | {width / base:.3f}x |"
        )


def per_cell(found: dict, grid: list, before: str) -> None:
    print(f"\nCoverage % per cell and mean width in points ({before} → shipped)\n")
    print("| rows | p | items | ρ | " + " | ".join(METHODS) + f" | width {before} | width shipped |")
    print("|" + "---|" * (len(METHODS) + 6))
    for key in grid:
        cov = " | ".join(f"{found[key][k][0] * 100:.1f}" for k in METHODS)
        widths = f"{found[key][before][1] * 100:.1f} | {found[key]['shipped'][1] * 100:.1f}"
        print(f"| {key[0]} | {key[1]:g} | {key[2]} | {key[3]:g} | {cov} | {widths} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=2000, help="a cell of issue 76's grid")
    parser.add_argument("--few-replications", type=int, default=1000, help="a cell of issue 88's grid")
    args = parser.parse_args()
    grids = {
        "issue 76's grid": (list(itertools.product(SIZES, CHANCES, CLUSTERS, ICCS)), args.replications, "before"),
        "issue 88's grid": (
            list(itertools.product(FEW_SIZES, FEW_CHANCES, FEW_CLUSTERS, FEW_ICCS)),
            args.few_replications,
            "issue 76",
        ),
    }
    for title, (grid, replications, before) in grids.items():
        start = time.perf_counter()
        found = {key: cell(*key, replications) for key in grid}
        print(f"### {title}: {len(grid)} cells x {replications} replications, {time.perf_counter() - start:.0f} s\n")
        summary(found, grid, before)
        if title.startswith("issue 88"):
            for clusters in FEW_CLUSTERS:
                print(f"\n{clusters} items:\n")
                summary(found, [k for k in grid if k[2] == clusters], before)
        per_cell(found, grid, before)
        print()


if __name__ == "__main__":
    main()
