"""Power before a run: the minimum detectable effect at a sample size, and the sample size a difference needs, paired
or not, with the design effect of the rows' clusters (Miller 2024, Rec. 5; lmms-eval's `power` without a design
effect).

The normal approximation: a difference δ is detected at two-sided level α with power 1 - β when

    δ = (z_{1-α/2} + z_{1-β}) · sqrt(deff · σ² / n),

σ² the per-row variance of what is compared: one run against a fixed number, σ_A²; two runs on the same rows
(paired), σ_A² + σ_B² - 2ρσ_Aσ_B; two runs on different rows of n each, σ_A² + σ_B². The design effect for clusters of
sizes m_c at intra-cluster correlation ρ_c is 1 + (m̄ - 1)ρ_c with m̄ = Σm_c²/Σm_c (Kish 1965, for unequal
sizes; Donner and Klar 2000), known from a build before any run (its cluster sizes) once ρ_c is guessed, or read
from a finished run (`harness.uncertainty.variance.ClusteredError.design_effect`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.uncertainty.variance import ClusterDesign


def bernoulli_sd(p: float) -> float:
    """sqrt(p(1 - p)), the per-row standard deviation of a 0/1 score with mean p. NaN outside [0, 1]."""
    return math.sqrt(p * (1 - p)) if 0.0 <= p <= 1.0 else math.nan


def weighted_cluster_size(sizes: Sequence[int] | np.ndarray) -> float:
    """m̄ = Σm²/Σm, the cluster size that enters the design effect when sizes differ (the mean size when they are
    equal). No rows gives NaN."""
    m = np.asarray(sizes, dtype=float)
    total = m.sum()
    return float((m * m).sum() / total) if total > 0 else math.nan


def design_effect_from_icc(sizes: Sequence[int] | np.ndarray, icc: float) -> float:
    """1 + (m̄ - 1)·icc for clusters of `sizes` (m̄ = `weighted_cluster_size`). Edge cases: clusters of one row give
    1.0 whatever icc; icc 1 gives m̄; no rows NaN."""
    return 1.0 + (weighted_cluster_size(sizes) - 1.0) * icc


def icc_from_design_effect(design_effect: float, sizes: Sequence[int] | np.ndarray) -> float:
    """The intra-cluster correlation a design effect implies for clusters of `sizes`: (deff - 1)/(m̄ - 1).
    Edge cases: clusters of one row (m̄ = 1) give NaN (no within-cluster pair to correlate); a design effect below 1
    gives a negative icc (as the moment estimator does)."""
    m = weighted_cluster_size(sizes)
    return (design_effect - 1.0) / (m - 1.0) if m > 1 and math.isfinite(design_effect) else math.nan


def links_per_row(design: ClusterDesign) -> float:
    """2L/n, L the pairs of rows the design links: Σ_c m_c(m_c - 1)/n for a partition (which is m̄ - 1, m̄ = Σm²/Σm),
    and for a crossed design (`ClusterDesign.overlap`) twice its linked pairs over n. It is what multiplies the
    intra-cluster correlation in the design effect when every linked pair has correlation ρ: deff = 1 + ρ · 2L/n
    (the expectation of the graph sum over the plain variance). No rows gives NaN; rows that stand alone give 0.0."""
    if not design.n:
        return math.nan
    if design.overlap:
        return 2.0 * len(design.pairs[0]) / design.n
    sizes = design.cluster_sizes().astype(float)
    return float((sizes * (sizes - 1)).sum() / design.n)


def design_effect_of_design(design: ClusterDesign, icc: float) -> float:
    """1 + icc · 2L/n (`links_per_row`): the design effect of a mean over `design`'s rows when linked rows correlate
    at `icc`; for a partition it equals `design_effect_from_icc` of its cluster sizes. No rows gives NaN."""
    return 1.0 + icc * links_per_row(design)


def icc_of_design(design: ClusterDesign, design_effect: float) -> float:
    """The correlation of linked rows a design effect implies: (deff - 1) / (2L/n). NaN where no rows are linked (no
    pair to correlate) or the design effect is unknown; negative below 1, as the moment estimator is."""
    links = links_per_row(design)
    return (design_effect - 1.0) / links if links > 0 and math.isfinite(design_effect) else math.nan


def comparison_sd(sd_a: float, sd_b: float | None = None, correlation: float = 0.0, paired: bool = True) -> float:
    """The per-row standard deviation of what is compared: σ_A alone (no `sd_b`: a run against a fixed number), the
    paired difference sqrt(σ_A² + σ_B² - 2ρσ_Aσ_B), or two independent samples sqrt(σ_A² + σ_B²) (`paired=False`)."""
    if sd_b is None:
        return sd_a
    if not paired:
        return math.sqrt(sd_a * sd_a + sd_b * sd_b)
    return math.sqrt(max(sd_a * sd_a + sd_b * sd_b - 2 * correlation * sd_a * sd_b, 0.0))


def _z_sum(alpha: float, power: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


def minimum_detectable_effect(
    n: float, sd: float, *, design_effect: float = 1.0, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest true difference detected with probability `power` at level `alpha` with n rows (per run) whose
    compared quantity has per-row standard deviation `sd` (`comparison_sd`) and clusters of design effect
    `design_effect`. Edge cases: n <= 0 gives inf; sd 0 gives 0.0; a NaN input NaN."""
    if not (math.isfinite(n) and math.isfinite(sd) and math.isfinite(design_effect)):
        return math.nan
    if n <= 0:
        return math.inf
    return _z_sum(alpha, power) * math.sqrt(design_effect * sd * sd / n)


def sample_size(
    effect: float, sd: float, *, design_effect: float = 1.0, alpha: float = 0.05, power: float = 0.8
) -> int:
    """The rows (per run) needed to detect a true difference `effect` (same scale as `sd`), rounded up: the inverse of
    `minimum_detectable_effect`. Clusters of a fixed size m need ceil(n / m) of them. Edge cases: effect 0 (or a NaN
    input) is a ValueError (no finite n detects nothing); sd 0 gives 1."""
    if not (math.isfinite(effect) and math.isfinite(sd) and math.isfinite(design_effect)) or effect == 0:
        raise ValueError(f"a sample size needs a finite, non-zero effect (got {effect}) and a finite sd ({sd})")
    if sd == 0:
        return 1
    ratio = _z_sum(alpha, power) * sd / effect
    needed = design_effect * ratio * ratio
    if not math.isfinite(needed):
        raise ValueError(f"no finite sample size detects {effect} at sd {sd}")
    return max(1, math.ceil(needed))


def paired_mde(stderr_clustered: float, alpha: float, power: float) -> float:
    """The minimum detectable effect of a paired difference whose error is `stderr_clustered`: z · SE, SE the one
    error its interval and p rest on (`comparisons.clustered_se`: the largest of the plain, CR1 and CR2 errors, a
    design effect estimated under 1 taken as 1). NaN where there is no error (none estimable, or no spread).
    `harness compare` writes that error's parts to compare.json (`stderr`, `stderr_clustered`, `stderr_cr2`) and
    `harness power --pair` reads them back through the same `clustered_se`, so the two MDEs agree on every row of
    every pair (tests/harness/outputs/test_power_pair.py)."""
    if not (math.isfinite(stderr_clustered) and stderr_clustered > 0):
        return math.nan
    return minimum_detectable_effect(1, stderr_clustered, alpha=alpha, power=power)
