"""A judge swapped: two runs whose judged tasks have the same replies in both but were scored by two judges (another
judge model, another server, or a rescoring of the same journal with another `--judge_model`/`--judge_args`), and how
far those judges agree (docs/statistics.md, "A judge's agreement").

When it applies (`swapped_pairs`): a task with a `judge:` block that a judge scored in both runs (each run's results
file records its judge: `TaskJournal.judge`), whose every paired row has the same reply in both journals. Then each of
the judge's metrics, on the rows both judges scored, gets Cohen's kappa and Krippendorff's alpha with cluster-bootstrap
intervals, the share of rows scored alike, the confusion table and the paired difference A - B of its mean, clustered
as every difference of `harness compare` is (`agreement_rows`); the rows of several tasks scored by one pair of judges
are also pooled into one row per metric. Two runs of the same judge on the same replies are its agreement with itself.

The level of measurement (alpha's metric, kappa's weights) is the metric's own declaration, `level_of_measurement:` in
its `metric_list` entry (`nominal`, `ordinal` for a 1-5 rating, `interval`, `ratio`); without one, a metric averaged by
`mean` (or summed) is `interval`, since a mean takes its values' steps as equal, and any other is `nominal`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.config.task_config import MetricSpec
from harness.errors import UserError
from harness.outputs.compare.paired_runs import PairedTask, number, paired_rows
from harness.outputs.compare.stats import CompareOptions
from harness.outputs.results.compare_file import AgreementRow
from harness.running.task.metric_errors import bootstrap_seed
from harness.running.task.task import Task
from harness.uncertainty.agreement import MEASUREMENTS, Agreement, Measurement, agreement
from harness.uncertainty.comparisons import paired_difference

MOST_TABLE_VALUES = 12  # a confusion table of more distinct values is not written (a continuous score's)
NUMERIC_AGGREGATIONS = ("mean", "sum", "ratio_of_sums")


@dataclass(frozen=True)
class JudgedPairs:
    """One judge metric of one task on the rows both judges scored: A's and B's values, the rows' cluster keys."""

    task: str
    metric: str
    measurement: Measurement
    measurement_from: str
    judge_a: dict[str, object]
    judge_b: dict[str, object]
    a: list[float]
    b: list[float]
    keys: list[tuple[str, ...]]
    judged_a_only: int
    judged_b_only: int


def measurement_of(spec: MetricSpec, where: str) -> tuple[Measurement, str]:
    """The metric's level of measurement and where it comes from (a `UserError` naming `where`, its task's YAML, when
    its `level_of_measurement:` is not one of `MEASUREMENTS`)."""
    declared = spec.kwargs.get("level_of_measurement")
    if declared is not None:
        for known in MEASUREMENTS:
            if declared == known:
                return known, f"declared (`level_of_measurement: {known}`)"
        raise UserError(
            f"{where}: metric {spec.metric!r}: `level_of_measurement` must be one of "
            f"{', '.join(MEASUREMENTS)}, got {declared!r}"
        )
    if spec.aggregation in NUMERIC_AGGREGATIONS:
        return "interval", f"its `{spec.aggregation}` aggregation (equal steps between values)"
    return "nominal", "its aggregation says no scale (values taken as categories)"


def swapped_pairs(task: Task, paired: PairedTask) -> list[JudgedPairs]:
    """Each judge metric of `task` on the rows both runs' judges scored, where both runs were judged and share their
    replies; [] where they do not (another model's replies: the judges then read different answers)."""
    judge_a, judge_b = paired.a.judge, paired.b.judge
    if task.judge is None or judge_a is None or judge_b is None or not paired.paired:
        return []
    if any(paired.a.records[s].get("response") != paired.b.records[s].get("response") for s in paired.paired):
        return []
    found = []
    for spec in task.config.metric_list:
        if spec.metric not in task.judge.metrics or spec.reference:
            continue
        measurement, why = measurement_of(spec, f"{task.config.source}: task {task.name!r}")
        rows = paired_rows(paired, spec.metric)
        judged = [
            tuple(
                number((j.records[s].get("metrics") or {}).get(spec.metric)) is not None for j in (paired.a, paired.b)
            )
            for s in paired.paired
        ]
        a_only, b_only = judged.count((True, False)), judged.count((False, True))
        if rows or a_only or b_only:
            a, b, keys = [r.a for r in rows], [r.b for r in rows], [r.keys for r in rows]
            found.append(
                JudgedPairs(task.name, spec.metric, measurement, why, judge_a, judge_b, a, b, keys, a_only, b_only)
            )
    return found


