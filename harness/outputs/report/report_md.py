"""`harness report RESULTS_DIR`: report.md that opens with one screen of numbers (`summary`: per model its tasks,
samples scored and not, and every group's headline metric, on one 0-100 scale), then the runs' provenance, with
several models a table of their headline metrics side by side, and per model where its numbers came from (the data
each task ran on, and a warning when that data is synthetic or limited), each benchmark's own section and a table
of every metric. Figures are drawn after the text, once per distinct content (`harness.outputs.report.figure_batch`).

A benchmark's section comes from its tasks (or groups): the declaration their YAML names (`benchmark: !function
benchmark.BENCHMARK`, a `harness.config.benchmark.BenchmarkDeclaration`) holds its `ReportHooks` (`harness.outputs.report.hooks`
says what each hook is given and returns), each given only the results of the tasks and groups that declare it.
Tasks are looked up in the installed task folders plus the `--include_path`s given to `harness report`: the ones a
results file records are named, never read, since a results folder may come from elsewhere and its hooks are code.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.config.benchmark import BenchmarkDeclaration, declared_benchmark
from harness.config.task_index import TaskIndex, natural_key
from harness.config.yaml_loader import FunctionRef
from harness.file_writing import write_text
from harness.outputs.report.figure_batch import figure_batch
from harness.outputs.report.hooks import AcrossModels, report_of
from harness.outputs.report.run_provenance import provenance_opening
from harness.outputs.report.run_to_run import MeasuredRunToRun, measured_run_to_run
from harness.outputs.report.verdict_family import adjusted_by
from harness.outputs.results.estimates import estimate_of, interval_text, number
from harness.outputs.results.groups import first_metric, why_no_value
from harness.outputs.results.model_results import ModelResults, load_results, partial_results
from harness.outputs.results.provenance import (
    comparability_warning,
    provenance_section,
)
from harness.outputs.results.results_file import metric_items, value_text
from harness.outputs.results.trusted_tasks import trusted_task_folders

PERCENT = 100  # the one scale of the numbers the report sets side by side


def metric_table(data: ModelResults) -> list[str]:
    """Every task's every metric, with its sample counts."""
    lines = [
        "### All metrics",
        "",
        "| Task | Version | n scored | excluded | Metric | Value | Stderr |",
        "|---|---|---|---|---|---|---|",
    ]
    for task, entry in sorted(data.results.items(), key=lambda item: natural_key(item[0])):
        counters = data.counters(task)
        excluded = counters.get("sample_len", 0) - counters.get("n_scored", 0)
        first = True
        for metric, value, stderr in metric_items(entry):
            head = (
                f"{task} | {data.versions.get(task, '')} | {counters.get('n_scored', '')} | {excluded}"
                if first
                else " | | | "
            )
            lines.append(f"| {head} | {metric} | {value_text(value)} | {value_text(stderr)} |")
            first = False
    return [*lines, ""]


def benchmark_sections(data: ModelResults) -> list[tuple[BenchmarkDeclaration, ModelResults]]:
    """The benchmark declarations of the tasks and groups in `data`, each with the results it covers, in the order
    first met."""
    index = task_index(tuple(sorted(p for p in data.include_paths if Path(p).exists())))
    hooks: dict[tuple[str, str], tuple[FunctionRef, set[str], set[str]]] = {}
    for names, configs, is_task in ((data.results, index.tasks, True), (data.groups, index.groups, False)):
        for name in sorted(names, key=natural_key):
            ref = getattr(configs.get(name), "benchmark", None)
            if isinstance(ref, FunctionRef):
                key = (ref.spec, str(ref.yaml_file.parent))
                _, tasks, groups = hooks.setdefault(key, (ref, set(), set()))
                (tasks if is_task else groups).add(name)
    out = []
    for ref, tasks, groups in hooks.values():
        benchmark = declared_benchmark(ref)
        if benchmark is not None:
            out.append((benchmark, data.only(tasks, groups)))
    return out


@functools.lru_cache(maxsize=8)
def task_index(include_paths: tuple[str, ...]) -> TaskIndex:
    """The task index of these include paths, read once per report or viewer (every model's sections look hooks
    up in it)."""
    return TaskIndex(list(include_paths))


def union_of(models: list[ModelResults]) -> ModelResults:
    """Every task and group any of the models has (values of the last one), to find their hooks."""
    union = ModelResults()
    for data in models:
        union.results.update(data.results)
        union.groups.update(data.groups)
        union.include_paths.update(data.include_paths)
    return union


