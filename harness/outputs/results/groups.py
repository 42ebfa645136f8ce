"""Group scores: how a group's `aggregate_metric_list` combines its members' scores.

An entry names a metric, an aggregation (a registered name, or `!function module.fn` for a benchmark's
own rule, `harness.config.group_rules`), and optionally `members:` (a subset of the group's members; default: all of them),
`weight_by_size` (lm-eval's flag, for `mean`) and `as:` (the name the group writes the aggregate under,
default the metric's: one group can then pool one metric over different members, as MMNeedle's
positives and negatives). Registered aggregations:

- `mean`: lm-eval's: the mean of the members that have a value, leaving out N/A ones; weighted by
  `n_scored` when `weight_by_size: true`.
- `weighted_mean`: `mean` with `weight_by_size: true`.
- `strict_mean`: the unweighted mean of every named member; N/A as soon as one member is missing or
  N/A (pandas' `mean(skipna=False)`, as MMLongBench aggregates).

A `!function` receives the list of `MemberScore`s (missing members with `value` NaN) and returns a
value, or a (value, stderr) pair. The results record, per group and metric, the rule and which members it
used and which were missing (`group_aggregation`, beside lm-eval's `groups`).

The rule's stderr treats members as independent. Beside it, `<metric>_stderr_clustered` counts an item the members
share once (MMNeedle's M=1 stitched image at K = 1, 2 and 5, an MMLongBench source id across its lengths): the
members' per-row influences, weighted by the rule's gradient in the members' values (central differences, so a
`!function` rule needs nothing but its values), summed over the rows and clustered on the rows' keys
(`harness.uncertainty.influence.combine`; docs/statistics.md). Where a member is a task's own `!function` (VH's fold
at 50, whose gradient is 0 at the kink), the group's clustered error is instead the cluster bootstrap of the whole
group: its rule over the members recomputed on the clusters drawn (`harness.uncertainty.influence.redrawn_by`).

Where a value of a task, a group or a set of tasks is read, and why there is none: the one place `harness report`'s
tables and `harness view`'s index, group grids and pages find a number (issue 54: one number per cell everywhere).

A group's value is the one its run wrote under the group's rule (above: MMLongBench's MM-NIAH pairs averaged first,
MileBench's and MMLongBench's strict means, MMNeedle's positives apart from its negatives); a reader never recomputes
it. A set of tasks (a cell of the viewer's grids) has a value only as the group of the results whose
tasks are exactly that set, or as its one task: a plain mean of several tasks would be a number no paper reports and
no results file holds. Where there is no value, `why_no_value` says why, from what the results record
(`group_aggregation`: the rule and the members it missed; a member's metric that the judge writes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.config.group_rules import GROUP_AGGREGATIONS, MemberScore, mean
from harness.config.task_config import GroupConfig
from harness.config.yaml_loader import FunctionRef
from harness.errors import UserError, first_line
from harness.outputs.results.estimates import number
from harness.outputs.results.results_file import AggregationRule, GroupAggregation, metric_items
from harness.uncertainty.influence import Linearized, combine, redrawn_by, rule_gradient
from harness.uncertainty.variance import ClusteredError

if TYPE_CHECKING:  # a run's results are built without reading any results folder back
    from harness.outputs.results.model_results import ModelResults

MISSING_SHOWN = 3  # members named in a reason; the rest counted
# task -> (metric -> its first-order form, or None where it has none): `harness.running.task.metric_errors.Influences.get`
MemberInfluences = Mapping[str, Callable[[str], Linearized | None]]


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def member_score(name: str, entry: Mapping[str, object] | None, metric: str, n_scored: int) -> MemberScore:
    """A member's score for `metric` from its results entry (task or group); N/A values read as NaN."""
    if not entry or f"{metric},none" not in entry:
        return MemberScore(name, math.nan, math.nan, 0)
    return MemberScore(name, _number(entry[f"{metric},none"]), _number(entry.get(f"{metric}_stderr,none")), n_scored)


def aggregate(spec: Mapping[str, Any], scores: Sequence[MemberScore]) -> tuple[float, float]:
    """Apply one `aggregate_metric_list` entry to its members' scores -> (value, stderr)."""
    rule = spec.get("aggregation", "mean")
    if isinstance(rule, FunctionRef):
        out = rule.resolve()(list(scores))
    elif rule == "mean":
        out = mean(scores, bool(spec.get("weight_by_size", False)))
    else:
        out = GROUP_AGGREGATIONS[rule](scores)
    if isinstance(out, tuple):
        return float(out[0]), float(out[1])
    return float(out), math.nan


def _aggregate_group(
    group: str, metric: str, spec: Mapping[str, object], scores: Sequence[MemberScore]
) -> tuple[float, float]:
    """`aggregate`, where a group's own `!function` that raises (or returns no number) is one line naming the group,
    the metric and the function, as a task's own aggregation is (`harness.running.task.aggregation`)."""
    rule = spec.get("aggregation", "mean")
    if not isinstance(rule, FunctionRef):
        return aggregate(spec, scores)
    try:
        return aggregate(spec, scores)
    except UserError:  # the function cannot be found or imported: its own line, naming the YAML
        raise
    except Exception as err:  # the group's own code: whatever it raises is its failure, not the harness's
        raise UserError(
            f"group {group!r}: metric {metric!r}: aggregation `{rule}` ({rule.yaml_file}:{rule.line}) failed on "
            f"{len(scores)} member scores ({type(err).__name__}: {first_line(err)})"
        ) from None


