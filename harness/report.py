"""`harness report RESULTS_DIR`: report.md with, per model, each benchmark's own section and a table of
every metric, and where the numbers came from.

A benchmark's section comes from its tasks (or groups): a YAML key `report: !function module.fn` names a
function `fn(model, data, out_dir) -> list[str]` that receives the model's name, a `ModelResults`
holding only the tasks (and groups) that declare it, and the folder to write plots to, and returns
markdown lines. Tasks are looked up in the installed task folders plus the `--include_path`s the
results were produced with.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.results import metric_items
from harness.task_index import TaskIndex, natural_key
from harness.yaml_loader import FunctionRef

# Backends whose results are labelled with the model name alone; others add "(backend)", so the
# same checkpoint through hf and vllm gets two sections.
PLAIN_BACKENDS = ("hf", "constant", "random", None)


@dataclass
class ModelResults:
    """Every task's newest results for one model, across the results files found."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    breakdowns: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    include_paths: set[str] = field(default_factory=set)

    def only(self, tasks: set[str], groups: set[str]) -> ModelResults:
        """The part of these results a benchmark's section gets."""
        return ModelResults({k: v for k, v in self.results.items() if k in tasks},
                            {k: v for k, v in self.groups.items() if k in groups},
                            {k: v for k, v in self.breakdowns.items() if k in tasks},
                            {k: v for k, v in self.versions.items() if k in tasks}, list(self.files),
                            set(self.include_paths))


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: unreadable results file ({err})") from None


def partial_results(results_dir: Path) -> list[Path]:
    """Results files of `--shard` runs: each covers one shard only, so the report leaves them out."""
    return [p for p in sorted(results_dir.rglob("results_*.json")) if "partial" in _read(p)]


def load_results(results_dir: Path) -> dict[str, ModelResults]:
    """Per model name: the newest value of each task over all results files found (recursively),
    leaving out the partial results of `--shard` runs (`harness merge` combines those)."""
    files = sorted(results_dir.rglob("results_*.json"))
    if not files:
        raise UserError(f"{results_dir}: no results_*.json files (run `harness ... --output_path {results_dir}` first)")
    models: dict[str, ModelResults] = {}
    for path in sorted(files, key=lambda p: _read(p).get("date", 0)):
        data = _read(path)
        if "partial" in data:
            continue
        config = data.get("config", {})
        name = config.get("model_name") or path.parent.name
        if config.get("model") not in PLAIN_BACKENDS:
            name = f"{name} ({config['model']})"
        model = models.setdefault(name, ModelResults())
        model.results.update(data.get("results", {}))
        model.groups.update(data.get("groups", {}))
        model.breakdowns.update(data.get("breakdowns", {}))
        model.versions.update(data.get("versions", {}))
        model.files.append(str(path))
        model.include_paths.update(str(p) for p in config.get("include_path") or [])
    return models


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) and not math.isnan(value) else str(value)


def metric_table(data: ModelResults) -> list[str]:
    """Every task's every metric, with its sample counts."""
    lines = ["### All metrics", "", "| Task | Version | n scored | excluded | Metric | Value | Stderr |",
             "|---|---|---|---|---|---|---|"]
    for task, entry in sorted(data.results.items(), key=lambda item: natural_key(item[0])):
        excluded = entry.get("sample_len", 0) - entry.get("n_scored", 0)
        first = True
        for metric, value, stderr in metric_items(entry):
            head = (f"{task} | {data.versions.get(task, '')} | {entry.get('n_scored', '')} | {excluded}"
                    if first else " | | | ")
            lines.append(f"| {head} | {metric} | {_fmt(value)} | {_fmt(stderr)} |")
            first = False
    return [*lines, ""]


Section = Callable[[str, ModelResults, Path], list[str]]


def benchmark_sections(data: ModelResults) -> list[tuple[Section, ModelResults]]:
    """The report hooks declared by the tasks and groups in `data`, each with the results it covers, in
    the order first met."""
    index = TaskIndex(sorted(p for p in data.include_paths if Path(p).exists()))
    hooks: dict[tuple[str, str], tuple[FunctionRef, set[str], set[str]]] = {}
    for names, configs, is_task in ((data.results, index.tasks, True), (data.groups, index.groups, False)):
        for name in sorted(names, key=natural_key):
            ref = getattr(configs.get(name), "report", None)
            if isinstance(ref, FunctionRef):
                key = (ref.spec, str(ref.yaml_file.parent))
                _, tasks, groups = hooks.setdefault(key, (ref, set(), set()))
                (tasks if is_task else groups).add(name)
    return [(ref.resolve(), data.only(tasks, groups)) for ref, tasks, groups in hooks.values()]


def write_report(results_dir: Path, out_dir: Path | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # report plots are files: no display
    out_dir = out_dir or results_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    models = load_results(results_dir)
    lines = ["# Evaluation report", "", f"Results read from `{results_dir}`.", ""]
    partial = partial_results(results_dir)
    if partial:
        lines += [f"Not shown: {len(partial)} results file(s) of `--shard` runs, each covering one shard only "
                  "(combine them with `harness merge OUT SHARD_DIR...`).", ""]
    for model, data in sorted(models.items()):
        lines += [f"## {model}", ""]
        for section, part in benchmark_sections(data):
            try:
                lines += section(model, part, out_dir)
            except Exception as err:  # one benchmark's broken section must not lose the whole report
                failure = (f"report section {section.__module__}.{section.__name__} failed for {model}: "
                           f"{type(err).__name__}: {err}")
                print(f"harness: {failure}", file=sys.stderr)
                lines += [f"*{failure}*", ""]
        lines += metric_table(data)
        lines += ["Results files:", ""] + [f"- `{f}`" for f in data.files] + [""]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path