def headline_rows(data: ModelResults) -> list[tuple[str, str]]:
    """(task or group, metric) rows of the cross-model table: each benchmark's `headline_metrics` in its
    order, then the first metric of every task or group without one, in natural order."""
    rows: list[tuple[str, str]] = []
    covered: set[str] = set()
    for benchmark, part in benchmark_sections(data):
        hook = report_of(benchmark).headline_metrics
        if hook is None:
            continue
        names = [*part.results, *part.groups]
        try:
            rows += [(name, metric) for name, metric in hook(names)]
        except Exception as err:  # a broken hook costs its rows their order, not the report
            print(
                f"harness: {getattr(hook, '__module__', '?')}.headline_metrics failed: {type(err).__name__}: {err}",
                file=sys.stderr,
            )
            continue
        covered.update(names)
    for name in sorted((set(data.results) | set(data.groups)) - covered, key=natural_key):
        metric = first_metric(data.results.get(name) or data.groups[name])
        rows += [(name, metric)] if metric else []
    return rows


def scales(data: ModelResults) -> dict[str, int]:
    """Task or group -> the scale its benchmark records scores on: its report module's `SCALE` (1: proportions,
    100: the papers' percentages), for the tasks and groups whose benchmark declares one."""
    out: dict[str, int] = {}
    for benchmark, part in benchmark_sections(data):
        scale = report_of(benchmark).scale
        if scale is not None:
            out.update(dict.fromkeys([*part.results, *part.groups], scale))
    return out


def row_scale(models: list[ModelResults], name: str, metric: str, declared: dict[str, int]) -> int | None:
    """The scale of one row of the models' results (`scale_of`)."""
    return scale_of(
        name, [(m.results.get(name) or m.groups.get(name) or {}).get(f"{metric},none") for m in models], declared
    )


def scale_of(name: str, values: Sequence[object], declared: Mapping[str, int]) -> int | None:
    """The scale a task's or group's `values` are on, as report.md shows them (and compare.md): its benchmark's,
    else 1 when every value lies in [0, 1] (a proportion); None: the values are no proportions (shown as recorded)."""
    if name in declared:
        return declared[name]
    return 1 if all(v is None or 0 <= v <= 1 for v in map(number, values)) else None


def headline_cell(data: ModelResults, name: str, metric: str, scale: int | None = None) -> str:
    """Value and its 95 % interval (`harness.outputs.results.estimates`: Wilson's on the effective n), as a percentage
    (0-100) when the row's scale is known; else as recorded, ± its error."""
    entry = data.results.get(name) or data.groups.get(name) or {}
    if f"{metric},none" not in entry:
        return ""
    value = entry[f"{metric},none"]
    if number(value) is None:
        return value_text(value)
    estimate = estimate_of(data, name, metric, scale)
    if scale is None:
        return interval_text(estimate, decimals=4)
    return interval_text(estimate, PERCENT / scale)


NO_VALUE = "—"  # a cell of a task or group the model ran whose results hold no value for the row's metric
NOT_RUN = "An empty cell: that model did not run the task or group."
REASONS_SHOWN = 6  # rows named per reason under a table (the cells say "—" or "N/A" for the rest)
JUDGED_ONLY = (
    "a metric only the task's judge writes, and the run had no judge (`--judge_model`): the model's own section "
    "below shows what it scored without one"
)


def _judged_only(data: ModelResults, name: str, metric: str) -> bool:
    """Whether `metric` is one only the task's judge writes (its run's `configs`' `judge: metrics:`)."""
    source: Mapping[str, object] = data.sources.get(name) or {}
    configs = source.get("configs")
    config = configs.get(name) if isinstance(configs, Mapping) else None
    judge = config.get("judge") if isinstance(config, Mapping) else None
    return isinstance(judge, Mapping) and metric in (judge.get("metrics") or [])


def table_cell(data: ModelResults, name: str, metric: str, scale: int | None, why: dict[str, list[str]]) -> str:
    """A cell of the tables at the top (`headline_cell`): empty where the model did not run `name` (`NOT_RUN`), "—"
    where its results hold no value, and, for "—" and "N/A", the reason added to `why` (reason -> the rows)."""
    if name not in data.results and name not in data.groups:
        return ""
    cell = headline_cell(data, name, metric, scale) or NO_VALUE
    if cell in (NO_VALUE, "N/A"):
        judged = cell == NO_VALUE and _judged_only(data, name, metric)
        reason = JUDGED_ONLY if judged else why_no_value(data, name, metric).partition(": ")[2] or "no value"
        rows = why.setdefault(f"*{cell}*: {reason}", [])
        rows += [] if f"`{name}` {metric}" in rows else [f"`{name}` {metric}"]
    return cell


def reasons(why: dict[str, list[str]]) -> list[str]:
    """The lines under a table saying why its cells hold "—" or "N/A", each reason with the rows it holds for."""
    lines = []
    for reason, rows in why.items():
        more = f" and {len(rows) - REASONS_SHOWN} more" if len(rows) > REASONS_SHOWN else ""
        lines.append(f"- {reason} ({', '.join(rows[:REASONS_SHOWN])}{more})")
    return [*lines, ""] if lines else []


