"""Uncertainty of the numbers a run reports: pure functions on numpy (scipy.stats and statsmodels where they do the job,
imported where they are used), in the harness's base layer, so every layer may use them. The formulas, what is
clustered on which key and why: `docs/statistics.md`.

- `variance`: which rows share an item (`design_from_keys`: a partition, or a crossed overlap design), plain (n - 1)
  and clustered (CR1; the graph sum for overlaps) errors, clusters, design effect.
- `small_sample`: where clusters differ in size: CR2's bias-reduced variance of a mean, Bell-McCaffrey's degrees of
  freedom, Kish's effective number of clusters; and the figures of the report's interval rule (issue 107): the
  cluster score test's slope and critical value, the working model's effective n.
- `influence`: aggregates in first-order form (`Linearized`): mean, sum, ratio of sums, the jackknife for any other;
  combined through a group's rule (`combine`, `rule_gradient`) or differenced between runs (`difference`).
- `bootstrap`: the seeded cluster bootstrap, for aggregates no formula linearizes and for whole curves.
- `comparisons`: Wilson intervals on the effective n, paired differences, Newcombe's paired interval, McNemar, the
  cluster sign-flip test, equivalence, Holm and Benjamini-Hochberg, the chance of k of m.
- `power`: the minimum detectable effect and the sample size needed, with a design effect.
- `agreement`: two raters on the same rows (two judges of the same replies): Cohen's kappa and Krippendorff's alpha
  at a level of measurement, with cluster-bootstrap intervals, and their confusion table.
"""
