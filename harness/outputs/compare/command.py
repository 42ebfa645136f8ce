"""`harness compare RESULTS [RESULTS_B] [--models A B]`: the command line of a paired comparison; the flags that
`harness report --paired` shares with it (`PairedFlags`), and `harness report`'s own (`ReportOptions`)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from builders.core.contract import REQUIRED, option, positive_int, switch
from harness.errors import RECORDED_NOT_READ, CommandOptions, CommandParser, include_path_option
from harness.outputs.compare.compare_md import comparison_lines
from harness.outputs.compare.runs import comparison
from harness.outputs.compare.stats import CompareOptions
from harness.outputs.report.run_to_run import MeasuredRunToRun, measured_from
from harness.outputs.results.compare_file import COMPARE_JSON, read_compare_file, write_compare
from harness.outputs.results.results_file import strict_values
from harness.uncertainty.bootstrap import DEFAULT_ITERS

EPILOG = (
    "Examples: harness compare results --models qwen2.5-vl random (two models of one folder); "
    "harness compare seed1/ seed2/ (one model in each: two runs of one model give the run-to-run spread); "
    "harness compare results_hf/ results_vllm/ --models qwen2.5-vl 'qwen2.5-vl (vllm)'. "
    "A model is named as harness report names it, or by its model folder."
)


def probability_arg(text: object) -> float:
    try:
        value = float(str(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), got {text!r}")
    return value


def draws_arg(text: object) -> int:
    text = str(text)
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise argparse.ArgumentTypeError(f"expected a whole number of draws (0: none), got {text!r}")
    return int(text)


def names_arg(text: str | list[str]) -> list[str]:
    if isinstance(text, list):  # read already
        return text
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return names


@dataclass(frozen=True, kw_only=True)
class PairedFlags(CommandOptions):
    """The flags of a paired comparison (`harness compare`, and `harness report --paired`, which has its own
    `--include_path`)."""

    models: list[str] | None = option(
        None,
        "the two models to compare: both of one folder, or the one of each of two folders "
        "(as harness report names them, or their model folders)",
        nargs=2,
        metavar=("A", "B"),
    )
    tasks: list[str] | None = option(
        None, "only these tasks and groups (names or globs, by commas; a group takes its tasks)", parse=names_arg
    )
    metrics: list[str] | None = option(
        None, "only these metrics (by commas): a smaller family to adjust", parse=names_arg
    )
    adjust: str = option(
        "holm",
        "how p values are adjusted for their number: holm (family-wise, the default) or bh, also spelled "
        "fdr_bh (Benjamini-Hochberg's false discovery rate); harness report's verdicts beside a paper adjust their "
        "marks the same way",
        choices=("holm", "bh", "fdr_bh"),
    )
    level: float = option(0.95, "of the intervals (default 0.95)", parse=probability_arg)
    alpha: float = option(0.05, "of the minimum detectable effect (default 0.05)", parse=probability_arg)
    power: float = option(0.8, "of the minimum detectable effect (0.8)", parse=probability_arg)
    bootstrap_iters: int = option(
        DEFAULT_ITERS,
        f"cluster bootstrap draws for a task's own aggregation (default {DEFAULT_ITERS}; 0: none)",
        parse=draws_arg,
    )

    def compare_options(self) -> CompareOptions:
        adjust: Literal["holm", "fdr_bh"] = "holm" if self.adjust == "holm" else "fdr_bh"  # statsmodels' names
        return CompareOptions(self.level, adjust, self.alpha, self.power, self.bootstrap_iters)


@dataclass(frozen=True, kw_only=True)
class _CompareFlags(CommandOptions):
    results: list[Path] = option(
        REQUIRED,
        "one results folder (with --models A B), or two",
        positional=True,
        parse=Path,
        nargs="+",
        metavar="RESULTS",
    )
    out: Path | None = option(
        None,
        "folder for compare.json and compare.md (default: the RESULTS folder, where one is given; with two, none: "
        "their folders are only read)",
        parse=Path,
    )
    json: bool = switch("print compare.json instead of compare.md")


@dataclass(frozen=True, kw_only=True)
class CompareFlags(PairedFlags, _CompareFlags):
    """`harness compare`'s flags: its own, a paired comparison's, and its `--include_path`."""

    include_path: tuple[Path, ...] = include_path_option(
        f"a folder of tasks besides the installed ones whose code may run to aggregate them; {RECORDED_NOT_READ}"
    )


@dataclass(frozen=True, kw_only=True)
class _ReportFlags(CommandOptions):
    results_dir: Path = option(
        REQUIRED, "an --output_path folder (searched recursively for results_*.json)", positional=True, parse=Path
    )
    results_b: Path | None = option(
        None, "with --paired: a second results folder, the comparison's run B", positional=True, parse=Path, nargs="?"
    )
    out: Path | None = option(None, "folder for report.md and plots (default: RESULTS_DIR)", parse=Path)
    include_path: tuple[Path, ...] = include_path_option(
        "a folder of tasks whose report hooks (`benchmark: !function`) to run besides the installed ones; "
        f"{RECORDED_NOT_READ}"
    )
    no_figures: bool = switch("write report.md only: draw no figure, link none")
    paired: bool = switch(
        "add the paired comparison of two runs (harness compare: --models A B of RESULTS_DIR, or the model of "
        "RESULTS_DIR against that of RESULTS_B), also written to compare.json and compare.md"
    )
    jobs: int | None = option(
        None,
        "processes drawing the figures (default: one per CPU); "
        "a figure unchanged since the last report into the same folder is not drawn again",
        parse=positive_int,
    )
    run_to_run: Path | None = option(
        None,
        "the compare.json (or its folder) of two runs of one model (harness compare seed1/ seed2/): the "
        "run-to-run spread it measured replaces the benchmarks' declared figure in the verdicts on the paper's own "
        "rows (with --paired over two runs of one model, that comparison's is used)",
        parse=Path,
        metavar="COMPARE_JSON",
    )


@dataclass(frozen=True, kw_only=True)
class ReportOptions(PairedFlags, _ReportFlags):
    """`harness report`'s own flags, then those of a paired comparison (--adjust also adjusts the verdicts beside a
    paper)."""


def paired_section(
    folders: list[Path], flags: PairedFlags, include_path: list[Path], out: Path
) -> tuple[list[str], MeasuredRunToRun | None]:
    """`harness report --paired`: the comparison of `folders` (with `flags`) written to compare.json
    and compare.md in `out`, its lines for the report (a section, one heading level down), and, where both runs are
    of one model, the run-to-run spread it measured (the same-items verdict's, `harness.outputs.report.run_to_run`)."""
    compared = comparison(folders, flags.models, flags.compare_options(), include_path, flags.tasks, flags.metrics)
    json_path, md_path = write_compare(compared, "\n".join(comparison_lines(compared)), out)
    print(f"harness report: the paired comparison also written to {json_path} and {md_path}", file=sys.stderr)
    measured = None
    if compared["same_model"] and any(r.get("changed_rows") is not None for r in compared["rows"]):
        measured = measured_from(compared, str(json_path))
    return comparison_lines(compared, depth=2), measured


def run_to_run_arg(path: Path) -> MeasuredRunToRun:
    """`harness report --run_to_run`: the run-to-run spread a compare.json (or the folder holding one) measured."""
    found = path / COMPARE_JSON if path.is_dir() else path
    return measured_from(read_compare_file(found), str(found))


def compare_main(argv: list[str]) -> int:
    parser = CommandParser(
        prog="harness compare",
        description="Compare two runs paired on sample ids, per task and group: the difference with its clustered "
        "interval, McNemar's counts and exact p for 0/1 metrics, adjusted p values, the per-row correlation and the "
        "minimum detectable effect. Writes compare.json and compare.md (into --out; into RESULTS where one folder is given).",
        epilog=EPILOG,
    )
    args = CompareFlags.parse_command(parser, argv)
    if len(args.results) > 2:
        parser.error(f"one or two results folders, got {len(args.results)}")
    compared = comparison(
        args.results, args.models, args.compare_options(), list(args.include_path), args.tasks, args.metrics
    )
    markdown = "\n".join(comparison_lines(compared))
    print(json.dumps(strict_values(compared), indent=2, ensure_ascii=False) if args.json else markdown)
    # Two runs' folders are read, never written into unasked (one may come from elsewhere); one folder's models are
    # compared where they were run
    out = args.out or (args.results[0] if len(args.results) == 1 else None)
    if out is None:
        print(
            "harness compare: nothing written (two folders: --out DIR writes compare.json and compare.md)",
            file=sys.stderr,
        )
        return 0
    json_path, md_path = write_compare(compared, markdown, out)
    print(f"harness compare: written {json_path} and {md_path}", file=sys.stderr)
    return 0