def group_linearized(
    spec: Mapping[str, object], scores: Sequence[MemberScore], members: Sequence[Linearized | None], value: float
) -> Linearized | None:
    """The group's aggregate in first-order form: Σ_j ∂rule/∂v_j · member_j, over the members the rule moves with;
    None where the value is N/A, the rule cannot be differentiated here, or a member it uses has no first-order form."""
    if not math.isfinite(value):
        return None

    def rule(values: np.ndarray) -> float:
        try:
            return aggregate(spec, [replace(s, value=float(v)) for s, v in zip(scores, values, strict=True)])[0]
        except Exception:  # a group's own rule, off its values: no gradient rather than a failed run
            return math.nan

    gradient = rule_gradient(rule, np.array([s.value for s in scores], dtype=float))
    parts = []
    for weight, member in zip(gradient, members, strict=True):
        if weight == 0:
            continue
        if member is None or not math.isfinite(weight):
            return None
        parts.append((float(weight), member))
    if not parts:
        return None
    if not any(member is not None and member.redraw is not None for member in members):
        return combine(parts, value, "delta method")
    # a `!function` member: the group is redrawn whole (the rule over every member with a form, each recomputed on
    # the rows drawn), not carried through the gradient, which a kink (VH's fold at 50) makes 0 (issue 63)
    held = [(j, member) for j, member in enumerate(members) if member is not None]
    base = np.array([s.value for s in scores], dtype=float)

    def redrawn_rule(values: np.ndarray) -> float:
        moved = base.copy()
        moved[[j for j, _ in held]] = values
        return rule(moved)

    combined = combine([*parts, *[(0.0, m) for _, m in held]], value, "group rule over its members redrawn")
    return redrawn_by(combined, [m for _, m in held], redrawn_rule)


def _clean(value: float) -> float | str:
    return "N/A" if math.isnan(value) else value


def group_entries(
    groups: Mapping[str, Sequence[str]],
    configs: Mapping[str, GroupConfig],
    results: Mapping[str, Mapping[str, Any]],
    counts: Mapping[str, Mapping[str, int]],
    influences: MemberInfluences | None = None,
    forms: dict[tuple[str, str], Linearized | None] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, GroupAggregation], dict[str, dict[str, ClusteredError]]]:
    """Each selected group's results entry (lm-eval's: alias and aggregated metrics, only where its YAML
    asks in `aggregate_metric_list`, computed from direct members: tasks or already aggregated subgroups),
    how each was aggregated (`n_scored`, and per metric the rule and the members used and missed), and each
    aggregate's errors with the members' covariance (from the tasks' `influences`; none given, none computed).
    `forms`, where given, receives each aggregate's first-order form by (group, metric as written): `harness
    compare` differences two runs' forms of one group."""
    out: dict[str, dict[str, Any]] = {}
    how: dict[str, GroupAggregation] = {}
    errors: dict[str, dict[str, ClusteredError]] = {}
    linearized: dict[tuple[str, str], Linearized | None] = {} if forms is None else forms

    def member_linearized(name: str, metric: str) -> Linearized | None:
        if name in configs:
            return linearized.get((name, metric))
        return influences[name](metric) if influences is not None and name in influences else None

    def scored(name: str) -> int:
        aggregated = how[name]["n_scored"] if name in how else None
        return int(aggregated or counts.get(name, {}).get("n_scored", 0) or 0)

    def entry(name: str) -> dict[str, Any]:
        if name in out:
            return out[name]
        config = configs[name]
        members = list(groups.get(name, config.task))
        value: dict[str, Any] = {"alias": config.group_alias or name}
        used_n: dict[str, int] = {}
        rules: dict[str, AggregationRule] = {}
        for spec in config.aggregate_metric_list:
            metric, written = spec["metric"], spec.get("as", spec["metric"])
            named = list(spec.get("members") or members)
            scores = [member_score(m, entry(m) if m in configs else results.get(m), metric, scored(m)) for m in named]
            mean_value, se = _aggregate_group(name, metric, spec, scores)
            value[f"{written},none"] = _clean(mean_value)
            value[f"{written}_stderr,none"] = _clean(se)
            if influences is not None:
                members_linearized = [member_linearized(m, metric) for m in named]
                combined = group_linearized(spec, scores, members_linearized, mean_value)
                linearized[(name, written)] = combined
                error = combined.error() if combined is not None else None
                value[f"{written}_stderr_clustered,none"] = _clean(error.stderr_clustered if error else math.nan)
                if error is not None:
                    errors.setdefault(name, {})[written] = error
            used = [s for s in scores if not s.missing]
            used_n.update({s.name: s.n for s in used})
            rule = str(spec.get("aggregation", "mean"))
            used_names, missing = [s.name for s in used], [s.name for s in scores if s.missing]
            rules[written] = (
                {"metric": metric, "rule": rule, "used": used_names, "missing": missing}
                if written != metric
                else {"rule": rule, "used": used_names, "missing": missing}
            )
        if rules:
            how[name] = {"n_scored": sum(used_n.values()), "rules": rules}
        out[name] = value
        return value

    for name in groups:
        entry(name)
    return out, how, errors


