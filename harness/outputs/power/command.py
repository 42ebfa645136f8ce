"""`harness power`: how small a difference a task can detect, and how many rows a difference needs, from a build
before any run (`--tasks ... --data_dir ...`) or from a finished run's journals (`harness power RESULTS`); a table,
or `--json`. The numbers: `harness.outputs.power.analysis`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from builders.core.contract import option, switch
from harness.config.task_index import TaskIndex, natural_key
from harness.errors import CommandOptions, CommandParser, UserError, first_line, include_path_option, known_names
from harness.outputs.compare.command import names_arg, probability_arg
from harness.outputs.compare.intervals import row_scale as compared_scale
from harness.outputs.compare.paired_runs import JournalUnreadable, float_or_nan, pick_run, read_task_journal, row_keys
from harness.outputs.compare.runs import NOT_DECLARED, task_index
from harness.outputs.power.analysis import (
    AS_RECORDED,
    POINTS,
    PowerFile,
    PowerOptions,
    PowerRow,
    from_build,
    from_errors,
    from_pair,
    power_file,
)
from harness.outputs.report.report_md import row_scale, scales
from harness.outputs.results.compare_file import COMPARE_JSON, read_compare_file
from harness.outputs.results.results_file import strict_values
from harness.running.task.task import Task
from harness.uncertainty.bootstrap import DEFAULT_ITERS
from harness.uncertainty.variance import ClusteredError, design_from_keys

EPILOG = (
    "Examples: harness power --tasks TASK --data_dir data (before a run: the build's clusters, an assumed "
    "score and intra-cluster correlation); harness power results --model qwen2.5-vl --effect 5 (after one: the "
    "run's own spread and design effect). --effect and the MDE are points on the 0-100 scale report.md shows, for "
    "every benchmark."
)
SCREEN_ROWS = 40  # a benchmark's rows shown without --all: about a screen


def _number(text: object) -> float:
    try:
        value = float(str(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _correlation(text: object) -> float:
    value = _number(text)
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a correlation between -1 and 1, got {text!r}")
    return value


def _limit(text: object) -> int:
    text = str(text)
    if not text.isascii() or not text.isdigit() or int(text) < 1 or len(text) > 12:
        raise argparse.ArgumentTypeError(f"expected a number of rows (1 or more), got {text!r}")
    return int(text)


@dataclass(frozen=True, kw_only=True)
class PowerFlags(CommandOptions):
    results: Path | None = option(
        None, "a results folder: estimate from its run's journals", positional=True, parse=Path, nargs="?"
    )
    model: str | None = option(None, "the model of RESULTS to read, where it holds several")
    tasks: list[str] | None = option(None, "tasks, groups or globs, by commas (a build: required)", parse=names_arg)
    data_dir: str | None = option(None, "a build's folder (or hf://ORG/NAME@REVISION): its rows, before any run")
    limit: int | None = option(None, "a build: its first N rows per task, as a run's --limit", parse=_limit)
    metrics: list[str] | None = option(None, "a run: only these metrics", parse=names_arg)
    effect: float = option(
        3.0,
        "the difference to detect, in points on 0-100 as report.md shows every benchmark (default 3: 0.03 of a "
        "proportion, 3 of a percentage)",
        parse=_number,
    )
    alpha: float = option(0.05, "two-sided level (default 0.05)", parse=probability_arg)
    power: float = option(0.8, "power, 1 - β (default 0.8)", parse=probability_arg)
    paired: bool = switch("two runs, same rows", exclusive="comparison")
    unpaired: bool = switch("different rows", exclusive="comparison")
    one_sample: bool = switch("one run vs a number", exclusive="comparison")
    correlation: float = option(0.5, "paired runs' per-row correlation (0.5)", parse=_correlation)
    pair: Path | None = option(
        None,
        "a finished pair (harness compare's compare.json, or its folder): the paired difference's own sd, "
        "design effect and per-row correlation, measured, instead of one run's and an assumed --correlation",
        parse=Path,
        metavar="COMPARE_JSON",
    )
    icc: float | None = option(
        None, "a build: correlation of rows that share an item (default 0.5)", parse=_correlation
    )
    score: float | None = option(None, "a build: the 0/1 score assumed, sd sqrt(p(1-p)) (0.5)", parse=probability_arg)
    sd: float | None = option(None, "a build: the per-row sd assumed, in points (0-100), not --score", parse=_number)
    include_path: tuple[Path, ...] = include_path_option("a folder of tasks you trust")
    json: bool = switch("print JSON instead of the table")
    all: bool = switch(f"every row (default: {SCREEN_ROWS} per benchmark at most)")

    @property
    def comparison(self) -> Literal["paired", "unpaired", "one_sample"]:
        return "unpaired" if self.unpaired else "one_sample" if self.one_sample else "paired"


def _options(args: PowerFlags) -> PowerOptions:
    if args.pair is not None:
        others = [flag for flag, given in (("RESULTS", args.results), ("--data_dir", args.data_dir)) if given]
        others += (
            ["--unpaired" if args.comparison == "unpaired" else "--one_sample"] if args.comparison != "paired" else []
        )
        if others:
            raise UserError(f"--pair plans a paired comparison from a finished pair alone: drop {' '.join(others)}")
    elif args.results is not None:
        assumed = (("--icc", args.icc), ("--score", args.score), ("--sd", args.sd))
        given = [flag for flag, value in assumed if value is not None]  # `--icc 0` is given too
        given += ["--data_dir"] if args.data_dir else []
        given += ["--limit"] if args.limit else []
        if given:
            raise UserError(
                f"{' '.join(given)}: a build's assumptions; from a run's journals the spread and the intra-cluster "
                "correlation are measured (drop them, or drop RESULTS to plan from a build)"
            )
    elif not args.tasks:
        raise UserError("name the tasks to plan with --tasks (and their build with --data_dir), or give RESULTS")
    if args.sd is not None and not args.sd > 0:
        raise UserError(f"--sd {args.sd}: a standard deviation above 0")
    if not 0 < args.effect <= 100:  # points on 0-100: no difference of two scores on it lies past 100
        raise UserError(f"--effect {args.effect:g}: a difference in points on the 0-100 scale, above 0 and at most 100")
    return PowerOptions(
        effect=args.effect,
        alpha=args.alpha,
        power=args.power,
        comparison=args.comparison,
        correlation=args.correlation,
        icc=0.5 if args.icc is None else args.icc,
        score=0.5 if args.score is None else args.score,
        sd=args.sd,
    )


def from_data(
    index: TaskIndex, names: Sequence[str], data_dir: str | None, limit: int | None, options: PowerOptions
) -> PowerFile:
    """Each task's row from its build: the rows' cluster keys read without a model."""
    rows: list[PowerRow] = []
    for name in index.select(names).tasks:
        task = Task(index.tasks[name])
        task.load(data_dir, limit)
        keys = [task.cluster_keys(doc) or [f"{name}/{task.sample_id(i, doc)}"] for i, doc in task.iter_docs()]
        rows.append(from_build(_benchmark(index.tasks[name].dataset_path), name, design_from_keys(keys), options))
    return power_file("build", rows, {}, options)


def from_run(
    results: Path,
    model: str | None,
    include_paths: Sequence[Path],
    names: Sequence[str] | None,
    metrics: Sequence[str] | None,
    options: PowerOptions,
) -> PowerFile:
    """Each task's metrics from a finished run's journal: their errors as the task's aggregation computes them."""
    run = pick_run(results, model)
    index = task_index("harness power", [run], include_paths)
    # the scales' benchmark declarations from the task folders power was given, never those the results record
    run.results.include_paths = {str(path) for path in include_paths}
    chosen = set(index.select(names).tasks) if names else None
    rows: list[PowerRow] = []
    skipped: dict[str, str] = {}
    declared = scales(run.results)
    analysed: set[str] = set()  # the metrics of the tasks analysed, among which --metrics picks
    for name in sorted(run.results.results, key=natural_key):
        if chosen is not None and name not in chosen:
            continue
        if name not in index.tasks:
            skipped[name] = NOT_DECLARED
            continue
        try:
            journal = read_task_journal(run, name)
            task = Task(index.tasks[name])
            records = journal.records
            scored = [
                task.scored_row(s, records[s].get("metrics") or {}, row_keys(name, s, records[s], records[s]))
                for s in records
                if journal.scored(s)
            ]
            aggregated = task.aggregate(scored, DEFAULT_ITERS)
        except (JournalUnreadable, UserError) as err:
            skipped[name] = first_line(err)
            continue
        analysed.update(aggregated.errors)
        for metric, error in aggregated.errors.items():
            if metrics is None or metric in metrics:
                design = design_from_keys([row.keys for row in scored if metric in row.metrics])
                scale = row_scale([run.results], name, metric, declared)
                benchmark = _benchmark(index.tasks[name].dataset_path)
                rows.append(from_errors(benchmark, name, metric, design, error, options, scale))
    if analysed:
        known_names(metrics, analysed, "--metrics", "metric")
    if not rows and not skipped:
        raise UserError(
            f"{results}: no task of {run.model} to analyse" + (f" among {', '.join(names)}" if names else "")
        )
    return power_file("run", rows, skipped, options)


