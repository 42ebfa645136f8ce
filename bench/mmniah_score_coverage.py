#!/usr/bin/env python
"""Coverage of intervals for MM-NIAH's official score (the heat map's mean over 55 cells, an empty cell counting 0)
on simulated MM-NIAH-like rows at 6, 30 and 300 rows a task (issue 98 item 2).

Rows: a length bin uniform over the eleven scored bins (3 % under 1K, scored but left out of the score, as the
official `np.digitize` leaves them), a depth bin uniform over five; rows come in haystacks of 1, 2, 3 rows (one length
bin each, depths drawn apart: `cluster_key: haystack`); in the `one of half` layout (issue 107, item 4) one haystack
holds half the rows and the others 1, 2, 3. A row's outcome is 0/1 (retrieval, reasoning) or the mean of
three 0/1 items (counting's soft accuracy); its chance is the cell's accuracy p_c (falling with length, lower in the
middle depths), rows of a haystack correlated at ρ through a Gaussian copula (so each row's mean is exactly p_c).

Targets: **the design's score**, θ_D = (1/55) Σ over the cells the rows fill of p_c (what these rows' cells would
score on unlimited rows; the empty cells count 0 as the official score counts them), which changes with each draw of
rows; and, for contrast, the full grid's score (1/55) Σ_c p_c and E[score] at this many rows.

Intervals:
- `before`: what the report showed from issue 88: score ± t_{C-1} · the larger of the row and haystack bootstrap
  SEs (B draws), cut at [0, 1];
- `stratified`: the score as a stratified estimator (cells the strata, haystacks its clusters): the mean over the F
  filled cells p̂ = 55·score/F is a survey-weighted proportion; its linearized variance Σ_g T_g² over haystacks,
  each row's residual from its cell's mean times sqrt(n_c/(n_c - 1)), a cell of one row centred on p̂ instead (R
  survey's `lonely.psu = "adjust"`); the report's rule on it since issue 107 (the haystacks' cluster score test
  joined with Korn and Graubard's interval: docs/statistics.md, "One rule for every design"); times F/55
  (`tasks/mm_niah/score_interval.py`, run on every replication); `issue 98`: the same residuals as issue 98 read
  them (Clopper-Pearson on Korn and Graubard's n, df the Satterthwaite df of Σ T_g², Kish's floor; `issue_98`).

Haystacks of 1, 2, 3 rows at 6 rows (the largest holds half) and one of half the rows stand for too few clusters: the
report's rule shows none there.

Usage: .venv/bin/python bench/mmniah_score_coverage.py [--replications 1000] [--quick]
(36 cells; 1,000 replications a cell, 344 s on one shared core; --quick: 200 a cell)
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
from scipy import stats

from tasks.mm_niah.score_interval import score_interval
from tasks.mm_niah.utils import official_score

LENGTHS, DEPTHS = 11, 5
CELLS = LENGTHS * DEPTHS
UNDER_1K = 0.03
ROWS = (6, 30, 300)
LAYOUTS = ("1-3 rows", "one of half")
KINDS = {  # (accuracy at 1K, loss per length bin, items a row scores over)
    "retrieval": (0.80, 0.05, 1),
    "reasoning": (0.55, 0.03, 1),
    "counting": (0.50, 0.035, 3),
}
ICCS = (0.1, 0.4, 0.8)
LEVEL = 0.95
QUANTILE = 1 - (1 - LEVEL) / 2
BOOTSTRAP = 200
CHECKED = 10


def accuracy(kind: str) -> np.ndarray:
    """p_c over (length bin 0 .. 11, depth bin): bin 0 (under 1K) is scored like the first."""
    start, slope, _ = KINDS[kind]
    length = start - slope * np.maximum(np.arange(LENGTHS + 1) - 1, 0)
    depth = np.array([0.0, 0.08, 0.12, 0.08, 0.0])  # lost in the middle
    return np.clip(length[:, None] - depth[None, :], 0.02, 0.98)


def draw(kind: str, n: int, icc: float, reps: int, rng: np.random.Generator, layout: str) -> dict[str, np.ndarray]:
    """`reps` runs of n rows: each row's length and depth bins, haystack, outcome."""
    rest = n - n // 2 if layout == "one of half" else n
    sizes = np.resize(np.array([1, 2, 3]), rest)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), rest) + 1]
    sizes[-1] -= sizes.sum() - rest
    if layout == "one of half":
        sizes = np.concatenate([[n // 2], sizes])
    haystack = np.repeat(np.arange(len(sizes)), sizes)
    bins = rng.integers(1, LENGTHS + 1, (reps, len(sizes)))
    under = rng.random((reps, len(sizes))) < UNDER_1K
    under[:, 0] &= layout != "one of half"  # the half haystack always scored: the design the layout is about
    bins = np.where(under, 0, bins)
    x = bins[:, haystack]
    y = rng.integers(0, DEPTHS, (reps, n))
    p = accuracy(kind)[x, y]
    items = KINDS[kind][2]
    shared = rng.standard_normal((reps, len(sizes)))[:, haystack]
    own = rng.standard_normal((reps, n))
    latent = math.sqrt(icc) * shared[..., None] + math.sqrt(1 - icc) * (
        0.7 * own[..., None] + math.sqrt(0.51) * rng.standard_normal((reps, n, items))
    )
    value = (latent < stats.norm.ppf(p)[..., None]).mean(axis=2)
    return {"x": x, "y": y, "v": value, "p": p, "haystack": np.broadcast_to(haystack, (reps, n))}


def scores(x: np.ndarray, y: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The official score of each replication's rows (vectorised `length_scores`)."""
    reps = x.shape[0]
    cell = np.where(x > 0, (x - 1) * DEPTHS + y, CELLS)  # under 1K: a 56th cell left out
    index = (np.arange(reps)[:, None] * (CELLS + 1) + cell).ravel()
    total = np.bincount(index, minlength=reps * (CELLS + 1)).reshape(reps, CELLS + 1)[:, :CELLS]
    correct = np.bincount(index, v.ravel(), reps * (CELLS + 1)).reshape(reps, CELLS + 1)[:, :CELLS]
    return (correct / np.maximum(total, 1)).sum(axis=1) / CELLS


def design_score(x: np.ndarray, y: np.ndarray, p_cells: np.ndarray) -> np.ndarray:
    """θ_D: (1/55) Σ over the filled cells of p_c."""
    reps = x.shape[0]
    filled = np.zeros((reps, LENGTHS + 1, DEPTHS), dtype=bool)
    filled[np.arange(reps)[:, None], x, y] = True
    return (filled[:, 1:, :] * p_cells[None, 1:, :]).sum(axis=(1, 2)) / CELLS


def bootstrap_t(rows: dict[str, np.ndarray], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The report's interval before: score ± t_{C-1} · max(row, haystack bootstrap SE)."""
    reps, n = rows["v"].shape
    clusters = int(rows["haystack"][0].max()) + 1
    members = [np.flatnonzero(rows["haystack"][0] == g) for g in range(clusters)]
    spreads = []
    for by_cluster in (False, True):
        replicates = np.empty((BOOTSTRAP, reps))
        for b in range(BOOTSTRAP):
            if by_cluster:
                drawn = rng.integers(0, clusters, size=clusters)
                index = np.concatenate([members[g] for g in drawn])
            else:
                index = np.asarray(rng.integers(0, n, size=n))
            replicates[b] = scores(rows["x"][:, index], rows["y"][:, index], rows["v"][:, index])
        spreads.append(replicates.std(axis=0, ddof=1))
    se = np.maximum(*spreads)
    value = scores(rows["x"], rows["y"], rows["v"])
    half = stats.t.ppf(QUANTILE, max(clusters - 1, 1)) * se
    return np.maximum(value - half, 0.0), np.minimum(value + half, 1.0)


def stratified(rows: dict[str, np.ndarray], interval=score_interval) -> tuple[np.ndarray, np.ndarray]:
    """The stratified interval (module docstring), row by row through the task's own function (or issue 98's)."""
    bounds = np.empty((rows["v"].shape[0], 2))
    for r in range(len(bounds)):
        cells = np.stack([rows["x"][r], rows["y"][r], rows["v"][r]], axis=1).tolist()
        found = interval(cells, [str(h) for h in rows["haystack"][r]], LEVEL)
        bounds[r] = found if found is not None else (math.nan, math.nan)
    return bounds[:, 0], bounds[:, 1]


def issue_98(cells: list[list[float]], haystacks: list[str], level: float) -> tuple[float, float] | None:
    """The task's interval as issue 98 shipped it: Clopper-Pearson on Korn and Graubard's n of the same linearized
    variance, df the Satterthwaite df of Σ T_g² (at most haystacks - 1 and the rarer outcome's rows), none under two
    of Kish's haystacks."""
    kept = [(c, h) for c, h in zip(cells, haystacks, strict=True) if int(c[0]) > 0]
    x, y, v = (np.array([c[k] for c, _ in kept]) for k in range(3))
    _, cell, size = np.unique(x.astype(int) * DEPTHS + y.astype(int), return_inverse=True, return_counts=True)
    _, group, members = np.unique([h for _, h in kept], return_inverse=True, return_counts=True)
    units = len(v) ** 2 / float(np.dot(members, members))
    if not kept or units < 2:
        return None
    means = np.bincount(cell, v) / size
    p, m, n = float(means.mean()), size[cell], len(v)
    scale = np.where(m > 1, np.sqrt(m / np.maximum(m - 1, 1)), 1.0) / (len(size) * m)
    totals = np.bincount(group, (v - np.where(m > 1, means[cell], p)) * scale)
    variance = float(np.dot(totals, totals))
    size_n = units
    if variance > 1e-18 and 0.0 < p < 1.0:
        n_eff = min(p * (1 - p) / variance, n)
        df = min(variance * variance / float(np.sum(totals**4)), len(members) - 1, n * min(p, 1 - p))
        factor = min(1.0, float(stats.t.ppf(QUANTILE, n - 1) / stats.t.ppf(QUANTILE, df)) ** 2) if df > 0 else 0.0
        size_n = max(n_eff * factor, min(n_eff, units))
    low, high = stats.beta.ppf(
        [(1 - level) / 2, (1 + level) / 2], [p * size_n, p * size_n + 1], [size_n - p * size_n + 1, size_n - p * size_n]
    )
    low, high = (0.0 if p == 0 else low), (1.0 if p == 1 else high)
    return low * len(size) / CELLS, high * len(size) / CELLS


def cell(layout: str, kind: str, n: int, icc: float, reps: int) -> dict[str, float]:
    rng = np.random.default_rng([list(KINDS).index(kind), n, round(icc * 100), LAYOUTS.index(layout)])
    rows = draw(kind, n, icc, reps, rng, layout)
    value = scores(rows["x"], rows["y"], rows["v"])
    for r in range(min(CHECKED, reps)):  # the arrays' score is the task's own aggregation
        cells = np.stack([rows["x"][r], rows["y"][r], rows["v"][r]], axis=1).tolist()
        assert math.isclose(official_score(cells), value[r], abs_tol=1e-12)
    p_cells = accuracy(kind)
    target = design_score(rows["x"], rows["y"], p_cells)
    full = p_cells[1:].mean()
    old_low, old_high = bootstrap_t(rows, rng)
    low, high = stratified(rows)
    shown = np.isfinite(low)
    low98, high98 = stratified(rows, issue_98)
    pairs = zip(rows["x"], rows["y"], strict=True)
    filled = np.array([len({(a, b) for a, b in zip(xs, ys, strict=True) if a > 0}) for xs, ys in pairs])
    return {
        "full": full,
        "mean score": float(value.mean()),
        "filled": float(np.median(filled)),
        "before": float(np.mean((old_low <= target) & (target <= old_high))),
        "before width": float(np.median(old_high - old_low)),
        "shown": float(shown.mean()),
        "coverage": float(((low <= target) & (target <= high))[shown].mean()) if shown.any() else math.nan,
        "width": float(np.median((high - low)[shown])) if shown.any() else math.nan,
        "vs full": float(np.mean((low <= full) & (full <= high))),
        "issue 98": float(np.mean(((low98 <= target) & (target <= high98))[np.isfinite(low98)])),
        "issue 98 width": float(np.median((high98 - low98)[np.isfinite(low98)])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="200 replications a cell")
    args = parser.parse_args()
    reps = 200 if args.quick else args.replications
    grid = [k for k in itertools.product(LAYOUTS, KINDS, ROWS, ICCS) if k[0] == LAYOUTS[0] or k[2] == 300]
    start = time.perf_counter()
    found = {key: cell(*key, reps) for key in grid}
    print(f"### {len(grid)} cells x {reps} replications, {time.perf_counter() - start:.0f} s\n")
    print(
        "| haystacks | kind | rows | ρ | full grid's score | mean score | cells filled (median) | before: covers θ_D | "
        "before: width | issue 98: covers θ_D | issue 98: width | shown | stratified: covers θ_D | stratified: width | "
        "stratified: covers the full grid's |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in grid:
        f = found[key]
        print(
            f"| {key[0]} | {key[1]} | {key[2]} | {key[3]:g} | {100 * f['full']:.1f} | {100 * f['mean score']:.1f} | "
            f"{f['filled']:.0f} | {100 * f['before']:.1f} | {100 * f['before width']:.1f} | {100 * f['issue 98']:.1f} | "
            f"{100 * f['issue 98 width']:.1f} | {100 * f['shown']:.0f} % | "
            f"{100 * f['coverage']:.1f} | {100 * f['width']:.1f} | {100 * f['vs full']:.1f} |"
        )


if __name__ == "__main__":
    main()
