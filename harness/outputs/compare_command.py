"""`harness compare RESULTS [RESULTS_B] [--models A B]`: the command line of a paired comparison, and the flags that
`harness report --paired` shares with it (`add_comparison_flags`, `options_from`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Literal

from harness.errors import CommandParser
from harness.outputs.compare_file import COMPARE_JSON, read_compare_file, write_compare
from harness.outputs.compare_markdown import comparison_lines
from harness.outputs.compare_runs import comparison
from harness.outputs.compare_stats import CompareOptions
from harness.outputs.results_file import strict_values
from harness.outputs.run_to_run import MeasuredRunToRun, measured_from
from harness.uncertainty.bootstrap import DEFAULT_ITERS

EPILOG = (
    "Examples: harness compare results --models qwen2.5-vl random (two models of one folder); "
    "harness compare seed1/ seed2/ (one model in each: two runs of one model give the run-to-run spread); "
    "harness compare results_hf/ results_vllm/ --models qwen2.5-vl 'qwen2.5-vl (vllm)'. "
    "A model is named as harness report names it, or by its model folder."
)


def probability_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), got {text!r}")
    return value


def draws_arg(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise argparse.ArgumentTypeError(f"expected a whole number of draws (0: none), got {text!r}")
    return int(text)


def names_arg(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {text!r}")
    return names


def add_comparison_flags(parser: argparse.ArgumentParser, include_path: bool = True) -> None:
    """The flags of a paired comparison (`harness compare`, and `harness report --paired`, which has its own
    `--include_path`)."""
    parser.add_argument(
        "--models",
        nargs=2,
        metavar=("A", "B"),
        help="the two models to compare: both of one folder, or the one of each of two folders "
        "(as harness report names them, or their model folders)",
    )
    parser.add_argument(
        "--tasks",
        type=names_arg,
        help="only these tasks and groups (names or globs, by commas; a group takes its tasks)",
    )
    parser.add_argument("--metrics", type=names_arg, help="only these metrics (by commas): a smaller family to adjust")
    parser.add_argument(
        "--adjust",
        choices=("holm", "bh", "fdr_bh"),
        default="holm",
        help="how p values are adjusted for their number: holm (family-wise, the default) or bh, also spelled "
        "fdr_bh (Benjamini-Hochberg's false discovery rate); harness report's verdicts beside a paper adjust their "
        "marks the same way",
    )
    parser.add_argument("--level", type=probability_arg, default=0.95, help="of the intervals (default 0.95)")
    parser.add_argument(
        "--alpha", type=probability_arg, default=0.05, help="of the minimum detectable effect (default 0.05)"
    )
    parser.add_argument("--power", type=probability_arg, default=0.8, help="of the minimum detectable effect (0.8)")
    parser.add_argument(
        "--bootstrap_iters",
        type=draws_arg,
        default=DEFAULT_ITERS,
        help=f"cluster bootstrap draws for a task's own aggregation (default {DEFAULT_ITERS}; 0: none)",
    )
    if include_path:
        parser.add_argument(
            "--include_path",
            action="append",
            default=[],
            type=Path,
            help="a folder of tasks besides the installed ones whose code may run to aggregate them; the "
            "--include_path a results file records is never read, since a results folder may come from elsewhere",
        )


def options_from(args: argparse.Namespace) -> CompareOptions:
    adjust: Literal["holm", "fdr_bh"] = "holm" if args.adjust == "holm" else "fdr_bh"  # statsmodels' names
    return CompareOptions(args.level, adjust, args.alpha, args.power, args.bootstrap_iters)


def paired_section(
    folders: list[Path], args: argparse.Namespace, out: Path
) -> tuple[list[str], MeasuredRunToRun | None]:
    """`harness report --paired`: the comparison of `folders` (with `args`' comparison flags) written to compare.json
    and compare.md in `out`, its lines for the report (a section, one heading level down), and, where both runs are
    of one model, the run-to-run spread it measured (the same-items verdict's, `harness.outputs.run_to_run`)."""
    compared = comparison(folders, args.models, options_from(args), args.include_path, args.tasks, args.metrics)
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
        "minimum detectable effect. Writes compare.json and compare.md.",
        epilog=EPILOG,
    )
    parser.add_argument(
        "results", type=Path, nargs="+", metavar="RESULTS", help="one results folder (with --models A B), or two"
    )
    parser.add_argument("--out", type=Path, help="folder for compare.json and compare.md (default: the first RESULTS)")
    parser.add_argument("--json", action="store_true", help="print compare.json instead of compare.md")
    add_comparison_flags(parser)
    args = parser.parse_args(argv)
    if len(args.results) > 2:
        parser.error(f"one or two results folders, got {len(args.results)}")
    compared = comparison(args.results, args.models, options_from(args), args.include_path, args.tasks, args.metrics)
    markdown = "\n".join(comparison_lines(compared))
    json_path, md_path = write_compare(compared, markdown, args.out or args.results[0])
    print(json.dumps(strict_values(compared), indent=2, ensure_ascii=False) if args.json else markdown)
    print(f"harness compare: written {json_path} and {md_path}", file=sys.stderr)
    return 0
