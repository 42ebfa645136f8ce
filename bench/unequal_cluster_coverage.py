#!/usr/bin/env python
"""Coverage and width of the report's interval (`Estimate.interval`) in every design the benchmarks produce
(issues 98 and 107), beside the rule issue 98 shipped, a wild cluster restricted bootstrap and CR1 with t_{C-1}, on
the same draws.

Each cell: a design (the rows' clusters, or the keys a crossed design's rows carry), a 0/1 score at mean p with
intra-cluster correlation ρ, `--replications` seeded draws. Families:

- `half`: one cluster holds half the rows, C - 1 clusters of 3; `tail a`, `tail b`: sizes 1 + ⌊2·Pareto(1.1)⌋, two
  seeded draws per C; `equal`: C clusters of 4 (issue 98's grid, C = 5..60); `few`: 3, 5 or 8 clusters of 3 or 6
  rows (issue 88's sizes).
- `big among singletons` (issue 107, item 1): k clusters of m rows among s single rows, the shape of a document
  benchmark at `--limit` or by breakdown (a few long documents with many questions, many with one).
- `one of 30 %` (item 3): one cluster of 30 % of the rows among C = 60, 100, 200, the others of 3 rows.
- `crossed` (item 2): rows that carry several keys, drawn as the benchmarks' image sharing makes them. MMNeedle's
  M = 10 haystacks, 10 of 10,000 stitched images a sample, 100 samples (K = 2, 5: linked components of unequal
  size) and 1,000 (K = 1: one component); MileBench-like rows, each sample in two modes (`key: [subset,
  sample_id]`), 40 multi-question sources of 1-4 samples sharing one image set, and a needle subset of 40 samples
  showing 3 of one 12-image haystack each (`overlap: image_sha256`). A row's score is 1 where ρ^½ (its images'
  mean effect, scaled to variance 1) + (1 - ρ)^½ · noise lies under Φ⁻¹(p).

Scores in a partition: each cluster's chance Beta with mean p and a + b = 1/ρ - 1 (issue 98's draws).

Methods, per replication:

- `rule`: the report's interval now (issue 107): the cluster score test's interval joined with Korn-Graubard's
  (docs/statistics.md, "One rule for every design"); none where Kish's clusters are no more than c² (crossed: the
  rows' units, 1 / Σ_{i~j} a_i a_j). Computed in arrays here and checked against the report's own chain (`mean_error`
  -> `uncertainty_entry` -> `estimate_behind` -> `Estimate.interval`) on the first replications of every cell.
- `issue 98`: the rule before (Korn-Graubard on the larger of the plain, CR1 and CR2 errors, df = min(Bell-
  McCaffrey's at the rows' ρ, G* - 1, C - 1, x), Kish's floor; none under 2 Kish clusters). A crossed design took
  the graph sum with C - 1 = the components less one, as `Estimate` read it.
- `WCR`: MacKinnon and Webb's wild cluster restricted bootstrap, Webb's six-point weights, 399 draws (shared by a
  cell's replications), the CR1 t statistic inverted by bisection (20 steps) on [0, 1], on the first 400 of a cell's
  replications (the same draws as the others'); a crossed design's weights per linked component (its independent
  units), none with one component.
- `CR1 + t`: ȳ ± t_{C-1} · CR1, cut at [0, 1] (components for a crossed design; none with one).

A coverage is over the replications that show an interval; its Monte Carlo error at 1,000 replications is 0.7 points
at 95 % (one standard error; WCR's, at 400, 1.1). Widths: medians of a cell's replications, points of 0-100.

Usage: .venv/bin/python bench/unequal_cluster_coverage.py [--replications 1000] [--quick] [--cells] [--cost]
       [--family NAME]
(936 cells, 280 s on one shared core; --quick: 200 replications a cell; --cells: the per-cell table; --cost: the time
per estimate of each method, run with OPENBLAS_NUM_THREADS=1 on a shared machine)
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
from scipy import sparse, stats
from scipy.sparse.csgraph import connected_components
from statsmodels.stats.proportion import proportion_confint

from harness.outputs.results.estimates import estimate_behind
from harness.outputs.results.results import uncertainty_entry
from harness.uncertainty.small_sample import TOO_FEW_KISH, bell_mccaffrey_df, critical_value
from harness.uncertainty.variance import mean_error

ICCS = (0.1, 0.3, 0.6, 0.9)
CHANCES = (0.02, 0.05, 0.2, 0.5, 0.95, 0.98)
LEVEL = 0.95
QUANTILE = 1 - (1 - LEVEL) / 2
Z = float(stats.norm.ppf(QUANTILE))
WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])
BOOTSTRAP = 399  # (B + 1) α an integer, as MacKinnon and Webb draw
WILD_REPLICATIONS = 400  # WCR on a cell's first 400 draws: its cost is the grid's (`--cost`)
CHECKED = 10  # replications per cell checked against the report's own code
METHODS = ("rule", "issue 98", "WCR", "CR1 + t")


def partition_designs() -> list[tuple[str, str, np.ndarray]]:
    """(family, name, cluster sizes) of every partition in the grid."""
    designs = []
    for family, clusters in itertools.product(("half", "tail a", "tail b", "equal"), (5, 10, 20, 40, 60)):
        if family == "half":
            sizes = np.array([3 * (clusters - 1)] + [3] * (clusters - 1))
        elif family == "equal":
            sizes = np.full(clusters, 4)
        else:
            rng = np.random.default_rng([clusters, ("half", "tail a", "tail b").index(family)])
            sizes = 1 + np.floor(2 * rng.pareto(1.1, clusters)).astype(np.int64)
        designs.append((family, f"C {clusters}", sizes))
    for rows, clusters in itertools.product((3, 6), (3, 5, 8)):
        designs.append(("few", f"{clusters} x {rows}", np.full(clusters, rows)))
    for big, size, single in (
        (2, 80, 60),
        (3, 40, 10),
        (4, 40, 10),
        (4, 40, 60),
        (6, 40, 60),
        (6, 40, 200),
        (8, 20, 100),
    ):
        designs.append(("big among singletons", f"{big} x {size} + {single}", np.array([size] * big + [1] * single)))
    for clusters in (60, 100, 200):
        largest = round(0.3 / 0.7 * 3 * (clusters - 1))
        designs.append(("one of 30 %", f"C {clusters}", np.array([largest] + [3] * (clusters - 1))))
    return designs


def crossed_design(name: str) -> tuple[list[list[int]], sparse.csr_matrix]:
    """Each row's keys (images, and a sample key where a sample is asked twice) and its rows x images incidence."""
    rng = np.random.default_rng(list(name.encode()))
    pool, modes = 10_000, 1
    if name.startswith("MMNeedle"):
        samples = 100 if "100" in name else 1000
        sets = [rng.choice(pool, 10, replace=False) for _ in range(samples)]
    else:  # MileBench-like
        modes, sets = 2, []
        for _ in range(40):
            sets += [rng.choice(pool, 4, replace=False)] * int(rng.integers(1, 5))
        haystack = rng.choice(pool, 12, replace=False)
        sets += [np.append(rng.choice(haystack, 3, replace=False), rng.integers(pool)) for _ in range(40)]
    keys = [[int(k) for k in s] + ([pool + j] if modes > 1 else []) for j, s in enumerate(sets) for _ in range(modes)]
    rows = np.repeat(np.arange(len(keys)), [len(k) for k in keys])
    images = np.array([k for row in keys for k in row])
    incidence = sparse.csr_matrix((np.ones(len(rows)), (rows, images)), shape=(len(keys), pool + len(sets)))
    return keys, incidence


