"""The statistics of `harness compare`: per task and metric, and per group, A - B on the rows both runs scored, with
its plain and clustered errors, interval, p, McNemar's counts and exact p, the per-row correlation and the minimum
detectable effect (formulas: docs/statistics.md, "Comparing two runs").

How each aggregation's difference gets its error (each run's metric recomputed on the paired rows, with the task's
own aggregation, so the difference is of like with like):

- `mean`: the mean of the per-row differences (`mean_error`; Miller 2024, Rec. 4), clustered on the rows' keys;
  McNemar's counts and exact p where every value is 0 or 1.
- `sum`, `ratio_of_sums`: each run's first-order form (`linearize_sum`, `linearize_ratio`) differenced row by row
  (`difference`), clustered the same way.
- a task's own `!function` aggregation: the seeded cluster bootstrap of f(A's rows) - f(B's rows), clusters of paired
  rows drawn together (`bootstrap_error`; `--bootstrap_iters`).
- a group: each run's group rule over its members' recomputed values, in first-order form through the rule's gradient
  (`harness.outputs.results.groups.group_entries`), differenced: an item the members share counts once, as in a group's own
  clustered error; where a member is a task's own `!function`, each run's group redrawn on the same clusters and
  differenced per draw (the cluster bootstrap, as a group's own error is then).

The interval and p use Student's t with the clusters' degrees of freedom (`clustered_df`: C - 1 for C clusters that
add alike, fewer where a few carry the variance or clusters differ in size: Bell-McCaffrey's) and CR2's error where
it exceeds CR1's (`clustered_se`), or the normal for a crossed design's graph sum; the p values of every row are adjusted together (Holm, or Benjamini-Hochberg).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.config.task_config import GroupConfig, MetricSpec
from harness.outputs.compare.intervals import row_scale, settle, without_error
from harness.outputs.compare.paired_runs import PairedTask, float_or_nan, number, row_keys
from harness.outputs.results.compare_file import Adjustment, ComparisonRow
from harness.outputs.results.groups import group_entries, leaf_tasks
from harness.running.task.aggregation import aggregate_metrics
from harness.running.task.metric_errors import Influences, bootstrap_seed
from harness.running.task.task import Task
from harness.uncertainty.bootstrap import DEFAULT_ITERS, bootstrap_error
from harness.uncertainty.comparisons import (
    adjust_pvalues,
    clustered_df,
    clustered_se,
    correlation,
    interval,
    mcnemar_exact,
    two_sided_p,
)
from harness.uncertainty.influence import Linearized, difference
from harness.uncertainty.power import paired_mde
from harness.uncertainty.variance import ClusteredError, design_from_keys, mean_error

NAN = math.nan


@dataclass(frozen=True)
class CompareOptions:
    level: float = 0.95  # of the intervals
    adjust: Adjustment = "holm"
    alpha: float = 0.05  # of the minimum detectable effect
    power: float = 0.8
    bootstrap_iters: int = DEFAULT_ITERS
    same_model: bool = False  # both runs are of one model: each row gets its run-to-run error


@dataclass
class Side:
    """One run's tasks recomputed on the paired rows: the results entries, counts and first-order forms that a
    group's rule reads (`harness.outputs.results.groups.group_entries`)."""

    results: dict[str, dict[str, float | str]] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    influences: dict[str, Callable[[str], Linearized | None]] = field(default_factory=dict)


@dataclass
class TaskComparison:
    """A task's rows of the comparison, each run's side of it for its groups, and its rows scored in each run and in
    one run alone."""

    rows: list[ComparisonRow]
    a: Side
    b: Side
    n_a: int = 0
    n_b: int = 0
    unpaired_a: int = 0
    unpaired_b: int = 0


def _values(paired: PairedTask, side: str, metric: str, ids: Sequence[str]) -> list[object]:
    journal = paired.a if side == "a" else paired.b
    return [(journal.records[s].get("metrics") or {})[metric] for s in ids]