def from_pair_file(
    path: Path, include_paths: Sequence[Path], names: Sequence[str] | None, metrics: Sequence[str] | None,
    options: PowerOptions,
) -> PowerFile:  # fmt: skip
    """Each task metric's row from a finished pair's compare.json: its paired difference's errors as measured."""
    found = path / COMPARE_JSON if path.is_dir() else path
    compared = read_compare_file(found)
    index = TaskIndex(list(include_paths))
    chosen = set(index.select(names).tasks) if names else None
    rows: list[PowerRow] = []
    paired = [row for row in compared["rows"] if row["kind"] == "task"]
    if paired:
        known_names(metrics, {row["metric"] for row in paired}, "--metrics", "metric")
    for row in paired:
        if chosen is not None and row["name"] not in chosen:
            continue
        if metrics is not None and row["metric"] not in metrics:
            continue
        se, se_clustered, deff, r = (
            float_or_nan(row[k]) for k in ("stderr", "stderr_clustered", "design_effect", "correlation")
        )
        cr2 = float_or_nan(row.get("stderr_cr2", "N/A"))  # a file before issue 107 has none: CR1's is its error
        error = ClusteredError(
            se, se_clustered, row["n_paired"], row["n_clusters"], deff, row["overlap"], stderr_cr2=cr2
        )
        scale = compared_scale(row)
        config = index.tasks.get(row["name"])
        benchmark = _benchmark(config.dataset_path) if config is not None else "other"
        rows.append(from_pair(benchmark, row["name"], row["metric"], error, r, options, int(scale) if scale else None))
    if not rows:
        raise UserError(f"{found}: no task's row to plan from" + (f" among {', '.join(names)}" if names else ""))
    return power_file("pair", rows, {}, options)