def recorded_subtasks(data: ModelResults) -> dict[str, list[str]]:
    """Group -> its direct members as the runs recorded them (`group_subtasks`), a newer run's over an older's."""
    out: dict[str, list[str]] = {}
    for _, run in data.runs:
        found = run.get("group_subtasks")
        if isinstance(found, Mapping):
            out.update({str(k): list(v) for k, v in found.items() if isinstance(v, list)})
    return out


def leaf_tasks(group: str, subtasks: Mapping[str, Sequence[str]]) -> list[str]:
    """The tasks under `group` through its subgroups, depth first in the group's order, each once; a cycle (a results
    file may come from anyone) ends where it would repeat."""
    tasks: list[str] = []
    seen = {group}
    pending = list(reversed(subtasks.get(group, ())))
    while pending:
        member = pending.pop()
        if not isinstance(member, str) or member in seen:
            continue
        seen.add(member)
        if member in subtasks:
            pending += reversed(subtasks[member])
        else:
            tasks.append(member)
    return tasks


def first_metric(entry: Mapping[str, object]) -> str | None:
    """The first metric of a results entry (the one a table without a declared headline shows), or None."""
    return next((metric for metric, _, _ in metric_items(entry)), None)


def headline_metric(data: ModelResults, name: str, headline: Mapping[str, str]) -> str | None:
    """The metric a task or group is shown by: the benchmark's headline (`report.headline_rows`), else its first."""
    entry = data.results.get(name) or data.groups.get(name) or {}
    return headline.get(name) or first_metric(entry)


def has_value(data: ModelResults, name: str, metric: str | None) -> bool:
    entry = data.results.get(name) or data.groups.get(name) or {}
    return metric is not None and number(entry.get(f"{metric},none")) is not None


def groups_by_tasks(data: ModelResults) -> dict[frozenset[str], str]:
    """Each set of tasks a group of `data` holds exactly (as its run expanded it, `recorded_subtasks`) -> that group;
    of several with one set, one with a value before one without, then by name. Read once a results folder: a grid's
    cell is a lookup (`harness.view.groups.cell_value`)."""
    subtasks = recorded_subtasks(data)
    holding: dict[frozenset[str], list[str]] = {}
    for group in data.groups:
        if group in subtasks:
            holding.setdefault(frozenset(leaf_tasks(group, subtasks)), []).append(group)
    return {
        tasks: min(groups, key=lambda g: (not has_value(data, g, first_metric(data.groups[g])), g))
        for tasks, groups in holding.items()
    }


def why_no_value(data: ModelResults, name: str, metric: str | None) -> str:
    """Why task or group `name` shows no number for `metric` (None: it has no metric at all); "" where it has one."""
    if name not in data.results and name not in data.groups:
        return "not run"
    kind = "task" if name in data.results else "group"
    if metric is None:
        if kind == "group":
            return (
                "no value: its run pooled nothing (the group declared no aggregate_metric_list): its tasks stand apart"
            )
        return "no value: its results hold no metric"
    entry = data.results.get(name) or data.groups.get(name) or {}
    if f"{metric},none" not in entry:
        return f"no value: its results hold no {metric}"
    if has_value(data, name, metric):
        return ""
    source: Mapping[str, object] = data.sources.get(name) or {}
    found = source.get("group_aggregation")
    rules = found.get(name, {}).get("rules", {}) if isinstance(found, Mapping) else {}
    rule = rules.get(metric) if isinstance(rules, Mapping) else None
    if kind == "task" or not isinstance(rule, Mapping) or not rule.get("missing"):
        return f"N/A: its results record {entry[f'{metric},none']!r} for {metric}"
    missing = [str(m) for m in rule["missing"]]
    named = ", ".join(missing[:MISSING_SHOWN]) + (
        f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
    )
    judged = [m for m in missing if metric in _judge_metrics(source, m)]
    return (
        f"N/A: its rule ({rule.get('rule', '?')}) needs the {metric} of every member, and {named} "
        f"{'has' if len(missing) == 1 else 'have'} none"
        + ("; the judge writes it: run with --judge_model" if judged else "")
    )


def _judge_metrics(source: Mapping[str, object], task: str) -> list[str]:
    """The metrics the judge writes for `task`, as its run's config records them (`judge: metrics:`)."""
    configs = source.get("configs")
    config = configs.get(task) if isinstance(configs, Mapping) else None
    judge = config.get("judge") if isinstance(config, Mapping) else None
    metrics = judge.get("metrics") if isinstance(judge, Mapping) else None
    return [str(m) for m in metrics] if isinstance(metrics, list) else []
