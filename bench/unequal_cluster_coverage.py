#!/usr/bin/env python
"""Coverage of the report's interval (`Estimate.interval`) where clusters differ in size (issue 98), beside CR1 with
t_{C-1} (the report before issue 98) and a percentile cluster bootstrap; the successor of
bench/report_interval_coverage.py's grids for unequal designs.

Each cell: C clusters of given sizes of a 0/1 score, each cluster's chance Beta with mean p and intra-cluster
correlation ρ (a + b = 1/ρ - 1), as in bench/report_interval_coverage.py. Designs:

- `half`: one cluster holds half the rows, the others 3 rows each (C - 1 clusters of 3, one of 3(C - 1));
- `tail a`, `tail b`: sizes 1 + ⌊2·Pareto(1.1)⌋ (numpy's Lomax), two seeded draws per C: a long tail, where at times
  one cluster holds most of the rows;
- `equal`: C clusters of 4 rows (the control: the interval is the one issue 88 shipped).

Per replication the mean, plain, CR1 and CR2 errors, Bell-McCaffrey's df and Kish's clusters are computed with
numpy (`harness.uncertainty.small_sample`'s functions, the df per distinct estimated ρ) and the report's rule applied
in arrays; the first replications of each cell are checked against `mean_error` -> `uncertainty_entry` ->
`estimate_behind` -> `Estimate.interval()`, the report's own chain. `none`: the share of replications with no
interval (Kish's clusters under 2: the report says why); coverage is over the replications with one. The bootstrap:
B = 400 cluster resamples (the same resampling counts for every replication of a cell), the 2.5 and 97.5 percentiles.

Usage: .venv/bin/python bench/unequal_cluster_coverage.py [--replications 1000] [--quick]
(--quick: 300 replications a cell, 29 s on one shared core; the full grid at 1,000, 96 s)
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from harness.outputs.results.estimates import estimate_behind
from harness.outputs.results.results import uncertainty_entry
from harness.uncertainty.small_sample import TOO_FEW_KISH, bell_mccaffrey_df, icc_estimate, kish_clusters
from harness.uncertainty.variance import mean_error

CLUSTERS = (5, 10, 20, 40, 60)
DESIGNS = ("half", "tail a", "tail b", "equal")
ICCS = (0.1, 0.3, 0.6, 0.9)
CHANCES = (0.02, 0.05, 0.2, 0.5, 0.95, 0.98)
LEVEL = 0.95
QUANTILE = 1 - (1 - LEVEL) / 2
BOOTSTRAP = 400
CHECKED = 15  # replications per cell checked against the report's own code


def sizes_of(design: str, clusters: int) -> np.ndarray:
    if design == "half":
        return np.array([3 * (clusters - 1)] + [3] * (clusters - 1))
    if design == "equal":
        return np.full(clusters, 4)
    rng = np.random.default_rng([clusters, DESIGNS.index(design)])
    return 1 + np.floor(2 * rng.pareto(1.1, clusters)).astype(np.int64)


def draw(sizes: np.ndarray, p: float, icc: float, replications: int, rng: np.random.Generator) -> np.ndarray:
    total = 1 / icc - 1
    chance = rng.beta(p * total, (1 - p) * total, (replications, len(sizes)))
    return (rng.random((replications, int(sizes.sum()))) < np.repeat(chance, sizes, axis=1)).astype(float)


def errors(scores: np.ndarray, sizes: np.ndarray) -> dict[str, np.ndarray]:
    """Per replication: mean, plain, CR1, CR2 errors and the interval's df, Bell-McCaffrey's at most G* - 1 (rows are
    clusters in order)."""
    n, clusters = scores.shape[1], len(sizes)
    mean = scores.mean(axis=1)
    plain = scores.std(axis=1, ddof=1) / math.sqrt(n)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    totals = (np.add.reduceat(scores, starts, axis=1) - sizes * mean[:, None]) / n
    cr1 = np.sqrt(clusters / (clusters - 1) * (totals**2).sum(axis=1))
    cr2 = np.sqrt((totals**2 / (1 - sizes / n)).sum(axis=1))
    icc = np.array([icc_estimate(v * v, s * s, sizes) for v, s in zip(cr2, plain, strict=True)])
    distinct, where = np.unique(icc, return_inverse=True)
    df = np.minimum([bell_mccaffrey_df(sizes, r) for r in distinct], clusters - 1)[where]
    squares = totals**2  # G* - 1 of the draw bounds it (`variance._heterogeneity_df`)
    spread = squares.sum(axis=1) > 0
    heterogeneity = squares.sum(axis=1) ** 2 / np.where(spread, (squares**2).sum(axis=1), 1.0)
    df = np.where(spread, np.minimum(df, np.maximum(np.minimum(heterogeneity, clusters) - 1, 1.0)), df)
    return {"mean": mean, "plain": plain, "cr1": cr1, "cr2": cr2, "df": df, "totals": totals}


def korn_graubard(found: dict[str, np.ndarray], n: int, df_cap: np.ndarray, units: float, cr2: bool):
    """The report's rule in arrays: Clopper-Pearson or Wilson on Korn-Graubard's n (`Estimate.interval_n`)."""
    mean = found["mean"]
    variance = np.maximum(found["plain"], np.maximum(found["cr1"], found["cr2"] if cr2 else 0.0)) ** 2
    estimated = variance > 0
    n_eff = np.where(estimated, np.minimum(mean * (1 - mean) / np.where(estimated, variance, 1.0), n), units)
    df = np.minimum(df_cap, n * np.minimum(mean, 1 - mean))
    factor = np.minimum(1.0, (stats.t.ppf(QUANTILE, n - 1) / stats.t.ppf(QUANTILE, np.maximum(df, 1e-9))) ** 2)
    floor = np.minimum(n_eff, units)
    size = np.where(estimated, np.where(df > 0, np.maximum(n_eff * factor, floor), floor), n_eff)
    exact = estimated & (size <= units)
    cp = proportion_confint(mean * size, size, 1 - LEVEL, "beta")
    wilson = proportion_confint(mean * size, size, 1 - LEVEL, "wilson")
    low, high = np.where(exact, cp[0], wilson[0]), np.where(exact, cp[1], wilson[1])
    return np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)


def bootstrap(found: dict[str, np.ndarray], sizes: np.ndarray, rng: np.random.Generator):
    """Percentile cluster bootstrap of the mean: resample clusters, B draws shared by the cell's replications."""
    counts = rng.multinomial(len(sizes), np.full(len(sizes), 1 / len(sizes)), BOOTSTRAP).astype(float)
    n = sizes.sum()
    sums = found["totals"] * n + sizes * found["mean"][:, None]  # each cluster's sum of scores
    means = (counts @ sums.T) / (counts @ sizes)[:, None]  # (B, replications)
    return np.percentile(means, 2.5, axis=0), np.percentile(means, 97.5, axis=0)