CROSSED = ("MMNeedle M=10, 100 samples", "MMNeedle M=10, 1,000 samples", "MileBench-like")


def draw_partition(sizes: np.ndarray, p: float, icc: float, reps: int, rng: np.random.Generator) -> np.ndarray:
    total = 1 / icc - 1
    chance = rng.beta(p * total, (1 - p) * total, (reps, len(sizes)))
    return (rng.random((reps, int(sizes.sum()))) < np.repeat(chance, sizes, axis=1)).astype(float)


def draw_crossed(incidence: sparse.csr_matrix, p: float, icc: float, reps: int, rng: np.random.Generator):
    images = incidence.copy()
    images.data[:] = 1.0
    per_row = np.asarray(images.sum(axis=1)).ravel()
    effect = (images @ rng.standard_normal((images.shape[1], reps))).T / np.sqrt(per_row)
    latent = math.sqrt(icc) * effect + math.sqrt(1 - icc) * rng.standard_normal(effect.shape)
    return (latent < stats.norm.ppf(p)).astype(float)


def korn_graubard(mean, variance, n, df, units, model_n=math.inf, rare=True):
    """`Estimate._korn_graubard` in arrays: Clopper-Pearson or Wilson on Korn and Graubard's n (`rare`: df at most
    the rows of the rarer outcome)."""
    estimated = variance > 0
    n_eff = np.where(estimated, np.minimum(mean * (1 - mean) / np.where(estimated, variance, 1.0), n), units)
    n_eff = np.where(estimated, np.minimum(n_eff, model_n), n_eff)
    dfx = np.minimum(df, n * np.minimum(mean, 1 - mean)) if rare else np.full(len(mean), df)
    factor = np.minimum(1.0, (stats.t.ppf(QUANTILE, n - 1) / stats.t.ppf(QUANTILE, np.maximum(dfx, 1e-9))) ** 2)
    floor = np.minimum(n_eff, units)
    size = np.where(estimated, np.where(dfx > 0, np.maximum(n_eff * factor, floor), floor), n_eff)
    exact = estimated & (size <= units)
    cp = proportion_confint(mean * size, size, 1 - LEVEL, "beta")
    wilson = proportion_confint(mean * size, size, 1 - LEVEL, "wilson")
    low, high = np.where(exact, cp[0], wilson[0]), np.where(exact, cp[1], wilson[1])
    return np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)


