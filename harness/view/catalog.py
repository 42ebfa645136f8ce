"""What a results folder holds, for the viewer: its models (as `harness report` names and reads them), each task's
newest results, the run (results file) they came from, and that run's journal and sample log of the task.

A results folder may come from anyone, so the catalog opens only files that resolve inside it (`safe_files`), leaves
out a results file it cannot read with one line naming it (the rest of the folder still shows), and reads tasks
only from the installed task folders and the `--include_path`s given to `harness view`
(`harness.outputs.results.trusted_tasks`, the rule of every command that reads a results folder): the ones a results file
names are listed, never indexed, so no task YAML or `!function` module they hold is read or imported.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.task_index import natural_key
from harness.errors import UserError
from harness.outputs.report.report_md import benchmark_sections, headline_rows, scales, union_of
from harness.outputs.results.groups import groups_by_tasks, headline_metric
from harness.outputs.results.model_results import ModelResults, load_results, model_named
from harness.outputs.results.results_file import ResultsFile, read_results_file
from harness.outputs.results.trusted_tasks import trusted_task_folders, untrusted_task_folders
from harness.running.journal.journal_file import journal_name
from harness.running.task.judge_log import judge_log_name
from harness.view.samples.safe_files import contained
from harness.view.view_hooks_api import ViewHooks, view_hooks_of

DIGIT_LIMIT = "a number of more digits than Python's 4,300-digit limit for int(str)"


@dataclass(frozen=True)
class TaskRun:
    """One model's newest results of one task, and the files of the run that wrote them."""

    model: str
    task: str
    results_file: Path
    run: Mapping[str, Any]  # the whole results file
    journal: Path
    hooks: ViewHooks | None  # the `ViewHooks` the benchmark declares, or None without a declaration
    root: Path  # the results folder: every file of the run is opened only inside it

    @property
    def entry(self) -> dict[str, Any]:
        return self.run.get("results", {}).get(self.task, {})

    def journal_file(self) -> Path | None:
        """The task's journal, resolved, when it is a regular file inside the results folder."""
        return contained(self.root, self.journal)

    def judge_log(self) -> Path | None:
        """The task's judge log (`judge_<task>.jsonl`, beside its results file), resolved, when it is a regular file
        inside the results folder."""
        return contained(self.root, self.results_file.parent / judge_log_name(self.task))

    def samples_log(self) -> Path | None:
        """The newest lm-eval sample log of the task in the run's folder (`--log_samples`), resolved, when it is a
        regular file inside the results folder."""
        logs = sorted(self.results_file.parent.glob(f"samples_{self.task}_*.jsonl"))
        return contained(self.root, logs[-1]) if logs else None


