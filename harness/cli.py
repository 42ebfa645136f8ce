"""`harness`: evaluate models on tasks (`harness --tasks ... --model ...`), and the subcommands
`harness ls`, `harness models`, `harness report DIR`, `harness view DIR` and `harness merge OUT SHARD_DIR...`.

Like lm-eval, the bare form runs an evaluation; `harness run ...` is the same thing spelled out.
User mistakes end with a one-line `harness: error: ...` and exit code 2; a backend that stops the
run (rejected API key, unreachable server, engine failure) or an output that cannot be written (a read-only
or full disk: the line names the file and the system's reason) ends with one line and exit code 1.

Output layout, under `--output_path OUT`: `OUT/<model folder>/` (see `model_folder_name`) holds
`journal_<task>.jsonl` (the resumable journal), `results_<date>.json` and, with `--log_samples`,
`samples_<task>_<date>.jsonl` (both as lm-eval names and shapes them), `cache.sqlite3` (the response
cache, unless `--cache_dir` puts it elsewhere) and `harness.lock` (one run at a time). The cache lives
beside the journals of that model, so every later run of the model into OUT reuses it: the journal
already spares a rerun of the same command every model call, and the cache covers what a journal does
not (a journal deleted or refused after a task's YAML changed, a task renamed or new but asking the same
prompts, a group and its member tasks, an evaluation repeated after removing its samples).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.errors import UserError
from harness.lm_eval_flags import SeedsAction, add_compat_flags
from harness.run_plan import TOKEN_BUDGET_BATCH_SIZE

SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {}
# lm-eval's `--tasks list` spellings: what each prints of `harness ls`.
LIST_TASKS = {
    "list": ("groups", "tags", "tasks", "configs"),
    "list_groups": ("groups",),
    "list_tags": ("tags",),
    "list_subtasks": ("tasks",),
}


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("mmlongeval")
    except PackageNotFoundError:
        return "unknown (not installed)"


def subcommand(name: str) -> Callable[[Callable[[list[str]], int]], Callable[[list[str]], int]]:
    def register(func: Callable[[list[str]], int]) -> Callable[[list[str]], int]:
        SUBCOMMANDS[name] = func
        return func

    return register


def _limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of documents or a fraction, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("0 documents would evaluate nothing; give N >= 1 or a fraction in (0, 1)")
    if not math.isfinite(value) or value < 0 or (value >= 1 and value != int(value)):
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or a fraction in (0, 1), got {text!r}")
    return value


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Evaluate a vision-language model on tasks from tasks/ (lm-eval-style YAML).",
        epilog="Other commands: `harness ls` (tasks, groups, tags), `harness models` (backends, aliases), "
        "`harness report RESULTS_DIR` (markdown table and plots), `harness view RESULTS_DIR` (a local web page "
        "over runs, samples and their images), `harness merge OUT SHARD_DIR...` "
        "(combine --shard runs). Example: harness --tasks "
        "mmneedle_m1_n2_k1_pos --model random --data_dir data --output_path results",
    )
    parser.add_argument(
        "--tasks",
        required=True,
        help="comma-separated task, group, tag or dataset config names "
        "(<benchmark>_<config>: all its tasks), globs, or YAML paths; `list` prints them all",
    )
    parser.add_argument(
        "--model",
        help="backend (hf, vllm, openai, constant, random) or an alias (qwen2.5-vl, ...); required unless --tasks list",
    )
    parser.add_argument(
        "--model_args", default="", help='k=v,k2=v2 for the backend; quote values with commas: answer="1, 2, 3"'
    )
    parser.add_argument(
        "--data_dir",
        help="folder holding built datasets, or a pushed build on the Hub: "
        "hf://ORG/NAME@REVISION (default: $MMLONGEVAL_DATA_DIR, then ~/.cache/mmlongeval/data, then "
        "the task's metadata.hub_repo)",
    )
    parser.add_argument(
        "--trust_unverified_data",
        action="store_true",
        help="read data that cannot be verified (no "
        "build manifest, a malformed one, files it does not list) instead of refusing it; the "
        'results and the report then say "unverified"',
    )
    parser.add_argument(
        "--include_path",
        action="append",
        default=[],
        type=Path,
        help="extra folder (or YAML file) of tasks; may be repeated",
    )
    parser.add_argument(
        "--limit",
        type=_limit,
        help="first N documents (N >= 1) of each task, or a fraction in (0, 1) "
        "(testing only); --limit 0 is refused, as it would score nothing",
    )
    parser.add_argument(
        "--batch_size",
        type=_batch_size,
        help="requests per model call (default 1; with "
        f"--max_batch_tokens the most requests per batch, default {TOKEN_BUDGET_BATCH_SIZE}); `auto`: "
        "the largest that fits in device memory, from --max_batch_size down (hf; recorded in the results)",
    )
    parser.add_argument(
        "--max_batch_tokens",
        type=int,
        help="hf: batch by the rows' token counts, at most this many "
        "tokens per batch counting padding (prompt + max_gen_toks), long prompts first",
    )
    parser.add_argument(
        "--shard",
        help="run only shard I of N of every task (0-based: 0/4 .. 3/4), for batch "
        "schedulers; combine the shards' output folders with `harness merge`",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="where the replicas of "
        "--model_args data_parallel_size=D run, as Ray actors: without ADDRESS a Ray instance started on "
        "this machine for the run (also the default with D > 1, unless $RAY_ADDRESS is set); `auto` the "
        "cluster `ray start` runs here; or a cluster's address (needs: pip install -e '.[ray]'; see "
        "docs/scaling.md)",
    )
    parser.add_argument(
        "--seed",
        action=SeedsAction,
        default=0,
        help="seed for sampling and the random baseline "
        "(default 0); lm-eval's four, random,numpy,torch,fewshot (0,1234,1234,1234), are taken too",
    )
    parser.add_argument(
        "--gen_kwargs", default="", help="override generation settings of every task: max_gen_toks=64,temperature=0"
    )
    parser.add_argument(
        "--metadata", default="", help='JSON merged into every task\'s metadata, e.g. \'{"subset": "full"}\''
    )
    parser.add_argument(
        "-o",
        "--output_path",
        type=Path,
        help="write results, the resumable sample journal and the "
        "response cache under OUTPUT_PATH/<model>/ (without it nothing is saved)",
    )
    parser.add_argument(
        "--cache_dir",
        type=Path,
        help="keep the response cache in CACHE_DIR/cache.sqlite3, shared by "
        "every output path and model (default: $MMLONGEVAL_CACHE_DIR, else OUTPUT_PATH/<model>/)",
    )
    parser.add_argument("--no_cache", action="store_true", help="do not read or write the response cache")
    parser.add_argument(
        "--log_samples",
        action="store_true",
        help="also write samples_<task>_<date>.jsonl as lm-eval "
        "does: each sample's prompt (<image> markers), answer, target, metrics and image hashes",
    )
    parser.add_argument(
        "--allow_failures",
        action="store_true",
        help="exit 0 even when some samples or judge calls "
        "failed with errors (timeouts, provider errors): they are left out of the denominators either "
        "way, and a rerun of the same command tries them again",
    )
    parser.add_argument("--no_progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--judge_model",
        help="backend or alias that judges the tasks with a `judge:` block after "
        "generation (MMLongBench summarization: the paper's GPT-4o Fluency-F1), e.g. openai; without "
        "it those tasks report only their own metrics",
    )
    parser.add_argument(
        "--judge_args",
        default="",
        help="k=v model args of the judge (e.g. model=gpt-4o-2024-11-20,"
        "base_url=...; the task names its paper's judge as the default `model`)",
    )
    parser.add_argument(
        "--screen_only",
        action="store_true",
        help="build every request and screen it as the run "
        "would (over_length, too_many_images, invalid input) under the model's limits, without "
        "loading the model; print the counts per task and write nothing",
    )
    add_lm_eval_flags(parser)
    parser.add_argument("-V", "--version", action="version", version=f"harness (mmlongeval) {version()}")
    return parser


def _batch_size(text: str) -> int | str:
    """An integer >= 1, or lm-eval's `auto` (`auto:N` too: lm-eval searches N times, this harness on every
    out-of-memory, so N changes nothing)."""
    return "auto" if text == "auto" or text.startswith("auto:") else _positive_int(text, " or auto")


def add_lm_eval_flags(parser: argparse.ArgumentParser) -> None:
    """The lm-eval flags its users type every day, with what each means here."""
    from harness.models.scheduling.auto_batch import DEFAULT_START

    group = parser.add_argument_group("lm-eval's flags")
    group.add_argument(
        "--max_batch_size",
        type=_positive_int,
        default=DEFAULT_START,
        help=f"where --batch_size auto starts its search (default {DEFAULT_START})",
    )
    group.add_argument(
        "--predict_only",
        action="store_true",
        help="generate and journal the answers without "
        "scoring them (implies --log_samples; needs --output_path); the results say so, and a later run "
        "without the flag scores the journalled answers without generating again",
    )
    group.add_argument(
        "--apply_chat_template",
        nargs="?",
        const=True,
        default=False,
        metavar="TEMPLATE",
        help="accepted for lm-eval's command lines: every backend always renders the model's own chat "
        "template (a template name other than the model's is refused)",
    )
    group.add_argument(
        "--system_instruction",
        help="text for a system turn before every prompt (before a task's own "
        "system prompt); recorded in the results and part of the response cache's key",
    )
    group.add_argument(
        "-w",
        "--write_out",
        action="store_true",
        help="print the first rendered prompts of each task (<image> marks each image) before generating",
    )
    group.add_argument(
        "-v",
        "--verbosity",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        help="log level of the libraries (transformers, datasets, vllm, httpx); the harness's own "
        "`harness:` lines are always printed",
    )
    group.add_argument(
        "--hf_hub_log_args",
        default="",
        help="lm-eval's k=v list to upload the results to a Hub "
        "dataset repo: hub_results_org=ORG,results_repo_name=NAME (default mmlongeval-results),"
        "push_results_to_hub=True,push_samples_to_hub=True,public_repo=False (token: $HF_TOKEN)",
    )
    add_compat_flags(group)  # --device, --num_fewshot, --wandb_args, ... (`harness.lm_eval_flags`)


def _positive_int(text: str, alternatives: str = "") -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1{alternatives}, got {text!r}")
    return value


def list_tasks(what: str, include_paths: list[Path], pattern: str | None = None) -> int:
    """Print the task index: `harness ls`, or `--tasks list|list_groups|list_tags|list_subtasks`; with `pattern`,
    only the names holding it (or matching it, as a glob)."""
    from harness.config.task_index import TaskIndex, natural_key

    index = TaskIndex(include_paths)
    sections = LIST_TASKS[what]
    width = max([len(n) for n in index.all_names()] + [10]) + 2

    def shown(items: dict) -> list:
        return sorted(((n, v) for n, v in items.items() if _matches(n, pattern)), key=lambda item: natural_key(item[0]))

    if "groups" in sections:
        groups = shown(index.groups)
        print(f"Groups ({len(groups)}):")
        for name, group in groups:
            members = ", ".join(group.task[:4]) + (f", ... (+{len(group.task) - 4})" if len(group.task) > 4 else "")
            print(f"  {name:<{width}}{len(group.task)} members: {members}")
    if "tags" in sections:
        tags = shown(index.tags)
        print(f"Tags ({len(tags)}):")
        for name, members in tags:
            print(f"  {name:<{width}}{len(members)} tasks")
    if "tasks" in sections:
        tasks = shown(index.tasks)
        print(f"Tasks ({len(tasks)}):")
        for name, config in tasks:
            dataset = config.dataset_path + (f"/{config.dataset_name}" if config.dataset_name else "")
            print(f"  {name:<{width}}{dataset:<24}{config.source}")
    if "configs" in sections:
        configs = shown(index.dataset_configs())
        print(f"Dataset configs ({len(configs)}; `--tasks NAME` runs every task of one):")
        for name, members in configs:
            print(f"  {name:<{width}}{', '.join(members)}")
    return 0


def _matches(name: str, pattern: str | None) -> bool:
    from fnmatch import fnmatchcase

    return pattern is None or pattern in name or fnmatchcase(name, pattern)


# `harness ls tasks|groups|tags|configs`: one section of the index (lmms-eval's `--tasks list_groups` and kin).
LS_SECTIONS = {"tasks": "list_subtasks", "groups": "list_groups", "tags": "list_tags", "configs": "list_configs"}
LIST_TASKS["list_configs"] = ("configs",)


@subcommand("ls")
def ls_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="harness ls",
        description="List groups, tags, tasks and dataset configs.",
        epilog="Examples: harness ls mmlongbench (every name holding it); harness ls tasks 'milebench_*_adv'; "
        "harness ls groups",
    )
    parser.add_argument(
        "words",
        nargs="*",
        metavar="[tasks|groups|tags|configs] [FILTER]",
        help="one section only, and/or only the names holding FILTER (or matching it, a glob)",
    )
    parser.add_argument("--include_path", action="append", default=[], type=Path)
    args = parser.parse_args(argv)
    words = list(args.words)
    section = LS_SECTIONS[words.pop(0)] if words and words[0] in LS_SECTIONS else "list"
    if len(words) > 1:
        parser.error(f"one filter at most, got {' '.join(words)!r}")
    return list_tasks(section, args.include_path, words[0] if words else None)


@subcommand("models")
def models_command(argv: list[str]) -> int:
    from harness.models.aliases import ALIASES
    from harness.models.registry import available_models

    argparse.ArgumentParser(prog="harness models", description="List model backends and aliases.").parse_args(argv)
    print("Backends:")
    for name in available_models():
        print(f"  {name}")
    print("Aliases (--model NAME; --model_args override; backend=... switches backend):")
    width = max(len(n) for n in ALIASES) + 2
    # Wide enough for the longest backend name and a space ("openai" once ran into its settings).
    backend_width = max(len(alias.backend) for alias in ALIASES.values()) + 2
    for name, alias in sorted(ALIASES.items()):
        settings = ",".join(f"{k}={v}" for k, v in alias.args.items())
        print(f"  {name:<{width}}{alias.backend:<{backend_width}}{settings}")
        trained = (
            f"trained on {alias.trained_context:,} tokens (informational, not a limit); "
            if alias.trained_context
            else ""
        )
        if alias.note or trained:
            print(f"  {'':<{width}}{'':<{backend_width}}{trained}{alias.note}")
    return 0


@subcommand("merge")
def merge_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="harness merge",
        description="Combine the output folders of the --shard runs of one evaluation into the journals and the "
        "results file an unsharded run would have written (nothing is generated).",
        epilog="Example: harness merge results/ shard0/ shard1/ shard2/ (each shard ran with --shard i/3 "
        "--output_path shardI/)",
    )
    parser.add_argument("out", type=Path, help="output folder of the merged run (used like --output_path)")
    parser.add_argument("shard_dirs", type=Path, nargs="+", help="every shard's --output_path (or its model folder)")
    args = parser.parse_args(argv)
    from harness.outputs.merge import merge_shards

    return merge_shards(args.out, args.shard_dirs, argv)


@subcommand("report")
def report_command(argv: list[str]) -> int:
    from harness.outputs.report import write_report

    parser = argparse.ArgumentParser(
        prog="harness report", description="Write report.md and PNG plots for a results folder."
    )
    parser.add_argument(
        "results_dir", type=Path, help="an --output_path folder (searched recursively for results_*.json)"
    )
    parser.add_argument("--out", type=Path, help="folder for report.md and plots (default: RESULTS_DIR)")
    parser.add_argument("--no_figures", action="store_true", help="write report.md only: draw no figure, link none")
    parser.add_argument(
        "--jobs",
        type=_positive_int,
        help="processes drawing the figures (default: one per CPU); "
        "a figure unchanged since the last report into the same folder is not drawn again",
    )
    args = parser.parse_args(argv)
    path = write_report(args.results_dir, args.out, figures=not args.no_figures, workers=args.jobs)
    print(f"harness: report written to {path}", file=sys.stderr)
    return 0


def unknown_command(name: str) -> str:
    """`unknown command 'lss'; did you mean ls?` over the subcommands (`run` too)."""
    import difflib

    known = sorted([*SUBCOMMANDS, "run"])
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"did you mean {' / '.join(close)}?" if close else f"the commands are {', '.join(known)}"
    return f"unknown command {name!r}; {hint} (a run is `harness --tasks ... --model ...`)"


@subcommand("view")
def view_command(argv: list[str]) -> int:
    from harness.view.server import main as serve

    return serve(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from harness.redact import command_line_secrets, register, scrubbed_output

    register(command_line_secrets(argv))  # before any parsing: no message about a typo shows a key (argparse's too)
    with scrubbed_output():
        return _main(argv)


def _main(argv: list[str]) -> int:
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        if argv and argv[0] == "run":
            argv = argv[1:]
        elif argv and not argv[0].startswith("-"):  # `harness lss`: a subcommand mistyped, not a run's flags
            raise UserError(unknown_command(argv[0]))
        parser = run_parser()
        args = parser.parse_args(argv)  # before any heavy import: `--help` stays instant
        if args.tasks in LIST_TASKS:
            return list_tasks(args.tasks, args.include_path)
        if args.model is None:
            parser.error("the following arguments are required: --model")
        from harness.execute import run

        return run(args, argv)
    except UserError as err:
        from harness.redact import scrub

        print(f"harness: error: {scrub(str(err))}", file=sys.stderr)
        return getattr(err, "exit_code", 2)
    except BrokenPipeError:  # `harness ls | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as err:
        if err.filename is None:  # no file to name: not an input or output problem the user can act on
            raise
        from harness.redact import scrub

        print(f"harness: error: {scrub(f'{err.filename}: {err.strerror or err}')}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
