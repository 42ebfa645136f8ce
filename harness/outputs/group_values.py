"""Where a value of a task, a group or a set of tasks is read, and why there is none: the one place `harness report`'s
tables and `harness view`'s index, group grids and pages find a number (issue 54: one number per cell everywhere).

A group's value is the one its run wrote under the group's rule (`harness.outputs.groups`: MMLongBench's MM-NIAH pairs
averaged first, MileBench's and MMLongBench's strict means, MMNeedle's positives apart from its negatives); nothing
here recomputes it. A set of tasks (a cell of the viewer's grids) has a value only as the group of the results whose
tasks are exactly that set, or as its one task: a plain mean of several tasks would be a number no paper reports and
no results file holds. Where there is no value, `why_no_value` says why, from what the results record
(`group_aggregation`: the rule and the members it missed; a member's metric that the judge writes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.outputs.estimates import number
from harness.outputs.model_results import ModelResults
from harness.outputs.results import metric_items

MISSING_SHOWN = 3  # members named in a reason; the rest counted


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