def _data_differs(models: list[ModelResults], task: str) -> bool:
    """Whether the models ran `task` on different data or different numbers of samples."""
    used = {(d.origin, d.evaluated) for d in (m.task_data(task) for m in models if task in m.results)}
    return len(used) > 1


SCALE_NOTE = (
    "Scores on one scale, 0-100: proportions (accuracy, exact match) as percentages, the papers' 0-100 "
    "scores as they are; value [95 % interval]: Wilson's on the effective sample size, the rows that share an item "
    "counted as the clustered error says, with Korn and Graubard's degrees of freedom (the items less one, or the "
    "rows of the rarer outcome where fewer; docs/statistics.md)."
)


def _side_by_side(
    models: dict[str, ModelResults], title: str, note: str, first: str, columns: int
) -> tuple[list[str], list[ModelResults], ModelResults, dict[str, int]]:
    """A table with one column per model (sorted by name) after `columns` others (their header `first`), under
    `title` and `note`: its opening lines, the models in column order, the union of their results and its scales."""
    names = sorted(models)
    everyone = [models[name] for name in names]
    union = union_of(everyone)
    lines = [title, "", note, "", first + " | ".join(names) + " |", "|" + "---|" * (columns + len(names))]
    return lines, everyone, union, scales(union)


def cross_model_table(models: dict[str, ModelResults]) -> list[str]:
    """With several models: their headline metrics side by side, one column per model (sorted by name)."""
    if len(models) < 2:
        return []
    lines, everyone, union, declared = _side_by_side(
        models,
        "## Across models",
        f"Each task's headline metric, one column per model. {SCALE_NOTE} ‡: the models ran this task on "
        "different data or numbers of samples, so its values do not compare. §: not a proportion, shown as "
        f"recorded. {NOT_RUN} —: the run holds no value for the metric, and N/A: it holds no number; why is said "
        "under the table.",
        "| task | metric (0-100) | ",
        2,
    )
    why: dict[str, list[str]] = {}
    for name, metric in headline_rows(union):
        scale = row_scale(everyone, name, metric, declared)
        mark = (" ‡" if _data_differs(everyone, name) else "") + (" §" if scale is None else "")
        cells = [table_cell(m, name, metric, scale, why) for m in everyone]
        lines.append(f"| {name}{mark} | {metric} | " + " | ".join(cells) + " |")
    return [*lines, "", *reasons(why)]


def summary(models: dict[str, ModelResults]) -> list[str]:
    """One screen of numbers, one column per model: tasks run, samples scored and not, and every group's headline
    metric that has a value (the benchmarks' top-line numbers), on one scale."""
    lines, everyone, union, declared = _side_by_side(
        models,
        "## Summary",
        f"{SCALE_NOTE} Groups only; every task is in each model's part (and, with several models, in *Across models*). "
        f"{NOT_RUN}",
        "| | ",
        1,
    )
    counters = [[m.counters(task) for task in m.results] for m in everyone]
    lines.append("| tasks run | " + " | ".join(f"{len(m.results):,}" for m in everyone) + " |")
    lines.append(
        "| samples scored | " + " | ".join(f"{sum(c.get('n_scored', 0) for c in cs):,}" for cs in counters) + " |"
    )
    lines.append(
        "| samples not scored (errors, over length, refused, invalid) | "
        + " | ".join(f"{sum(c.get('sample_len', 0) - c.get('n_scored', 0) for c in cs):,}" for cs in counters)
        + " |"
    )
    why: dict[str, list[str]] = {}
    for name, metric in headline_rows(union):
        if name not in union.groups:
            continue
        said: dict[str, list[str]] = {}
        cells = [table_cell(m, name, metric, row_scale(everyone, name, metric, declared), said) for m in everyone]
        if any(cell not in ("", NO_VALUE, "N/A") for cell in cells):
            lines.append(f"| {name} · {metric} | " + " | ".join(cells) + " |")
            for reason, rows in said.items():
                why.setdefault(reason, []).extend(r for r in rows if r not in why.get(reason, []))
    return [*lines, "", *reasons(why)]


def across_model_sections(models: dict[str, ModelResults], out_dir: Path) -> list[str]:
    """The benchmarks' `ReportHooks.across_models`, each given every model's part of the results it covers: e.g.
    one figure with every model."""
    parts_of: dict[AcrossModels, dict[str, ModelResults]] = {}
    for model, data in sorted(models.items()):
        for benchmark, part in benchmark_sections(data):
            hook = report_of(benchmark).across_models
            if hook is not None:
                parts_of.setdefault(hook, {})[model] = part
    lines: list[str] = []
    for hook, parts in parts_of.items():
        name = f"{getattr(hook, '__module__', '?')}.{getattr(hook, '__name__', '?')}"
        lines += _hook_lines(f"report hook {name} failed", functools.partial(hook, parts, out_dir))
    return lines


