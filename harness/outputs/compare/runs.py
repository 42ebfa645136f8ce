"""`harness compare`: two runs compared on the rows both scored (`comparison` builds compare.json's content; the
command writes compare.json and compare.md; `harness report --paired` embeds the same section).

What is compared: every task both runs ran (the newest value of each, as `harness report` reads a folder), every
metric of it that is a score (not a reference level, not a breakdown), and every group both ran whose tasks were all
compared. What is not, and why, is listed (`not_compared`), never left out unsaid:

- a task one run lacks; a task whose journal cannot be read;
- a task the two runs ran on different data (the journals' dataset hashes differ) or at different task versions:
  its rows are not the same measurement, so they are not paired (a one-line reason each; when nothing is left to
  compare, the command ends with that line). A task whose configuration differs otherwise (its YAML or metadata
  changed, the version kept) is compared with a stated warning;
- a task or group neither the installed task folders nor an `--include_path` given on the command line declares: a
  results folder may come from elsewhere, and a task folder holds code, so no command imports what a results file
  names (the folders it records are named in one line, not read).

A judged task whose replies are the same in both runs (a judge swapped) also gets its judges' agreement
(`harness.outputs.compare.judge_agreement`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from harness.config.task_index import TaskIndex, natural_key
from harness.errors import UserError, first_line, known_names, suggest
from harness.inputs.content_hash import EARLIER
from harness.outputs.compare.judge_agreement import JudgedPairs, agreement_rows, swapped_pairs
from harness.outputs.compare.paired_runs import JournalUnreadable, PairedTask, Run, paired_task, pick_runs
from harness.outputs.compare.stats import CompareOptions, TaskComparison, adjust, compare_groups, compare_task
from harness.outputs.results.compare_file import ComparedRun, CompareFile, ComparisonRow, NotCompared, Unpaired
from harness.outputs.results.groups import leaf_tasks
from harness.outputs.results.trusted_tasks import trusted_task_index
from harness.running.journal.journal_file import SCORING_PART
from harness.running.task.task import Task

NOT_DECLARED = (
    "not in the installed task folders or an --include_path given to this command (a results folder may come from "
    "elsewhere: no command imports the task code it names)"
)


def _described(run: Run) -> ComparedRun:
    return {
        "folder": str(run.folder),
        "model": run.model,
        "model_names": sorted(run.results.model_names()),
        "results_files": list(run.results.files),
    }


def _selected(name: str, patterns: Sequence[str] | None) -> bool:
    return patterns is None or any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


def task_index(command: str, runs: Sequence[Run], include_paths: Sequence[Path]) -> TaskIndex:
    """The tasks `command` may build: the installed ones and the `--include_path`s given to it; the task folders the
    runs' results files record are named in one line, never read (the one rule, `harness.outputs.results.trusted_tasks`)."""
    recorded = sorted({path for run in runs for path in run.results.include_paths})
    return trusted_task_index(command, include_paths, recorded)


def _refusal(paired: PairedTask) -> str | None:
    """Why the two runs of a task are not one measurement (different data or task version), or None. A journal's data
    recorded in the form before issue 99 is taken in the form now where its results file shows which files it read
    (`recorded_data`): a run from before and one after, on the same build, are one measurement."""
    if paired.a.data != paired.b.data:
        earlier = [side for side, journal in (("A", paired.a), ("B", paired.b)) if EARLIER.fullmatch(str(journal.data))]
        why = (
            f" ({' and '.join(earlier)}: the build manifest's content hash, the form before issue 99, with no files "
            "read recorded for it by its results file to show which data it is)"
            if earlier
            else ""
        )
        return (
            f"the runs differ in data (the files read): {paired.a.data!r} in A, {paired.b.data!r} in B{why}; its rows "
            "are not one measurement"
        )
    mine, theirs = paired.a.task_part("version"), paired.b.task_part("version")
    if mine != theirs:
        return f"the runs differ in task version: {mine!r} in A, {theirs!r} in B; its rows are not one measurement"
    return None


def _config_warning(task: str, paired: PairedTask) -> str | None:
    differ = [k for k in ("config_sha256", "sent_sha256", "metadata") if paired.a.task_part(k) != paired.b.task_part(k)]
    if paired.a.parts.get(SCORING_PART) != paired.b.parts.get(SCORING_PART):
        differ.append(SCORING_PART)
    if not differ:
        return None
    return (
        f"`{task}`: the runs' task configurations differ ({', '.join(differ)}) at one version: its rows are paired, "
        "but were asked or scored differently"
    )