def score(mean, raw, slope, units, critical, kg):
    """`small_sample.score_bounds` in arrays, cut at [0, 1] and joined with the Korn-Graubard interval `kg`."""
    c2 = critical * critical
    lead = 1 - c2 / units
    root = np.sqrt((c2 * slope) ** 2 + lead * c2 * np.maximum(raw, 0.0))
    low = np.clip(mean - (c2 * slope + root) / lead, 0, 1)
    high = np.clip(mean - (c2 * slope - root) / lead, 0, 1)
    return np.minimum(low, kg[0]), np.maximum(high, kg[1])


def model_n(own: float, pooled: float, icc: np.ndarray) -> np.ndarray:
    k = own + icc * (pooled - own)
    return np.where(k > 0, 1 / np.maximum(k, 1e-300), math.inf)


def icc_of(spread: np.ndarray, linked: float, variance: np.ndarray) -> np.ndarray:
    if not linked:
        return np.zeros_like(variance)
    return np.where(variance > 0, np.clip(1 - spread / (2 * linked) / np.where(variance > 0, variance, 1), 0, 1), 1.0)


def partition_methods(scores: np.ndarray, sizes: np.ndarray) -> dict:
    """Every method's (low, high, shown) per replication, rows in cluster order."""
    reps, n = scores.shape
    clusters = len(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    mean = scores.mean(axis=1)
    plain = scores.std(axis=1, ddof=1) / math.sqrt(n)
    sums = np.add.reduceat(scores, starts, axis=1)
    totals = (sums - sizes * mean[:, None]) / n
    raw = (totals**2).sum(axis=1)
    cr1 = np.sqrt(clusters / (clusters - 1) * raw)
    cr2 = np.sqrt((totals**2 / (1 - sizes / n)).sum(axis=1))
    shares = sizes / n
    units = 1 / float(np.dot(shares, shares))
    out = {}
    # the rule (issue 107)
    squares = np.add.reduceat(((scores - mean[:, None]) / n) ** 2, starts, axis=1)
    spread = (sizes * squares - totals**2).sum(axis=1)
    icc = icc_of(spread, float((sizes * (sizes - 1)).sum()) / 2, (squares.sum(axis=1)) / (n - 1))
    largest = int(np.argmax(sizes))
    rest = np.arange(clusters) != largest
    model = model_n(float(sizes[rest].sum()) / n**2, float(np.dot(shares[rest], shares[rest])), icc)
    variance = np.maximum(plain, np.maximum(cr1, cr2)) ** 2
    kg = korn_graubard(mean, variance, n, clusters - 1.0, units, model)
    critical = critical_value(clusters)
    low, high = score(mean, raw, (shares * totals).sum(axis=1), units, critical, kg)
    out["rule"] = (low, high, np.full(reps, units > critical * critical and 2 * sizes.max() < n))
    # issue 98
    mbar = float(np.dot(sizes, sizes)) / n  # `icc_estimate` in arrays: ρ from CR2's design effect
    with np.errstate(divide="ignore", invalid="ignore"):
        bm = np.where(plain > 0, np.clip((cr2 * cr2 / (plain * plain) - 1) / (mbar - 1), 0, 1), 1.0)
    distinct, where = np.unique(bm, return_inverse=True)
    df = np.minimum([bell_mccaffrey_df(sizes, r) for r in distinct], clusters - 1)[where]
    heterogeneity = (totals**2).sum(axis=1) ** 2 / np.where(raw > 0, (totals**4).sum(axis=1), 1.0)
    df = np.where(raw > 0, np.minimum(df, np.maximum(np.minimum(heterogeneity, clusters) - 1, 1.0)), df)
    old = korn_graubard(mean, variance, n, df, units)
    out["issue 98"] = (*old, np.full(reps, units >= TOO_FEW_KISH))
    wild = wild_restricted(sums[:WILD_REPLICATIONS] / n, shares, np.random.default_rng(clusters))
    out["WCR"] = (*wild, np.ones(len(wild[0]), bool))
    half = stats.t.ppf(QUANTILE, clusters - 1) * cr1
    out["CR1 + t"] = (np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1), np.ones(reps, bool))
    return out