def _frozen(judge: Mapping[str, object]) -> str:
    return json.dumps(judge, sort_keys=True, default=str)


def judge_names(a: Mapping[str, object], b: Mapping[str, object]) -> tuple[str, str]:
    """How each judge is named: its served model (or backend) and server, and where those are alike, what differs."""

    def short(judge: Mapping[str, object]) -> str:
        name = judge.get("served_model") or judge.get("model") or "a judge"
        return f"{name} at {judge['server']}" if judge.get("server") else str(name)

    first, second = short(a), short(b)
    if first == second and a != b:
        differ = sorted(k for k in {*a, *b} if a.get(k) != b.get(k))
        first += " (" + ", ".join(f"{k}={a.get(k)}" for k in differ) + ")"
        second += " (" + ", ".join(f"{k}={b.get(k)}" for k in differ) + ")"
    return first, second


def _pooled(judged: Sequence[JudgedPairs]) -> list[tuple[JudgedPairs, list[str]]]:
    """The rows of several tasks scored by one pair of judges, one metric at one level: each pool as one, with its
    tasks."""
    pools: dict[tuple[str, str, str, str], list[JudgedPairs]] = {}
    for item in judged:
        key = (item.metric, item.measurement, _frozen(item.judge_a), _frozen(item.judge_b))
        pools.setdefault(key, []).append(item)
    out = []
    for items in pools.values():
        if len(items) < 2:
            continue
        pool = replace(
            items[0],
            task=f"{len(items)} tasks",
            a=[v for i in items for v in i.a],
            b=[v for i in items for v in i.b],
            keys=[k for i in items for k in i.keys],
            judged_a_only=sum(i.judged_a_only for i in items),
            judged_b_only=sum(i.judged_b_only for i in items),
        )
        out.append((pool, [i.task for i in items]))
    return out


def _row(item: JudgedPairs, tasks: list[str], options: CompareOptions, done: dict[str, Agreement]) -> AgreementRow:
    """The row of `item`; `done`: the agreements found so far, by their rows (a task's `score` that repeats its
    `doc_qa_llm` row for row is bootstrapped once)."""
    seed = bootstrap_seed(item.task, "agreement")  # a task's metrics of equal values: equal intervals
    key = repr((item.a, item.b, item.keys, item.measurement, seed))
    if key not in done:
        done[key] = agreement(item.a, item.b, item.keys, item.measurement, options.level, options.bootstrap_iters, seed)
    found = done[key]
    difference = paired_difference(item.a, item.b, item.keys, options.level)
    name_a, name_b = judge_names(item.judge_a, item.judge_b)
    tabled = len(found.values) <= MOST_TABLE_VALUES
    return {
        "name": item.task,
        "tasks": tasks,
        "metric": item.metric,
        "measurement": item.measurement,
        "measurement_from": item.measurement_from,
        "judge_a": name_a,
        "judge_b": name_b,
        "same_judge": item.judge_a == item.judge_b,
        "n": found.n,
        "judged_a_only": item.judged_a_only,
        "judged_b_only": item.judged_b_only,
        "n_clusters": found.n_clusters,
        "equal": found.equal,
        "kappa": found.kappa,
        "kappa_weights": found.kappa_weights,
        "kappa_low": found.kappa_interval[0],
        "kappa_high": found.kappa_interval[1],
        "alpha": found.alpha,
        "alpha_low": found.alpha_interval[0],
        "alpha_high": found.alpha_interval[1],
        "value_a": float(np.mean(item.a)) if item.a else math.nan,
        "value_b": float(np.mean(item.b)) if item.b else math.nan,
        "difference": difference.estimate,
        "difference_low": difference.low,
        "difference_high": difference.high,
        "values": found.values if tabled else None,
        "table": found.table.tolist() if tabled else None,
    }


def agreement_rows(judged: Sequence[JudgedPairs], options: CompareOptions) -> list[AgreementRow]:
    """One row per task and judge metric, then one per pool of tasks scored by one pair of judges."""
    done: dict[str, Agreement] = {}
    rows = [_row(item, [item.task], options, done) for item in judged]
    return rows + [_row(pool, tasks, options, done) for pool, tasks in _pooled(judged)]