def check(scores: np.ndarray, sizes: np.ndarray, low: np.ndarray, high: np.ndarray, kish: float) -> None:
    """The arrays' interval is the report's own, on the first replications."""
    keys = [[int(c)] for c in np.repeat(np.arange(len(sizes)), sizes)]
    for r in range(min(CHECKED, len(scores))):
        error = mean_error(scores[r], keys)
        estimate = estimate_behind(
            float(scores[r].mean()), error.stderr, error.stderr_clustered, error.n, 1.0, uncertainty_entry(error)
        )
        bounds = estimate.interval()
        if kish < TOO_FEW_KISH:
            assert bounds is None and estimate.why_no_interval, (sizes, r)
            continue
        assert bounds is not None and np.allclose(bounds, (low[r], high[r]), atol=1e-9), (sizes, r, bounds, low[r])


def cell(design: str, clusters: int, icc: float, p: float, replications: int) -> dict[str, float]:
    sizes = sizes_of(design, clusters)
    n = int(sizes.sum())
    rng = np.random.default_rng([DESIGNS.index(design), clusters, round(icc * 100), round(p * 100)])
    scores = draw(sizes, p, icc, replications, rng)
    found = errors(scores, sizes)
    kish = kish_clusters(sizes)
    low, high = korn_graubard(found, n, found["df"], kish, cr2=True)
    check(scores, sizes, low, high, kish)
    old_low, old_high = korn_graubard(found, n, np.full(replications, clusters - 1.0), clusters, cr2=False)
    boot_low, boot_high = bootstrap(found, sizes, rng)
    shown = kish >= TOO_FEW_KISH
    return {
        "n": n,
        "largest": int(sizes.max()),
        "kish": kish,
        "none": 0.0 if shown else 1.0,
        "coverage": float(np.mean((low <= p) & (p <= high))) if shown else math.nan,
        "width": float(np.median(high - low)) if shown else math.nan,
        "before": float(np.mean((old_low <= p) & (p <= old_high))),
        "boot coverage": float(np.mean((boot_low <= p) & (p <= boot_high))),
        "boot width": float(np.median(boot_high - boot_low)),
    }


def summary(found: dict, grid: list) -> None:
    print(
        "| design | cells | no interval | shipped: worst (C, ρ, p) | cells < 93 % | before: worst | cells < 93 % | ",
        end="",
    )
    print("bootstrap: worst | cells < 93 % | median width shipped / bootstrap (cells' medians) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for design in DESIGNS:
        keys = [k for k in grid if k[0] == design]
        shown = [k for k in keys if not found[k]["none"]]
        row = [design, str(len(keys)), str(len(keys) - len(shown))]
        for name in ("coverage", "before", "boot coverage"):
            among = shown if name == "coverage" else keys
            if not among:
                row += ["-", "-"]
                continue
            worst = min(among, key=lambda k: found[k][name])
            row += [f"{found[worst][name] * 100:.1f} % {worst[1:]}", str(sum(found[k][name] < 0.93 for k in among))]
        widths = [(found[k]["width"] * 100, found[k]["boot width"] * 100) for k in shown]
        shipped, boot = np.median(widths, axis=0) if widths else (math.nan, math.nan)
        print("| " + " | ".join(row) + f" | {shipped:.1f} / {boot:.1f} pts |")


def per_cell(found: dict, grid: list) -> None:
    print(
        "\n| design | C | rows (largest) | Kish | ρ | p | shipped % | before % | bootstrap % | width shipped | ", end=""
    )
    print("width bootstrap |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for key in grid:
        f = found[key]
        shipped = "none" if f["none"] else f"{f['coverage'] * 100:.1f}"
        width = "-" if f["none"] else f"{f['width'] * 100:.1f}"
        print(
            f"| {key[0]} | {key[1]} | {f['n']} ({f['largest']}) | {f['kish']:.1f} | {key[2]:g} | {key[3]:g} | "
            f"{shipped} | {f['before'] * 100:.1f} | {f['boot coverage'] * 100:.1f} | {width} | "
            f"{f['boot width'] * 100:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="300 replications a cell")
    args = parser.parse_args()
    replications = 300 if args.quick else args.replications
    grid = list(itertools.product(DESIGNS, CLUSTERS, ICCS, CHANCES))
    start = time.perf_counter()
    found = {key: cell(*key, replications) for key in grid}
    print(f"### {len(grid)} cells x {replications} replications, {time.perf_counter() - start:.0f} s\n")
    summary(found, grid)
    per_cell(found, grid)


if __name__ == "__main__":
    main()