def _right_value(column_a: Sequence[object], column_b: Sequence[object]) -> float | None:
    """The value that means right where every row of both runs scored 0 or it: 1 (a proportion) or 100 (a percentage,
    MMLongBench's); None where the metric is not 0/1 on either scale."""
    found = {number(v) for v in [*column_a, *column_b]}
    for right in (1.0, 100.0):
        if found and found <= {0.0, right}:
            return right
    return None


def _row(
    name: str,
    kind: str,
    metric: str,
    method: str,
    values: tuple[float, float],
    error: ClusteredError,
    options: CompareOptions,
) -> ComparisonRow:
    """A row's numbers from A's and B's values and the difference's errors (its tests and counts filled in later)."""
    estimate = values[0] - values[1] if all(math.isfinite(v) for v in values) else NAN
    df = clustered_df(error)  # Bell-McCaffrey's where clusters differ in size, as the report's interval
    se = clustered_se(error)  # a design effect under 1 taken as 1; CR2 where larger than CR1
    low, high = interval(estimate, se, options.level, df)
    mde = paired_mde(se, options.alpha, options.power)  # the one `harness power --pair` gives the pair
    return ComparisonRow(
        name=name,
        kind="task" if kind == "task" else "group",
        metric=metric,
        method=method,
        higher_is_better=None,
        n_a=0,
        n_b=0,
        n_paired=error.n,
        unpaired_a=0,
        unpaired_b=0,
        value_a=values[0],
        value_b=values[1],
        difference=estimate,
        stderr=error.stderr,
        stderr_clustered=error.stderr_clustered,
        stderr_cr2=error.stderr_cr2,
        n_clusters=error.n_clusters,
        design_effect=error.design_effect,
        overlap=error.overlap,
        df=df if df is None else max(df, 0),
        low=low,
        high=high,
        p_value=_p_value(estimate, se, df, error.n_clusters),
        p_adjusted=NAN,
        a_only=None,
        b_only=None,
        mcnemar_p=None,
        correlation=NAN,
        mde=mde,
        run_to_run_stderr=se / math.sqrt(2) if options.same_model else None,
        warnings=[],
    )


def _p_value(estimate: float, stderr: float, df: float | None, clusters: int) -> float:
    """The two-sided p of the clustered difference (t with `df`, or normal). Where it has no spread at all (every
    cluster's difference the same: a constant answer against a model that is always right, or two identical runs), t
    is 0/0: identical runs give 1.0, and a difference the sign test on the clusters, 2 · 0.5^C (every cluster the
    same way), which is exact whatever the rows' dependence within a cluster."""
    if stderr == 0 and math.isfinite(estimate):
        return 1.0 if estimate == 0 else min(1.0, 2.0 * 0.5**clusters)
    return two_sided_p(estimate, stderr, df)