def crossed_methods(scores: np.ndarray, keys: list[list[int]]) -> dict:
    reps, n = scores.shape
    design = mean_error(scores[0], keys)  # the design's components, as the harness finds them
    first, second, components = _links(keys)
    count = int(components.max()) + 1
    mean = scores.mean(axis=1)
    psi = (scores - mean[:, None]) / n
    plain = np.sqrt(n / (n - 1) * (psi**2).sum(axis=1))
    raw = (psi**2).sum(axis=1) + 2 * (psi[:, first] * psi[:, second]).sum(axis=1)
    degree = 1 + np.bincount(first, minlength=n) + np.bincount(second, minlength=n)
    slope = (psi * degree).sum(axis=1) / n
    units = n * n / (n + 2.0 * len(first))
    icc = icc_of(((psi[:, first] - psi[:, second]) ** 2).sum(axis=1), float(len(first)), (psi**2).sum(axis=1) / (n - 1))
    sizes = np.bincount(components)
    outside = components[first] != np.argmax(sizes)
    model = model_n((n - sizes.max()) / n**2, (n - sizes.max() + 2.0 * outside.sum()) / n**2, icc)
    variance = np.maximum(plain, np.sqrt(np.maximum(raw, 0))) ** 2
    kg = korn_graubard(mean, variance, n, math.inf, units, model)
    low, high = score(mean, raw, slope, units, Z, kg)
    out = {"rule": (low, high, np.full(reps, units > Z * Z))}
    old_df = count - 1.0 if count >= 2 else math.inf  # one component: no correction, as `Estimate` read it
    old = korn_graubard(mean, variance, n, old_df, float(count), rare=count >= 2)
    out["issue 98"] = (*old, np.ones(reps, bool))
    sums = np.stack([np.bincount(components, weights=row, minlength=count) for row in scores]) / n
    shares = sizes / n
    comp_totals = sums - shares * mean[:, None]
    shown = np.full(reps, count >= 2)
    if count >= 2:
        wild = wild_restricted(sums[:WILD_REPLICATIONS], shares, np.random.default_rng(count))
        half = stats.t.ppf(QUANTILE, count - 1) * np.sqrt(count / (count - 1) * (comp_totals**2).sum(axis=1))
    else:
        wild, half = (mean[:WILD_REPLICATIONS], mean[:WILD_REPLICATIONS]), np.zeros(reps)
    out["WCR"] = (*wild, shown[:WILD_REPLICATIONS])
    out["CR1 + t"] = (np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1), shown)
    assert design.n_clusters == count
    return out