def _hook_lines(failed: str, hook: Callable[[], list[str]]) -> list[str]:
    """A benchmark's report hook's lines; where it raises, one line saying so (here and on stderr): one broken
    section or figure must not lose the whole report."""
    try:
        return list(hook())
    except Exception as err:
        failure = f"{failed}: {type(err).__name__}: {err}"
        print(f"harness: {failure}", file=sys.stderr)
        return [f"*{failure}*", ""]


def _model_part(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """One model's part of the report: its data, each benchmark's section, every metric, its files."""
    lines = [f"## {model}", "", *provenance_section(data.data())]
    for benchmark, part in benchmark_sections(data):
        section = report_of(benchmark).section
        if section is not None:
            failed = f"report section {section.__module__}.{getattr(section, '__name__', '?')} failed for {model}"
            lines += _hook_lines(failed, functools.partial(section, model, part, out_dir))
    lines += metric_table(data)
    return lines + ["Results files:", ""] + [f"- `{f}`" for f in data.files] + [""]


def write_report(
    results_dir: Path,
    out_dir: Path | None = None,
    figures: bool = True,
    workers: int | None = None,
    include_paths: Sequence[Path] = (),
    paired: Sequence[str] = (),
    adjust: str = "holm",
    run_to_run: MeasuredRunToRun | None = None,
) -> Path:
    """report.md and its figures in `out_dir` (default `results_dir`); without `figures` no figure is drawn or
    linked. Figures are drawn once the text is complete, by `workers` processes (default: one per CPU), and a
    figure whose content has not changed since the last report into `out_dir` is not drawn again. Report hooks come
    from the installed tasks and `include_paths`, never from the task folders the results files record. `paired`: the
    lines of a paired comparison of two runs (`harness report --paired`), set after the summary. `adjust`: how the ✗
    marks beside a paper are adjusted for a table's number of cells (`holm`, or `bh`: Benjamini-Hochberg). `run_to_run`:
    the spread two runs of one model measured (`harness.outputs.report.run_to_run`), which the same-items verdicts use in
    place of a benchmark's declared figure for the tables whose tasks it covers."""
    import matplotlib

    matplotlib.use("Agg")  # report plots are files: no display
    out_dir = out_dir or results_dir
    models = load_results(results_dir)  # before the folder is made: a mistyped path leaves nothing behind
    out_dir.mkdir(parents=True, exist_ok=True)
    # Every model's task folders become those given to the report (`trusted_tasks`, the one rule of the commands that
    # read a results folder); the recorded ones left out are named in one line.
    recorded = {path for data in models.values() for path in data.include_paths}
    trusted = set(trusted_task_folders("harness report", include_paths, recorded))
    for data in models.values():
        data.include_paths = set(trusted)
    task_index.cache_clear()  # task folders may have changed since an earlier report in this process
    with figure_batch(out_dir, figures, workers) as batch, adjusted_by(adjust), measured_run_to_run(run_to_run):
        lines = _report_lines(results_dir, models, out_dir, figures, paired)
    failures, _ = batch.finish()
    for failure in failures:
        print(f"harness: {failure}", file=sys.stderr)
    if failures:
        lines += ["Figures that could not be drawn:", "", *[f"- *{failure}*" for failure in failures], ""]
    return write_text(out_dir / "report.md", "\n".join(lines))  # never through a link planted at report.md


def _report_lines(
    results_dir: Path, models: dict[str, ModelResults], out_dir: Path, figures: bool, paired: Sequence[str] = ()
) -> list[str]:
    lines = ["# Evaluation report", "", f"Results read from `{results_dir}`.", ""]
    if not figures:
        lines += ["No figures: written with `--no_figures`.", ""]
    partial = partial_results(results_dir)
    if partial:
        lines += [
            f"Not shown: {len(partial)} results file(s) of `--shard` runs, each covering one shard only "
            "(combine them with `harness merge OUT SHARD_DIR...`).",
            "",
        ]
    if any(comparability_warning(data.data()) for data in models.values()):
        lines += [
            "> **Warning:** some of these results ran on data that is synthetic, limited, unverified or of "
            "unrecorded origin: they are not comparable with the papers' numbers (each model's *Data* says why).",
            "",
        ]
    lines += summary(models)
    lines += paired
    lines += provenance_opening({model: data.shown_runs() for model, data in models.items()})
    lines += cross_model_table(models)
    lines += across_model_sections(models, out_dir)
    for model, data in sorted(models.items()):
        lines += _model_part(model, data, out_dir)
    return lines