def _metric_row(
    task: Task, spec: MetricSpec, paired: PairedTask, options: CompareOptions
) -> tuple[ComparisonRow | None, Influences, Influences]:
    """One metric of a task, A - B on the rows that have it in both runs; with each run's first-order form of it."""
    metric, name = spec.metric, task.name
    ids = [s for s in paired.paired if all(metric in (j.records[s].get("metrics") or {}) for j in (paired.a, paired.b))]
    judged = task.judge.metrics if task.judge else ()
    keys = [row_keys(name, s, paired.a.records[s], paired.b.records[s]) for s in ids]
    sides = []
    for journal in (paired.a, paired.b):  # each run's rows keyed alike: a key either run names links the row
        scored = [
            task.scored_row(s, journal.records[s].get("metrics") or {}, k) for s, k in zip(ids, keys, strict=True)
        ]
        sides.append(aggregate_metrics(name, [spec], task.aggregations, judged, scored, 0))
    agg_a, agg_b = sides
    if metric not in agg_a.values or metric not in agg_b.values:  # a breakdown, or no value in either run
        return None, agg_a.influences, agg_b.influences
    values = (agg_a.values[metric], agg_b.values[metric])
    column_a, column_b = _values(paired, "a", metric, ids), _values(paired, "b", metric, ids)
    builtin = spec.aggregation if isinstance(spec.aggregation, str) else None
    right = _right_value(column_a, column_b)
    numbers_a, numbers_b = [number(v) for v in column_a], [number(v) for v in column_b]
    filled = None  # A's and B's columns where every row is one number in both runs
    if all(v is not None for v in [*numbers_a, *numbers_b]):
        filled = ([v or 0.0 for v in numbers_a], [v or 0.0 for v in numbers_b])
    if builtin == "mean":  # the mean of the per-row differences (the module docstring)
        error, method = (
            (mean_error(np.subtract(*filled), keys), "paired difference of means, clustered")
            if filled is not None
            else (ClusteredError(NAN, NAN, len(ids), 0, NAN), "mean: values it cannot read")
        )
    elif builtin in ("sum", "ratio_of_sums"):
        form_a, form_b = agg_a.influences.get(metric), agg_b.influences.get(metric)
        if form_a is None or form_b is None:
            error, method = ClusteredError(NAN, NAN, len(ids), 0, NAN), f"{builtin}: values it cannot read"
        else:
            error = difference(form_a, form_b).error()
            method = f"{builtin} by its influence function, differenced per row"
    else:
        error, method = _bootstrap(task, metric, column_a, column_b, keys, options)
    row = _row(name, "task", metric, method, values, error, options)
    row["higher_is_better"] = spec.higher_is_better
    if filled is not None:
        row["correlation"] = correlation(*filled)
        _changes(row, *filled)
    if right is not None:
        a_only = sum(1 for x, y in zip(numbers_a, numbers_b, strict=True) if x == right and y == 0.0)
        b_only = sum(1 for x, y in zip(numbers_a, numbers_b, strict=True) if x == 0.0 and y == right)
        row["a_only"], row["b_only"] = a_only, b_only
        if builtin in ("mean", "sum"):  # what McNemar tests: equal proportions of the rows
            row["mcnemar_p"] = mcnemar_exact(a_only, b_only)
    present = min(sum(v is not None for v in column) for column in (column_a, column_b))
    if builtin not in ("mean", "sum", "ratio_of_sums") and (present < 2 or error.stderr_clustered == 0):
        why = f"it rests on {present} row{'s' if present != 1 else ''} with a value" if present < 2 else ""
        without_error(row, why or "its bootstrap replicates do not vary (equal up to rounding)")
        return row, agg_a.influences, agg_b.influences
    settle(row, options.level, filled if builtin in ("mean", "sum") else None, keys, right)
    return row, agg_a.influences, agg_b.influences


def _changes(row: ComparisonRow, a: Sequence[float], b: Sequence[float]) -> None:
    """How far the runs' rows differ, row by row: the rows that changed, and the mean squared change on 0..1 (the
    run-to-run spread the same-items verdict reads; for a 0/1 score, the share of rows that changed)."""
    change = np.subtract(a, b)
    row["changed_rows"] = int(np.count_nonzero(change))
    scale = row_scale(row)
    row["mean_squared_change"] = float(np.mean((change / scale) ** 2)) if scale and len(change) else NAN


def _bootstrap(
    task: Task,
    metric: str,
    column_a: list[object],
    column_b: list[object],
    keys: list[tuple[str, ...]],
    options: CompareOptions,
) -> tuple[ClusteredError, str]:
    """A task's own aggregation: the cluster bootstrap of f(A) - f(B), paired rows drawn together."""
    function = task.aggregations[metric]
    if options.bootstrap_iters <= 0:
        return ClusteredError(NAN, NAN, len(keys), 0, NAN, False, "bootstrap"), "none: --bootstrap_iters 0"

    def statistic(pairs: list[tuple[object, object]]) -> float:
        return float(function([a for a, _ in pairs])) - float(function([b for _, b in pairs]))

    pairs = list(zip(column_a, column_b, strict=True))
    seed = bootstrap_seed(task.name, f"compare/{metric}")
    error = bootstrap_error(statistic, pairs, design_from_keys(keys), options.bootstrap_iters, seed)
    return error, f"cluster bootstrap of the task's aggregation ({options.bootstrap_iters} draws)"