def _links(keys: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(len(keys)), [len(k) for k in keys])
    incidence = sparse.csr_matrix((np.ones(len(rows)), (rows, [k for row in keys for k in row])))
    linked = sparse.triu(incidence @ incidence.T, k=1).tocoo()
    _, components = connected_components(incidence @ incidence.T, directed=False)
    return linked.row.astype(np.int64), linked.col.astype(np.int64), components


def wild_restricted(sums: np.ndarray, shares: np.ndarray, rng: np.random.Generator, steps: int = 20):
    """The WCR interval of a mean (MacKinnon and Webb 2017): at each θ, y* = θ + v_c (y - θ) with Webb's weights v_c
    per cluster, t* = (ȳ* - θ) / CR(ȳ*), θ kept where |t(θ)| < |t*| in more than 5 % of draws. Everything is linear
    in θ per draw (cluster c's residual total v_c U_c - W_c T*, U_c = α_c - W_c θ), so each θ costs O(draws)."""
    weights = WEBB[rng.integers(0, len(WEBB), (BOOTSTRAP, len(shares)))]
    mean = sums.sum(axis=1)
    observed = np.sqrt(((sums - shares * mean[:, None]) ** 2).sum(axis=1))
    a = sums @ weights.T
    b = weights @ shares
    squared, w2 = weights * weights, shares * shares
    c0 = (sums**2) @ squared.T - 2 * a * ((sums * shares) @ weights.T) + a * a * w2.sum()
    c1 = (sums * shares) @ squared.T - b * ((sums * shares) @ weights.T) - a * (weights @ w2) + a * b * w2.sum()
    c2 = squared @ w2 - 2 * b * (weights @ w2) + b * b * w2.sum()

    def kept(theta: np.ndarray) -> np.ndarray:  # |t*| ≥ |t| squared and cross-multiplied: no root, no 0/0
        column = theta[:, None]
        drawn = (a - column * b) ** 2 * (observed * observed)[:, None]
        t = ((mean - theta) ** 2)[:, None] * np.maximum(c0 - 2 * column * c1 + column * column * c2, 0.0)
        return np.mean(drawn >= t * (1 - 1e-9), axis=1) > 1 - LEVEL

    bounds = []
    for edge in (0.0, 1.0):
        inner, outer = mean.copy(), np.full(len(mean), edge)
        for _ in range(steps):
            middle = (inner + outer) / 2
            holds = kept(middle)
            inner, outer = np.where(holds, middle, inner), np.where(holds, outer, middle)
        bounds.append(np.where(kept(np.full(len(mean), edge)), edge, (inner + outer) / 2))
    return bounds[0], bounds[1]


def check(scores: np.ndarray, keys: list[list[int]], low: np.ndarray, high: np.ndarray, shown: np.ndarray) -> None:
    """The arrays' rule is the report's own, on the first replications."""
    for r in range(min(CHECKED, len(scores))):
        error = mean_error(scores[r], keys)
        entry = uncertainty_entry(error)
        estimate = estimate_behind(float(scores[r].mean()), error.stderr, error.stderr_clustered, error.n, 1.0, entry)
        bounds = estimate.interval()
        if not shown[r]:
            assert bounds is None and estimate.why_no_interval, (r, bounds)
            continue
        assert bounds is not None and np.allclose(bounds, (low[r], high[r]), atol=1e-7), (r, bounds, low[r], high[r])


