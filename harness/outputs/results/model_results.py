"""Every results file under a folder read into per-model results (`load_results`): each task's (and group's) newest
value, the run it came from and the data it ran on, what `harness report` and `harness view` show."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath
from typing import Any

from harness.config.task_index import natural_key
from harness.errors import UserError, did_you_mean_path
from harness.models.registry import backend_spec
from harness.outputs.results.provenance import DataOrigin, TaskData, provenance_line
from harness.outputs.results.results_file import (
    COPY_OF,
    RESULTS_GLOB,
    MetricValue,
    ResultsFile,
    Scalar,
    TaskEntry,
    read_results_file,
)


def plain(backend: object) -> bool:
    """Whether results of `backend` (a results file's `config.model`: untrusted) are labelled with the model name
    alone (`BackendSpec.plain`); others add "(backend)", so the same checkpoint through hf and vllm gets two sections.
    A file that names none is labelled plainly."""
    return backend is None or (isinstance(backend, str) and backend_spec(backend).plain)


def local_path(name: str) -> bool:
    """Whether a model's recorded name is a checkpoint's path on the machine that ran it (`/ckpt/my-vlm`, `./ckpt`,
    `~/ckpt`, `C:\\ckpt`): no Hub repo id, alias or served model's name starts so."""
    return name.startswith(("/", "\\", "~", ".")) or PureWindowsPath(name).is_absolute()


def model_label(config: Mapping[str, object], folder: str) -> str:
    """The name a model's results go by in `harness report`, `compare` and `view`: the name its run records (a Hub
    checkpoint, an alias, a baseline), "name (backend)" for a backend not `plain`; a local checkpoint by its results
    folder's name (which names its backend where that matters), not by its path, which the run's details show."""
    name = config.get("model_name")
    if isinstance(name, str) and local_path(name):
        return folder
    label = str(name or folder)
    return label if plain(config.get("model")) else f"{label} ({config['model']})"


@dataclass
class ModelResults:
    """Every task's newest results for one model, across the results files found."""

    results: dict[str, TaskEntry] = field(default_factory=dict)
    groups: dict[str, TaskEntry] = field(default_factory=dict)
    breakdowns: dict[str, Any] = field(default_factory=dict)  # task -> metric -> its breakdown, as its hook made it
    versions: dict[str, Scalar] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    include_paths: set[str] = field(default_factory=set)
    # Task or group -> the whole results file its newest value came from (its run config, data, counts).
    sources: dict[str, ResultsFile] = field(default_factory=dict)
    runs: list[tuple[str, ResultsFile]] = field(default_factory=list)  # (path, contents) of every file read
    references: dict[str, dict[str, MetricValue]] = field(default_factory=dict)  # task -> its chance level, ...

    def only(self, tasks: set[str], groups: set[str]) -> ModelResults:
        """The part of these results a benchmark's section gets."""
        # By keyword: `references` once went positionally into `runs`, and every section read chance as 0.
        return ModelResults(
            results={k: v for k, v in self.results.items() if k in tasks},
            groups={k: v for k, v in self.groups.items() if k in groups},
            breakdowns={k: v for k, v in self.breakdowns.items() if k in tasks},
            versions={k: v for k, v in self.versions.items() if k in tasks},
            files=list(self.files),
            include_paths=set(self.include_paths),
            sources={k: v for k, v in self.sources.items() if k in tasks | groups},
            runs=list(self.runs),
            references={k: v for k, v in self.references.items() if k in tasks},
        )

    def reference(self, task: str, name: str) -> MetricValue:
        """A task's reference level (`chance`): under `references`, or among its metrics in files written before
        it moved out of them for lm-eval's tools."""
        if name in self.references.get(task, {}):
            return self.references[task][name]
        return self.results.get(task, {}).get(f"{name},none")

    def source_file(self, name: str) -> Path | None:
        """The results file the newest value of task or group `name` came from."""
        source = self.sources.get(name)
        return next((Path(path) for path, contents in self.runs if contents is source), None)

    def counters(self, task: str) -> dict[str, int]:
        """A task's bookkeeping counters (`sample_len`, `n_scored`, `n_ok`, `n_error`, ...): the one place
        that knows where a results file keeps them (`sample_counts`; inside `results[task]` in files written
        before they moved out for lm-eval's tools)."""
        source: Mapping[str, Any] = self.sources.get(task, {})
        entry = source.get("sample_counts", {}).get(task) or self.results.get(task, {})
        return {k: v for k, v in entry.items() if (k == "sample_len" or k.startswith("n_")) and isinstance(v, int)}

    def task_data(self, task: str) -> TaskData:
        """The data `task` ran on and its row counts, as its results file records them."""
        source: Mapping[str, Any] = self.sources.get(task, {})
        dataset = source.get("datasets", {}).get(task) or {}
        config = dataset.get("config") or {}
        n_samples = source.get("n-samples", {}).get(task) or {}
        return TaskData(
            task,
            DataOrigin.of(dataset, source.get("config") or {}),
            config.get("rows"),
            n_samples.get("original"),
            n_samples.get("effective"),
            config.get("content_sha256"),
            dataset.get("rows_left_out") or None,
        )

    def data(self) -> list[TaskData]:
        """Every task's data, in natural order."""
        return [self.task_data(task) for task in sorted(self.results, key=natural_key)]

    def shown_runs(self) -> list[tuple[str, ResultsFile, list[str]]]:
        """The runs whose values these results show, oldest first: (results file, its contents, its tasks shown)."""
        shown = []
        for path, run in self.runs:
            tasks = sorted((task for task in self.results if self.sources.get(task) is run), key=natural_key)
            if tasks:
                shown.append((path, run, tasks))
        return shown

    def model_names(self) -> set[str]:
        """The `config.model_name`s its results files record (the checkpoint, its path, or the alias run)."""
        names = {contents.get("config", {}).get("model_name") for _, contents in self.runs}
        return {name for name in names if isinstance(name, str)}

    def provenance_line(self) -> str:
        """One line for a figure: the data behind these results, and whether the paper's numbers compare."""
        return provenance_line(self.data())


def model_named(models: Mapping[str, ModelResults], name: str) -> str | None:
    """The model of `models` that `name` names: as `harness report` names it (`model_label`), or by its model folder or
    the name its runs record (a local checkpoint's path, as typed), where one model's results answer to it; None where
    none (or several) does."""
    if name in models:
        return name
    found = [
        model
        for model, data in models.items()
        if name in {Path(p).parent.name for p in data.files} | data.model_names()
    ]
    return found[0] if len(found) == 1 else None


def not_a_results_folder(path: Path) -> str:
    """Why `path` is no results folder, with the way out: the folder a run wrote, a results file's own folder, the
    results folder beside it whose name is closest (one holding a run's results file: never `tests` for `results`),
    else one of its name a folder down (`make demo`'s `demo_out/results` for `results`)."""
    wrote = "give the folder a run wrote (its --output_path)"
    if path.exists():
        own = f"; this file's folder is {path.parent}" if path.name.startswith("results_") else ""
        return f"{path}: a file, not a results folder; {wrote}{own}"
    hint = did_you_mean_path(path, _holds_results)
    if not hint:  # one of its name a folder down
        try:
            beside = sorted(p.name for p in path.parent.iterdir() if p.is_dir()) if path.parent.is_dir() else []
        except OSError:
            beside = []
        down = [path.parent / name / path.name for name in beside if _holds_results(path.parent / name / path.name)]
        hint = f"; did you mean {down[0]}?" if down else ""
    return f"{path}: no such folder; {wrote}{hint}"


def _holds_results(folder: Path) -> bool:
    """Whether `folder` holds a run's results file where a run writes it (`--output_path`, or its model folder)."""
    try:
        return any(folder.glob(RESULTS_GLOB)) or any(folder.glob(f"*/{RESULTS_GLOB}"))
    except OSError:
        return False


def partial_results(results_dir: Path) -> list[Path]:
    """Results files of `--shard` runs: each covers one shard only, so the report leaves them out."""
    return [p for p in sorted(results_dir.rglob(RESULTS_GLOB)) if "partial" in read_results_file(p)]


def load_results(
    results_dir: Path, reader: Callable[[Path], ResultsFile | None] = read_results_file
) -> dict[str, ModelResults]:
    """Per model name: the newest value of each task over all results files found (recursively),
    leaving out the partial results of `--shard` runs (`harness merge` combines those) and the files `reader`
    gives None for (the viewer's: those it will not open)."""
    if not results_dir.is_dir():
        raise UserError(not_a_results_folder(results_dir))
    files = sorted(results_dir.rglob(RESULTS_GLOB))
    if not files:
        raise UserError(f"{results_dir}: no results_*.json files (run `harness ... --output_path {results_dir}` first)")
    models: dict[str, ModelResults] = {}
    read = {path: data for path in files if (data := reader(path)) is not None}
    for path in sorted(read, key=lambda p: read[p].get("date") or 0):
        data = read[path]
        if "partial" in data or COPY_OF in data:  # a shard's part; a copy of a run's file, read at its original
            continue
        config = data.get("config", {})
        model = models.setdefault(model_label(config, path.parent.name), ModelResults())
        model.results.update(data.get("results", {}))
        model.groups.update(data.get("groups", {}))
        model.breakdowns.update(data.get("breakdowns", {}))
        model.references.update(data.get("references", {}))
        model.versions.update(data.get("versions", {}))
        model.files.append(str(path))
        model.runs.append((str(path), data))
        model.include_paths.update(str(p) for p in config.get("include_path") or [])
        model.sources.update(dict.fromkeys([*data.get("results", {}), *data.get("groups", {})], data))
    return models