def compare_task(task: Task, paired: PairedTask, options: CompareOptions) -> TaskComparison:
    """Every scored metric of `task` (not its reference levels, not its breakdowns), A - B on the paired rows."""
    out = TaskComparison([], Side(), Side())
    out.n_a = sum(1 for s in paired.a.records if paired.a.scored(s))
    out.n_b = sum(1 for s in paired.b.records if paired.b.scored(s))
    out.unpaired_a, out.unpaired_b = len(paired.a_only), len(paired.b_only)
    forms_a, forms_b = Influences(), Influences()
    entry_a: dict[str, float | str] = {}
    entry_b: dict[str, float | str] = {}
    for spec in task.config.metric_list:
        if spec.reference:
            continue
        row, made_a, made_b = _metric_row(task, spec, paired, options)
        forms_a.add(spec.metric, functools.partial(made_a.get, spec.metric))
        forms_b.add(spec.metric, functools.partial(made_b.get, spec.metric))
        if row is None:
            continue
        row["n_a"], row["n_b"], row["unpaired_a"], row["unpaired_b"] = out.n_a, out.n_b, out.unpaired_a, out.unpaired_b
        entry_a[f"{spec.metric},none"], entry_b[f"{spec.metric},none"] = row["value_a"], row["value_b"]
        out.rows.append(row)
    for side, entry, forms in ((out.a, entry_a, forms_a), (out.b, entry_b, forms_b)):
        side.results[task.name] = entry
        side.counts[task.name] = {"n_scored": len(paired.paired)}
        side.influences[task.name] = forms.get
    return out


def compare_groups(
    groups: Mapping[str, Sequence[str]],
    configs: Mapping[str, GroupConfig],
    tasks: Mapping[str, TaskComparison],
    options: CompareOptions,
) -> list[ComparisonRow]:
    """Each group's aggregates in both runs, from its members recomputed on their paired rows, A - B differenced in
    first-order form (`groups` maps each group to its direct members; every task under it is in `tasks`)."""
    made: list[tuple[Mapping[str, Mapping[str, object]], dict[tuple[str, str], Linearized | None]]] = []
    for pick in (lambda t: t.a, lambda t: t.b):
        sides = [pick(t) for t in tasks.values()]
        results = {k: v for s in sides for k, v in s.results.items()}
        counts = {k: v for s in sides for k, v in s.counts.items()}
        influences = {k: v for s in sides for k, v in s.influences.items()}
        forms: dict[tuple[str, str], Linearized | None] = {}
        entries, _, _ = group_entries(groups, configs, results, counts, influences, forms=forms)
        made.append((entries, forms))
    (entries_a, forms_a), (entries_b, forms_b) = made
    rows: list[ComparisonRow] = []
    for (group, metric), form_a in forms_a.items():
        form_b = forms_b.get((group, metric))
        value_a, value_b = (float_or_nan(e.get(group, {}).get(f"{metric},none")) for e in (entries_a, entries_b))
        if form_a is None or form_b is None or not (math.isfinite(value_a) and math.isfinite(value_b)):
            continue
        differenced = difference(form_a, form_b)
        method = (
            "group rule, delta method over its members' rows"
            if differenced.redraw is None
            else "group rule over its members redrawn (a !function member): cluster bootstrap of A - B"
        )
        row = _row(group, "group", metric, method, (value_a, value_b), differenced.error(), options)
        settle(row, options.level)
        members = [tasks[t] for t in leaf_tasks(group, groups) if t in tasks]
        row["n_a"], row["n_b"] = sum(t.n_a for t in members), sum(t.n_b for t in members)
        row["unpaired_a"] = sum(t.unpaired_a for t in members)
        row["unpaired_b"] = sum(t.unpaired_b for t in members)
        rows.append(row)
    return rows


def adjust(rows: Sequence[ComparisonRow], method: Adjustment) -> int:
    """Fill in each row's adjusted p (every row with a p is one of the family); returns the family's size."""
    p = [float(r["p_value"]) if isinstance(r["p_value"], float) else NAN for r in rows]
    adjusted = adjust_pvalues(p, method)
    for row, value in zip(rows, adjusted, strict=True):
        row["p_adjusted"] = float(value)
    return int(np.isfinite(np.asarray(p, dtype=float)).sum())