def cell(family: str, name: str, design, icc: float, p: float, reps: int) -> dict[str, float]:
    seed = [sum(map(ord, family + name)), round(icc * 100), round(p * 100)]
    rng = np.random.default_rng(seed)
    if family == "crossed":
        keys, incidence = design
        scores = draw_crossed(incidence, p, icc, reps, rng)
        found = crossed_methods(scores, keys)
    else:
        keys = [[int(c)] for c in np.repeat(np.arange(len(design)), design)]
        scores = draw_partition(design, p, icc, reps, rng)
        found = partition_methods(scores, design)
    check(scores, keys, *found["rule"])
    result: dict[str, float] = {}
    for method, (low, high, shown) in found.items():
        covered = (low <= p + 1e-12) & (p - 1e-12 <= high)
        result[method] = float(covered[shown].mean()) if shown.any() else math.nan
        result[f"{method} width"] = float(np.median((high - low)[shown]) * 100) if shown.any() else math.nan
        result[f"{method} none"] = float(1 - shown.mean())
    return result


def describe(family: str, design) -> str:
    if family == "crossed":
        keys, _ = design
        first, _, components = _links(keys)
        sizes = np.bincount(components)
        return f"{len(keys)} rows, {len(sizes)} components (largest {sizes.max()}), units {len(keys) ** 2 / (len(keys) + 2 * len(first)):.1f}"
    return f"{design.sum()} rows (largest {design.max()}), Kish {design.sum() ** 2 / np.dot(design, design):.1f}"


def summary(found: dict, grid: list) -> None:
    families = list(dict.fromkeys(k[0] for k in grid))
    print("| family | cells | method | no interval | worst coverage (design, ρ, p) | cells < 93 % | median width |")
    print("|---|---|---|---|---|---|---|")
    for family in families:
        keys = [k for k in grid if k[0] == family]
        for method in METHODS:
            shown = [k for k in keys if math.isfinite(found[k][method])]
            none = sum(found[k][f"{method} none"] == 1 for k in keys)
            if not shown:
                print(f"| {family} | {len(keys)} | {method} | {none} | - | - | - |")
                continue
            worst = min(shown, key=lambda k: found[k][method])
            short = sum(found[k][method] < 0.93 for k in shown)
            width = np.median([found[k][f"{method} width"] for k in shown])
            where = f"{worst[1]}, {worst[2]:g}, {worst[3]:g}"
            print(
                f"| {family} | {len(keys)} | {method} | {none} | {found[worst][method] * 100:.1f} % ({where}) | "
                f"{short} | {width:.1f} |"
            )
    print("\nWidth of the rule against each method where that method covers (≥ 93 %) and the rule shows an interval:\n")
    print("| family | method | its cells covering | of | rule's median width there | its median width | ratio |")
    print("|---|---|---|---|---|---|---|")
    for family in families:
        keys = [k for k in grid if k[0] == family]
        for method in METHODS[1:]:
            where = [k for k in keys if found[k][method] >= 0.93 and math.isfinite(found[k]["rule"])]
            if not where:
                print(f"| {family} | {method} | 0 | {len(keys)} | - | - | - |")
                continue
            ours = np.median([found[k]["rule width"] for k in where])
            theirs = np.median([found[k][f"{method} width"] for k in where])
            print(
                f"| {family} | {method} | {len(where)} | {len(keys)} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} |"
            )


def per_cell(found: dict, grid: list, described: dict) -> None:
    print("\n| family | design | ρ | p | " + " | ".join(f"{m} %" for m in METHODS) + " | ", end="")
    print(" | ".join(f"width {m}" for m in METHODS) + " |")
    print("|" + "---|" * (4 + 2 * len(METHODS)))
    for key in grid:
        f = found[key]
        cover = " | ".join("none" if not math.isfinite(f[m]) else f"{f[m] * 100:.1f}" for m in METHODS)
        width = " | ".join("-" if not math.isfinite(f[f"{m} width"]) else f"{f[f'{m} width']:.1f}" for m in METHODS)
        print(f"| {key[0]} | {key[1]}: {described[key[:2]]} | {key[2]:g} | {key[3]:g} | {cover} | {width} |")


