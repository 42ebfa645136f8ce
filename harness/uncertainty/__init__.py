"""Uncertainty of the numbers a run reports: pure functions on numpy (scipy.stats and statsmodels where they do the job,
imported where they are used), in the harness's base layer, so every layer may use them. The formulas, what is
clustered on which key and why: `docs/statistics.md`.

- `design`: which rows share an item (`design_from_keys`: a partition, or a crossed overlap design).
- `variance`: plain (n - 1) and clustered (CR1; the graph sum for overlaps) errors, clusters, design effect.
- `influence`: aggregates in first-order form (`Linearized`): mean, sum, ratio of sums, the jackknife for any other;
  combined through a group's rule (`combine`, `rule_gradient`) or differenced between runs (`difference`).
- `bootstrap`: the seeded cluster bootstrap, for aggregates no formula linearizes and for whole curves.
- `comparisons`: Wilson intervals on the effective n, paired differences, Newcombe's paired interval, McNemar, the
  cluster sign-flip test, equivalence, Holm and Benjamini-Hochberg, the chance of k of m.
- `power`: the minimum detectable effect and the sample size needed, with a design effect.
- `agreement`: two raters on the same rows (two judges of the same replies): Cohen's kappa and Krippendorff's alpha
  at a level of measurement, with cluster-bootstrap intervals, and their confusion table.
"""

from harness.uncertainty.agreement import (
    MEASUREMENTS,
    Agreement,
    Measurement,
    agreement,
    cohens_kappa,
    confusion_table,
    krippendorff_alpha,
)
from harness.uncertainty.bootstrap import (
    DEFAULT_ITERS,
    bootstrap_error,
    bootstrap_stderr,
    cluster_bootstrap,
    percentile_interval,
)
from harness.uncertainty.comparisons import (
    FEW_CLUSTERS,
    PairedDifference,
    adjust_pvalues,
    chance_of_at_least,
    cluster_sign_flip_p,
    clustered_newcombe,
    effective_n,
    equivalence_p,
    expected_by_chance,
    interval,
    mcnemar_exact,
    newcombe_paired_interval,
    paired_difference,
    two_sided_p,
    wilson_interval,
)
from harness.uncertainty.design import ClusterDesign, design_from_keys
from harness.uncertainty.influence import (
    Linearized,
    combine,
    difference,
    linearize_by_jackknife,
    linearize_mean,
    linearize_ratio,
    linearize_sum,
    redrawn_by,
    rule_gradient,
)
from harness.uncertainty.power import (
    bernoulli_sd,
    comparison_sd,
    design_effect_from_icc,
    design_effect_of_design,
    icc_from_design_effect,
    icc_of_design,
    links_per_row,
    minimum_detectable_effect,
    sample_size,
    weighted_cluster_size,
)
from harness.uncertainty.variance import ClusteredError, clustered_stderr, influence_error, mean_error, sample_stderr

__all__ = [
    "DEFAULT_ITERS",
    "FEW_CLUSTERS",
    "MEASUREMENTS",
    "Agreement",
    "ClusterDesign",
    "ClusteredError",
    "Linearized",
    "Measurement",
    "PairedDifference",
    "adjust_pvalues",
    "agreement",
    "bernoulli_sd",
    "bootstrap_error",
    "bootstrap_stderr",
    "chance_of_at_least",
    "cluster_sign_flip_p",
    "cluster_bootstrap",
    "clustered_newcombe",
    "clustered_stderr",
    "cohens_kappa",
    "combine",
    "confusion_table",
    "comparison_sd",
    "design_effect_from_icc",
    "design_effect_of_design",
    "design_from_keys",
    "difference",
    "effective_n",
    "equivalence_p",
    "expected_by_chance",
    "icc_from_design_effect",
    "icc_of_design",
    "influence_error",
    "interval",
    "krippendorff_alpha",
    "linearize_by_jackknife",
    "linearize_mean",
    "linearize_ratio",
    "linearize_sum",
    "links_per_row",
    "mcnemar_exact",
    "mean_error",
    "minimum_detectable_effect",
    "newcombe_paired_interval",
    "paired_difference",
    "percentile_interval",
    "redrawn_by",
    "rule_gradient",
    "sample_size",
    "sample_stderr",
    "two_sided_p",
    "weighted_cluster_size",
    "wilson_interval",
]
