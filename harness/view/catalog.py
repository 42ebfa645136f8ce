"""What a results folder holds, for the viewer: its models (as `harness report` names and reads them), each task's
newest results, the run (results file) they came from, and that run's journal and sample log of the task."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.task_index import natural_key
from harness.outputs.model_results import ModelResults, load_results
from harness.outputs.report import benchmark_sections, headline_rows
from harness.outputs.results import metric_items
from harness.running.journal import journal_name


@dataclass(frozen=True)
class TaskRun:
    """One model's newest results of one task, and the files of the run that wrote them."""

    model: str
    task: str
    results_file: Path
    run: Mapping[str, Any]  # the whole results file
    journal: Path
    hooks: Any  # the benchmark's report module (its viewer hooks), or None
    include_paths: tuple[str, ...] = ()  # where the model's runs found tasks besides the installed ones

    @property
    def entry(self) -> dict[str, Any]:
        return self.run.get("results", {}).get(self.task, {})

    @property
    def folder(self) -> Path:
        return self.results_file.parent

    def samples_log(self) -> Path | None:
        """The newest lm-eval sample log of the task in the run's folder (`--log_samples`)."""
        logs = sorted(self.folder.glob(f"samples_{self.task}_*.jsonl"))
        return logs[-1] if logs else None

    def metrics(self) -> list[str]:
        return [metric for metric, _, _ in metric_items(self.entry)]


class Catalog:
    """Every model and task of a results folder, read once (`harness.outputs.model_results.load_results`)."""

    def __init__(self, results_dir: Path) -> None:
        self.results_dir = results_dir
        self.models: dict[str, ModelResults] = load_results(results_dir)
        self.headline: dict[str, list[tuple[str, str]]] = {}
        self.hooks: dict[str, dict[str, Any]] = {}  # model -> task or group -> its benchmark's report module
        for model, data in self.models.items():
            self.headline[model] = headline_rows(data)
            self.hooks[model] = {}
            for section, part in benchmark_sections(data):
                module = inspect.getmodule(section)
                for name in [*part.results, *part.groups]:
                    self.hooks[model][name] = module

    def model_names(self) -> list[str]:
        return sorted(self.models)

    def tasks(self, model: str) -> list[str]:
        return sorted(self.models[model].results, key=natural_key)

    def task_run(self, model: str, task: str) -> TaskRun | None:
        data = self.models.get(model)
        if data is None or task not in data.results:
            return None
        run: Mapping[str, Any] = data.sources.get(task, {})
        path = next((Path(p) for p, contents in data.runs if contents is run), None)
        if path is None:
            return None
        include = tuple(sorted(p for p in data.include_paths if Path(p).exists()))
        return TaskRun(model, task, path, run, path.parent / journal_name(task), self.hooks[model].get(task), include)

    def models_with(self, task: str) -> list[str]:
        return [m for m in self.model_names() if task in self.models[m].results]

    def primary_metric(self, model: str, task: str) -> str | None:
        """The metric the table judges right and wrong by: the benchmark's headline metric of the task, else its
        first."""
        for name, metric in self.headline.get(model, []):
            if name == task:
                return metric
        run = self.task_run(model, task)
        metrics = run.metrics() if run else []
        return metrics[0] if metrics else None


def hook(module: Any, name: str) -> Any:
    """A benchmark's optional viewer hook (`SAMPLE_AXES`, `sample_axes`, `SAMPLE_CELLS`, `sample_marks`)."""
    return getattr(module, name, None) if module is not None else None


def warn(message: str) -> None:
    print(f"harness view: {message}", file=sys.stderr)