class Catalog:
    """Every model and task of a results folder, read once (`harness.outputs.results.model_results.load_results`)."""

    def __init__(self, results_dir: Path, include_paths: Sequence[Path] = ()) -> None:
        self.results_dir = results_dir
        self.left_out: list[str] = []  # one line per results file not read, naming it and why
        self.models: dict[str, ModelResults] = load_results(results_dir, self._read)
        # Where the runs found tasks besides the installed ones: named on the page and in one line, never read.
        recorded = {path for data in self.models.values() for path in data.include_paths}
        self.not_loaded = untrusted_task_folders(include_paths, recorded)
        trusted = set(trusted_task_folders("harness view", include_paths, recorded))
        for data in self.models.values():
            data.include_paths = set(trusted)
        self.headline: dict[str, list[tuple[str, str]]] = {}
        self.groups_by_tasks = {model: groups_by_tasks(data) for model, data in self.models.items()}
        # Every model, in the order of their columns, and their tasks and groups as one: a row's scale is decided
        # over every model, as report.md's tables across models decide it (`report.row_scale`).
        self.everyone = [self.models[model] for model in self.model_names()]
        self.union = union_of(self.everyone)
        self.declared: dict[str, int] = scales(self.union) if self.models else {}
        self.cross_rows: list[tuple[str, str]] = headline_rows(self.union) if self.models else []
        self.row_metric = first_metrics(self.cross_rows)
        # model -> task or group -> the `ViewHooks` its benchmark declares, read once a declaration
        self.hooks: dict[str, dict[str, ViewHooks | None]] = {}
        declared: dict[int, ViewHooks] = {}
        for model, data in self.models.items():
            self.headline[model] = headline_rows(data)
            self.hooks[model] = {}
            for benchmark, part in benchmark_sections(data):
                if id(benchmark) not in declared:
                    declared[id(benchmark)] = view_hooks_of(benchmark)
                for name in [*part.results, *part.groups]:
                    self.hooks[model][name] = declared[id(benchmark)]

    def _read(self, path: Path) -> ResultsFile | None:
        target = contained(self.results_dir, path)
        if target is None:
            why = "a link leading out of the results folder, or not a regular file"
        else:
            try:
                return read_results_file(target)
            except UserError as err:
                why = str(err).removeprefix(f"{target}: ")
            except ValueError as err:  # json's own: a number past Python's 4,300-digit limit for int(str)
                digits = "Exceeds the limit" in str(err)
                why = "not a results file: " + (DIGIT_LIMIT if digits else str(err).splitlines()[0])
        shown = path.relative_to(self.results_dir) if path.is_relative_to(self.results_dir) else path
        self.left_out.append(f"{shown}: left out ({why})")
        warn(self.left_out[-1])
        return None

    def model_names(self) -> list[str]:
        return sorted(self.models)

    def tasks(self, model: str) -> list[str]:
        return sorted(self.models[model].results, key=natural_key)

    def model_named(self, name: str) -> str:
        """The model a link names: by its name, or by its model folder (a local checkpoint is named by its path)."""
        return model_named(self.models, name) or name

    def task_run(self, model: str, task: str) -> TaskRun | None:
        model = self.model_named(model)
        data = self.models.get(model)
        if data is None or task not in data.results:
            return None
        run: Mapping[str, Any] = data.sources.get(task, {})
        path = next((Path(p) for p, contents in data.runs if contents is run), None)
        if path is None:
            return None
        journal = path.parent / journal_name(task)
        return TaskRun(model, task, path, run, journal, self.hooks[model].get(task), self.results_dir)

    def primary_metric(self, model: str, name: str) -> str | None:
        """The metric a task or group is shown and judged by: its row's in report.md's table across models (the
        benchmark's headline metric), else its first; of those rows, the first whose metric this model's results
        hold (a judge's metric is absent from a run without the judge: the next headline metric stands)."""
        data = self.models.get(model)
        if data is None:
            return self.row_metric.get(name)
        entry = data.results.get(name) or data.groups.get(name) or {}
        listed = [metric for row, metric in [*self.cross_rows, *self.headline.get(model, [])] if row == name]
        held = [metric for metric in listed if f"{metric},none" in entry]
        if held or not entry:
            return held[0] if held else self.row_metric.get(name)
        return headline_metric(data, name, {}) or self.row_metric.get(name)

    def sample_metric(self, model: str, name: str) -> str | None:
        """The metric each row of a task is read on for its headline metric (`primary_metric`): that metric, or where
        its rows hold no score of their own the one its benchmark names (`ViewHooks.row_scores`)."""
        metric = self.primary_metric(model, name)
        hooks = self.hooks.get(model, {}).get(name)
        return hooks.row_scores.get(metric, metric) if hooks is not None and metric is not None else metric


def first_metrics(rows: list[tuple[str, str]]) -> dict[str, str]:
    """Each task's or group's first metric among (name, metric) rows: a benchmark that lists two for one task (its
    accuracy, then its F1) is shown by the first."""
    out: dict[str, str] = {}
    for name, metric in rows:
        out.setdefault(name, metric)
    return out


def warn(message: str) -> None:
    print(f"harness view: {message}", file=sys.stderr)