class Comparing:
    def __init__(self, a: Run, b: Run, index: TaskIndex, options: CompareOptions) -> None:
        self.a, self.b, self.index, self.options = a, b, index, options
        self.tasks: dict[str, TaskComparison] = {}
        self.not_compared: list[NotCompared] = []
        self.unpaired: dict[str, Unpaired] = {}
        self.warnings: list[str] = []
        self.group_rows: list[ComparisonRow] = []
        self.judged: list[JudgedPairs] = []  # a judge swapped: its tasks' judge metrics, for their agreement

    def skip(self, name: str, kind: str, reason: str) -> None:
        self.not_compared.append({"name": name, "kind": "task" if kind == "task" else "group", "reason": reason})

    def task(self, name: str) -> None:
        if name not in self.index.tasks:
            return self.skip(name, "task", NOT_DECLARED)
        try:
            paired = paired_task(self.a, self.b, name)
        except JournalUnreadable as err:
            return self.skip(name, "task", str(err))
        refused = _refusal(paired)
        if refused:
            return self.skip(name, "task", refused)
        warning = _config_warning(name, paired)
        task = Task(self.index.tasks[name])
        try:
            compared = compare_task(task, paired, self.options)
        except UserError as err:  # the task's own aggregation failed on these rows
            return self.skip(name, "task", first_line(err))
        if warning:
            self.warnings.append(warning)
            for row in compared.rows:
                row["warnings"].append(warning)
        if paired.a_only or paired.b_only:
            self.unpaired[name] = {"a_only": paired.a_only, "b_only": paired.b_only}
        if not paired.paired:
            return self.skip(name, "task", "no row was scored in both runs")
        self.tasks[name] = compared
        self.judged += swapped_pairs(task, paired)
        return None

    def groups(self, names: Sequence[str]) -> None:
        members: dict[str, list[str]] = {}
        for group in names:
            source_a, source_b = self.a.results.sources[group], self.b.results.sources[group]
            mine = (source_a.get("group_subtasks") or {}).get(group)
            theirs = (source_b.get("group_subtasks") or {}).get(group)
            if group not in self.index.groups:
                self.skip(group, "group", NOT_DECLARED)
            elif mine is None or mine != theirs:
                self.skip(group, "group", f"the runs' groups have different members ({mine} in A, {theirs} in B)")
            else:
                members[group] = list(mine)
        for group in list(members):
            if self._own_member(group, members):
                del members[group]
                self.skip(group, "group", "the results files make it a member of itself (through its subgroups)")
                continue
            missing = [t for t in leaf_tasks(group, members) if t not in self.tasks]
            if missing:
                del members[group]
                shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                self.skip(group, "group", f"tasks of it were not compared: {shown}")
        self.group_rows = compare_groups(members, self.index.groups, self.tasks, self.options) if members else []

    def _own_member(self, group: str, members: dict[str, list[str]]) -> bool:
        """Whether `group` is among its own members, through the subgroups its aggregation would enter (those the
        installed task folders declare: each with its members as the results files record them, else as declared),
        so that aggregating it would never end."""
        seen: set[str] = set()
        pending = list(members[group])
        while pending:
            member = pending.pop()
            if member == group:
                return True
            if member in seen or member not in self.index.groups:
                continue
            seen.add(member)
            pending += members.get(member, self.index.groups[member].task)
        return False


def comparison(
    folders: Sequence[Path],
    models: Sequence[str] | None,
    options: CompareOptions,
    include_paths: Sequence[Path] = (),
    tasks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> CompareFile:
    """The comparison of run A and run B (`harness.outputs.compare.paired_runs.pick_runs`), as compare.json holds it."""
    a, b = pick_runs(folders, models)
    index = task_index("harness compare", [a, b], include_paths)
    names_a, names_b = a.results.model_names(), b.results.model_names()
    options = CompareOptions(**{**options.__dict__, "same_model": len(names_a) == 1 and names_a == names_b})
    state = Comparing(a, b, index, options)
    ran = {*a.results.results, *a.results.groups, *b.results.results, *b.results.groups}
    for name in tasks or ():  # a mistyped name is named, not read as "nothing both ran" (a glob may match nothing)
        if name not in ran and not any(ch in name for ch in "*?["):
            raise UserError(f"--tasks {name}: {suggest(name, ran, 'task')} (neither run ran it)")
    both = [t for t in sorted(a.results.results, key=natural_key) if t in b.results.results]
    groups = [g for g in sorted(a.results.groups, key=natural_key) if g in b.results.groups]
    chosen_groups = [g for g in groups if _selected(g, tasks)]
    under = {t for g in chosen_groups for t in leaf_tasks(g, _subtasks(a, groups))}
    for kind, mine, theirs in (
        ("task", a.results.results, b.results.results),
        ("group", a.results.groups, b.results.groups),
    ):
        for name in sorted(set(mine) ^ set(theirs), key=natural_key):
            if _selected(name, tasks) or name in under:
                state.skip(name, kind, f"only run {'A' if name in mine else 'B'} ran it")
    for name in both:
        if _selected(name, tasks) or name in under:
            state.task(name)
    state.groups(chosen_groups)
    rows = [*state.group_rows, *(r for t in state.tasks.values() for r in t.rows)]
    if rows:  # a typo in --metrics is named, not read as "no such metric here"
        known_names(metrics, {r["metric"] for r in rows} | {j.metric for j in state.judged}, "--metrics", "metric")
    rows = [r for r in rows if metrics is None or r["metric"] in metrics]
    if not rows:
        nothing = f"no task both runs ran matches --tasks {','.join(tasks)}" if tasks else "no task both runs ran"
        if metrics:
            nothing += f" with a metric of --metrics {','.join(metrics)}"
        why = "; ".join(f"{n['name']}: {n['reason']}" for n in state.not_compared[:3]) or nothing
        raise UserError(f"nothing to compare between {a} and {b}: {why}")
    tests = adjust(rows, options.adjust)
    judged = [j for j in state.judged if metrics is None or j.metric in metrics]
    return {
        "format": "mmlongeval-compare/1",
        "a": _described(a),
        "b": _described(b),
        "same_model": options.same_model,
        "level": options.level,
        "alpha": options.alpha,
        "power": options.power,
        "adjust": options.adjust,
        "tests": tests,
        "bootstrap_iters": options.bootstrap_iters,
        "rows": rows,
        "unpaired": state.unpaired,
        "not_compared": state.not_compared,
        "warnings": state.warnings,
        "agreement": agreement_rows(judged, options),
    }


def _subtasks(run: Run, groups: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for group in groups:
        found.update({k: list(v) for k, v in (run.results.sources[group].get("group_subtasks") or {}).items()})
    return found