def _benchmark(dataset_path: str) -> str:
    """The benchmark a task's rows are grouped under: its dataset's name (`mmneedle`, `ORG/milebench`: milebench)."""
    return dataset_path.rstrip("/").rsplit("/", 1)[-1]


def _cell(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "N/A"
    return str(value)


def table(power: PowerFile, every_row: bool = False) -> list[str]:
    """The rows as aligned text tables, one per benchmark (at most `SCREEN_ROWS` rows each unless `every_row`),
    under a header saying what was assumed and the unit of `--effect`, the sd and the MDE."""
    how = {
        "paired": (
            "two runs on the same rows, each metric's difference measured from a finished pair (its sd, design "
            "effect and per-row correlation)"
            if power["source"] == "pair"
            else f"two runs on the same rows, per-row correlation {power['correlation']} assumed and the "
            "difference's design effect taken as one run's (--pair COMPARE_JSON measures both)"
        ),
        "unpaired": "two runs on different rows",
        "one_sample": "one run against a fixed number",
    }[power["comparison"]]
    assumed = (
        f"a build: score sd {power['sd']:.1f} points and intra-cluster correlation {power['icc']} assumed"
        if power["source"] == "build" and power["sd"] is not None
        else f"{'a pair' if power['source'] == 'pair' else 'a run'}: each metric's sd and design effect measured"
    )
    lines = [
        f"harness power: {how}; α = {power['alpha']}, power {power['power']:.0%}; {assumed}",
        f"Unit: points on the 0-100 scale report.md shows, for every benchmark (sd, MDE and --effect {power['effect']:g}"
        f": {power['effect'] / 100:g} of a proportion, {power['effect']:g} of a percentage); rows needed for a "
        f"difference of {power['effect']:g} points",
    ]
    if any(row["unit"] == AS_RECORDED for row in power["rows"]):
        lines.append("Rows marked * are no proportion: their sd, MDE and --effect are in the metric's own units.")
    by_benchmark: dict[str, list[PowerRow]] = {}
    for row in power["rows"]:
        by_benchmark.setdefault(row["benchmark"], []).append(row)
    for benchmark, rows in by_benchmark.items():
        shown = rows if every_row else rows[:SCREEN_ROWS]
        lines += ["", f"{benchmark} ({len(rows)} row{'s' if len(rows) != 1 else ''})", *_aligned(shown)]
        if len(shown) < len(rows):
            lines.append(f"... {len(rows) - len(shown)} more rows of {benchmark} (--all shows every row, --json too)")
    notes = [f"{row['task']} {row['metric'] or ''}: {row['note']}" for row in power["rows"] if row["note"]]
    notes += [f"{task}: not analysed: {why}" for task, why in power["not_analysed"].items()]
    if notes and not every_row and len(notes) > SCREEN_ROWS:
        notes = [*notes[:SCREEN_ROWS], f"... {len(notes) - SCREEN_ROWS} more notes (--all)"]
    return lines + ([""] + notes if notes else [])


def _mde(row: PowerRow) -> str:
    """The MDE; past the 0-100 scale, "not detectable at this size" (no difference the scale allows), as compare.md."""
    mde = row["mde"]
    past = row["unit"] == POINTS and isinstance(mde, float) and math.isfinite(mde) and mde > 100
    return "not detectable at this size" if past else _cell(mde, 2)


HEAD = ["task", "metric", "rows", "clusters", "rows/cluster", "icc", "deff", "sd", "MDE", "rows needed",
        "clusters needed"]  # fmt: skip


def _aligned(rows: list[PowerRow]) -> list[str]:
    body = [
        [
            row["task"],
            (row["metric"] or "-") + ("*" if row["unit"] == AS_RECORDED else ""),
            str(row["n"]),
            str(row["n_clusters"]),
            _cell(row["rows_per_cluster"], 1),
            _cell(row["icc"], 2),
            _cell(row["design_effect"], 2),
            _cell(row["sd"], 2),
            _mde(row),
            _cell(row["rows_needed"]),
            _cell(row["clusters_needed"]),
        ]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in [HEAD, *body]) for i in range(len(HEAD))]
    return [
        "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()
        for cells in [HEAD, *body]
    ]


def power_main(argv: list[str]) -> int:
    parser = CommandParser(
        prog="harness power",
        description="Per task: the minimum detectable effect at its rows, and the rows (and items) a difference "
        "needs, with the design effect of its clusters; from a build before any run, or from a finished run.",
        epilog=EPILOG,
    )
    args = PowerFlags.parse_command(parser, argv)
    options = _options(args)
    if args.pair is not None:
        found = from_pair_file(args.pair, list(args.include_path), args.tasks, args.metrics, options)
    elif args.results is None:
        found = from_data(TaskIndex(list(args.include_path)), args.tasks or [], args.data_dir, args.limit, options)
    else:
        found = from_run(args.results, args.model, list(args.include_path), args.tasks, args.metrics, options)
    print(json.dumps(strict_values(found), indent=2) if args.json else "\n".join(table(found, args.all)))
    if args.results is not None and found["not_analysed"] and args.json:
        print(f"harness power: {len(found['not_analysed'])} task(s) not analysed (`not_analysed`)", file=sys.stderr)
    return 0