def cost() -> None:
    """Seconds per estimate: the harness's errors at run time (`mean_error`, which now also computes the rule's
    figures: `rule_figures` alone beside it), the report's interval at read time (`Estimate.interval` from a results
    entry, against Korn-Graubard's alone, the rule before), and WCR (399 draws, as the grid's; it needs the rows, so a
    report could not compute it from a results file)."""
    rng = np.random.default_rng(107)
    designs = {}
    for clusters in (1_000, 10_000):
        sizes = np.full(clusters, 10)
        sizes[0] = 10 * clusters // 3
        designs[f"{clusters:,} clusters, {sizes.sum():,} rows"] = [
            [int(c)] for c in np.repeat(np.arange(clusters), sizes)
        ]
    designs["crossed: MMNeedle M=10, 1,000 samples"] = crossed_design(CROSSED[1])[0]
    for name, keys in designs.items():
        print(f"| {name} | " + " | ".join(_costs(keys, rng)) + " |")


def _costs(keys: list[list[int]], rng: np.random.Generator) -> list[str]:
    """One design's row of the cost table (`cost`)."""
    from harness.uncertainty.small_sample import rule_figures
    from harness.uncertainty.variance import design_from_keys

    scores = (rng.random(len(keys)) < 0.3).astype(float)
    error = mean_error(scores, keys)
    run = _timed(lambda: mean_error(scores, keys), 5)
    design = design_from_keys(keys)
    psi, weights = (scores - scores.mean()) / len(scores), np.full(len(scores), 1 / len(scores))
    pairs = design.pairs if design.overlap else None
    figures = _timed(lambda: rule_figures(psi, weights, design.labels, design.n_clusters, pairs), 20)
    entry = uncertainty_entry(error)
    estimate = estimate_behind(float(scores.mean()), error.stderr, error.stderr_clustered, error.n, 1.0, entry)
    read, kg = _timed(lambda: estimate.interval()), _timed(lambda: estimate._korn_graubard(LEVEL))
    count = design.n_clusters
    sums = np.bincount(design.labels, weights=scores, minlength=count)[None, :] / len(scores)
    shares = np.bincount(design.labels, minlength=count) / len(scores)
    wild = _timed(lambda: wild_restricted(sums, shares, rng), 3) if count >= 2 else math.nan
    times = [f"{run * 1e3:.1f} ms", f"{figures * 1e3:.2f} ms", f"{read * 1e3:.2f} ms", f"{kg * 1e3:.2f} ms"]
    return [*times, "none (one component)" if math.isnan(wild) else f"{wild * 1e3:.0f} ms"]


def _timed(work, times: int = 200) -> float:
    start = time.perf_counter()
    for _ in range(times):
        work()
    return (time.perf_counter() - start) / times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="200 replications a cell")
    parser.add_argument("--cells", action="store_true", help="print every cell")
    parser.add_argument("--cost", action="store_true", help="time per estimate of each method")
    parser.add_argument("--family", help="only this family")
    args = parser.parse_args()
    if args.cost:
        print(
            "| design | errors at run time (`mean_error`) | of which the rule's figures | interval at read time | ",
            end="",
        )
        print("Korn-Graubard's alone | WCR |\n|---|---|---|---|---|---|")
        cost()
        return
    reps = 200 if args.quick else args.replications
    designs = {(f, name): sizes for f, name, sizes in partition_designs()}
    designs |= {("crossed", name): crossed_design(name) for name in CROSSED}
    designs = {k: v for k, v in designs.items() if args.family in (None, k[0])}
    grid = [(*key, icc, p) for key in designs for icc, p in itertools.product(ICCS, CHANCES)]
    start = time.perf_counter()
    found = {key: cell(*key[:2], designs[key[:2]], key[2], key[3], reps) for key in grid}
    print(f"### {len(grid)} cells x {reps} replications, {time.perf_counter() - start:.0f} s\n")
    summary(found, grid)
    if args.cells:
        per_cell(found, grid, {key: describe(key[0], design) for key, design in designs.items()})


if __name__ == "__main__":
    main()
