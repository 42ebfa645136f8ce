"""`harness`: evaluate models on tasks (`harness --tasks ... --model ...`; like lm-eval's, `harness run ...` spelled
out), and the subcommands `ls`, `models`, `report`, `view`, `merge`, `compare` and `power`.
User mistakes end with a one-line `harness: error: ...` and exit code 2, whichever command was given (an argparse
mistake of a subcommand ends by naming its `--help`); `harness` alone prints its help; a backend that stops the
run (rejected API key, unreachable server, engine failure) or an output that cannot be written (a read-only
or full disk: the line names the file and the system's reason) ends with one line and exit code 1.

Output layout, under `--output_path OUT`: `OUT/<model folder>/` (see `model_folder_name`) holds
`journal_<task>.jsonl` (the resumable journal), `results_<date>.json` and, with `--log_samples`,
`samples_<task>_<date>.jsonl` (both as lm-eval names and shapes them), `cache.sqlite3` (the response
cache, unless `--cache_dir` puts it elsewhere) and `harness.lock` (one run at a time). The cache, beside the
model's journals, serves every later run of the model into OUT where a journal does not (one deleted or refused
after a task's YAML changed, a task renamed or new asking the same prompts, a group and its member tasks, an
evaluation repeated after removing its samples); the journal spares a rerun of the same command every call.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from builders.core.contract import REQUIRED, option, switch
from harness.errors import CommandOptions, CommandParser, UserError, include_path_option
from harness.run.arguments import EvaluationOptions, parse_runs, run_parser, with_run

if TYPE_CHECKING:
    from harness.run.run_file import RunFile

SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {}
# lm-eval's `--tasks list` spellings (and lmms-eval's `--tasks list_groups` and kin): the sections of `harness ls`
# each prints.
LIST_TASKS = {
    "list": ("groups", "tags", "tasks", "configs"),
    "list_groups": ("groups",),
    "list_tags": ("tags",),
    "list_subtasks": ("tasks",),
    "list_configs": ("configs",),
}


def subcommand(name: str) -> Callable[[Callable[[list[str]], int]], Callable[[list[str]], int]]:
    def register(func: Callable[[list[str]], int]) -> Callable[[list[str]], int]:
        SUBCOMMANDS[name] = func
        return func

    return register


def list_tasks(sections: tuple[str, ...], include_paths: list[Path], pattern: str | None = None) -> int:
    """Print `sections` of the task index: `harness ls`, or `--tasks list|list_groups|list_tags|list_subtasks`; with
    `pattern`, only the names holding it (or matching it, as a glob)."""
    from harness.config.task_index import TaskIndex, natural_key

    index = TaskIndex(include_paths)
    found: dict[str, dict] = {
        "groups": index.groups,
        "tags": index.tags,
        "tasks": index.tasks,
        "configs": index.dataset_configs(),
    }
    width = max([len(n) for n in index.all_names()] + [10]) + 2

    def shown(items: dict) -> list:
        return sorted(((n, v) for n, v in items.items() if _matches(n, pattern)), key=lambda item: natural_key(item[0]))

    if pattern is not None:
        _check_filter(found, sections, pattern)

    if "groups" in sections:
        groups = shown(found["groups"])
        print(f"Groups ({len(groups)}):")
        for name, group in groups:
            members = ", ".join(group.task[:4]) + (f", ... (+{len(group.task) - 4})" if len(group.task) > 4 else "")
            print(f"  {name:<{width}}{len(group.task)} members: {members}")
    if "tags" in sections:
        tags = shown(found["tags"])
        print(f"Tags ({len(tags)}):")
        for name, members in tags:
            print(f"  {name:<{width}}{len(members)} tasks")
    if "tasks" in sections:
        tasks = shown(found["tasks"])
        print(f"Tasks ({len(tasks)}):")
        datasets = [
            config.dataset_path + (f"/{config.dataset_name}" if config.dataset_name else "") for _, config in tasks
        ]
        column = max([len(dataset) for dataset in datasets] + [0]) + 2  # the longest dataset still apart from its file
        for (name, config), dataset in zip(tasks, datasets, strict=True):
            print(f"  {name:<{width}}{dataset:<{column}}{config.source}")
    if "configs" in sections:
        configs = shown(found["configs"])
        print(f"Dataset configs ({len(configs)}; `--tasks NAME` runs every task of one):")
        for name, members in configs:
            print(f"  {name:<{width}}{', '.join(members)}")
    return 0


SECTION_NAMES = {"groups": "group", "tags": "tag", "tasks": "task", "configs": "dataset config"}


def _check_filter(found: Mapping[str, Mapping[str, object]], sections: tuple[str, ...], pattern: str) -> None:
    """A filter that keeps nothing is a mistake: one line naming the names closest to it (in any section of `found`,
    each a section's names)."""
    import difflib

    if any(_matches(name, pattern) for section in sections for name in found[section]):
        return
    kinds = [SECTION_NAMES[section] for section in sections]
    what = ", ".join(kinds[:-1]) + f" or {kinds[-1]}" if len(kinds) > 1 else kinds[0]
    elsewhere = [
        section for section in found if section not in sections and any(_matches(n, pattern) for n in found[section])
    ]
    if elsewhere:
        raise UserError(
            f"no {what} holds or matches {pattern!r}; {SECTION_NAMES[elsewhere[0]]} names do: "
            f"harness ls {elsewhere[0]} {pattern}"
        )
    names = sorted({name for section in sections for name in found[section]})
    close = difflib.get_close_matches(pattern, names, n=5, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}?" if close else " (harness ls lists them all)"
    raise UserError(f"no {what} holds or matches {pattern!r}{hint}")


def _matches(name: str, pattern: str | None) -> bool:
    from fnmatch import fnmatchcase

    return pattern is None or pattern in name or fnmatchcase(name, pattern)


@dataclass(frozen=True, kw_only=True)
class LsOptions(CommandOptions):
    words: list[str] = option(
        [],
        "one section only, and/or only the names holding FILTER (or matching it, a glob)",
        positional=True,
        nargs="*",
        metavar="[tasks|groups|tags|configs] [FILTER]",
    )
    include_path: tuple[Path, ...] = include_path_option("")


@subcommand("ls")
def ls_command(argv: list[str]) -> int:
    parser = CommandParser(
        prog="harness ls",
        description="List groups, tags, tasks and dataset configs.",
        epilog="Examples: harness ls WORD (every name holding it); harness ls tasks 'PREFIX_*_SUFFIX' (a glob); "
        "harness ls groups",
    )
    options = LsOptions.parse_command(parser, argv)
    words = list(options.words)
    # `harness ls tasks|groups|tags|configs`: one section of the index
    sections = (words.pop(0),) if words and words[0] in SECTION_NAMES else LIST_TASKS["list"]
    if len(words) > 1:
        parser.error(f"one filter at most, got {' '.join(words)!r}")
    return list_tasks(sections, list(options.include_path), words[0] if words else None)


@subcommand("models")
def models_command(argv: list[str]) -> int:
    from harness.config.task_index import TaskIndex
    from harness.models.aliases import index_benchmarks
    from harness.models.aliases.listing import listing
    from harness.models.registry import available_models

    parser = CommandParser(
        prog="harness models",
        description="List model backends and aliases, with the papers' models each benchmark declares.",
    )
    options = ModelsOptions.parse_command(parser, argv)
    if options.by_config:
        if options.tasks is not None or options.benchmark is not None:
            parser.error("--by_config lists model types: it takes a NAME filter, not --tasks or --benchmark")
        from harness.models.families.by_config import by_config_listing

        print(by_config_listing(options.name))
        return 0
    if options.tasks is not None:
        return _models_sends(parser, options)
    benchmarks = index_benchmarks(TaskIndex(list(options.include_path)))
    print(listing(available_models(), benchmarks, options.name, options.benchmark))
    return 0


@dataclass(frozen=True, kw_only=True)
class ModelsOptions(CommandOptions):
    name: str | None = option(
        None,
        "only the aliases and backends whose name holds NAME (an alias's own name: that one)",
        positional=True,
        nargs="?",
    )
    benchmark: str | None = option(
        None, "only B's paper models: the aliases that run one, and those without an alias", metavar="B"
    )
    include_path: tuple[Path, ...] = include_path_option("also read the benchmarks of these tasks", metavar="DIR")
    tasks: str | None = option(
        None, "with NAME: what --model NAME sends on these tasks, as a run resolves it", metavar="T[,T...]"
    )
    model_args: str = option("", "with --tasks: the run's --model_args", metavar="K=V,...")
    by_config: bool = switch(
        "every image-text-to-text model_type of the installed transformers (those holding NAME): its family module, "
        "if any, its processor, and whether a prompt is counted exactly before sending"
    )


def _models_sends(parser: CommandParser, args: ModelsOptions) -> int:
    """`harness models NAME --tasks ...`: the run's own resolution of --model NAME for those tasks, printed."""
    from harness.config.benchmark import declared_benchmark
    from harness.config.task_index import TaskIndex
    from harness.models.aliases import task_benchmarks
    from harness.models.aliases.listing import sends
    from harness.models.facts.args import parse_kv
    from harness.run.plan import known_model, resolve_model

    if args.name is None or args.tasks is None or args.benchmark is not None:
        parser.error("--tasks goes with a model NAME (harness models NAME --tasks T[,T...]), without --benchmark")
    given = parse_kv(args.model_args, "--model_args")
    known_model(args.name, given)
    index = TaskIndex(list(args.include_path))
    selection = index.select([n.strip() for n in args.tasks.split(",") if n.strip()])
    model = resolve_model(args.name, given, task_benchmarks(selection.tasks, index))
    tasks = [(task, declared_benchmark(index.tasks[task].benchmark)) for task in selection.tasks]
    print(sends(model.alias or model.name, model.backend, model.args, tasks))
    return 0


@subcommand("merge")
def merge_command(argv: list[str]) -> int:
    parser = CommandParser(
        prog="harness merge",
        description="Combine the --shard runs of one evaluation into the journals, judge decisions, sample logs and "
        "results an unsharded run writes, from the shards' files alone (nothing generated, no data read).",
        epilog="Example: harness merge results/ shard0/ shard1/ shard2/ (each shard ran with --shard i/3 "
        "--output_path shardI/)",
    )
    options = MergeOptions.parse_command(parser, argv)
    from harness.outputs.merge.runs import merge_shards

    return merge_shards(options.out, options.shard_dirs, argv, list(options.include_path))


@dataclass(frozen=True, kw_only=True)
class MergeOptions(CommandOptions):
    out: Path = option(
        REQUIRED, "output folder of the merged run (used like --output_path)", positional=True, parse=Path
    )
    shard_dirs: list[Path] = option(
        REQUIRED, "every shard's --output_path (or its model folder)", positional=True, parse=Path, nargs="+"
    )
    include_path: tuple[Path, ...] = include_path_option(
        "a folder of tasks the shards ran (with --include_path), whose code the merge may run to aggregate "
        "them; the --include_path a shard's results record is never read, since a results folder may "
        "come from elsewhere"
    )


@subcommand("compare")
def compare_command(argv: list[str]) -> int:
    from harness.outputs.compare.command import compare_main

    return compare_main(argv)


@subcommand("power")
def power_command(argv: list[str]) -> int:
    from harness.outputs.power.command import power_main

    return power_main(argv)


@subcommand("report")
def report_command(argv: list[str]) -> int:
    from harness.outputs.compare.command import ReportOptions, paired_section, run_to_run_arg
    from harness.outputs.report.report_md import write_report

    parser = CommandParser(prog="harness report", description="Write report.md and PNG plots for a results folder.")
    args = ReportOptions.parse_command(parser, argv)
    paired: list[str] = []
    measured = run_to_run_arg(args.run_to_run) if args.run_to_run else None
    if args.paired:
        folders = [args.results_dir, *([args.results_b] if args.results_b else [])]
        paired, from_pair = paired_section(folders, args, list(args.include_path), args.out or args.results_dir)
        measured = measured or from_pair
    else:  # a comparison's flags are refused here, not ignored: `--metrics exact_accc` would pass unread
        flags = {"a second results folder": args.results_b, "--models": args.models, "--tasks": args.tasks}
        if given := [flag for flag, value in {**flags, "--metrics": args.metrics}.items() if value]:
            raise UserError(
                f"{' and '.join(given)}: for a comparison of two runs; add --paired (report.md alone shows every "
                "model, task and metric of RESULTS_DIR)"
            )

    path = write_report(
        args.results_dir,
        args.out,
        figures=not args.no_figures,
        workers=args.jobs,
        include_paths=list(args.include_path),
        paired=paired,
        adjust="holm" if args.adjust == "holm" else "bh",
        run_to_run=measured,
    )
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


def entry() -> NoReturn:
    """The `harness` command (`[project.scripts]`, `python -m harness`): `main`, in the command's own process, which
    ends without the interpreter's teardown (`harness.run.process_exit`: 0.5-1.3 s after a run that imported torch)."""
    from harness.run.process_exit import run_as_the_command

    run_as_the_command(main)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from harness.redact import command_line_secrets, register, scrubbed_output

    register(command_line_secrets(argv))  # before any parsing: no message about a typo shows a key (argparse's too)
    with scrubbed_output():
        return _main(argv)


def _said(err: UserError) -> int:
    from harness.redact import scrub

    print(f"harness: error: {scrub(str(err))}", file=sys.stderr)
    return getattr(err, "exit_code", 2)


def _run(argv: list[str], run_file: RunFile | None) -> int:
    """The run `argv` asks for, with the flags of `run_file` (one run of its --config file) it does not give."""
    args = with_run(argv, run_file)
    if args.tasks in LIST_TASKS:
        return list_tasks(LIST_TASKS[args.tasks], list(args.include_path or []))
    if args.model is None:
        where = f" (on the command line or in {args.config})" if run_file else ""
        raise UserError(f"the following arguments are required: --model{where}")
    options = EvaluationOptions.from_namespace(args)
    from harness.run.execute import run_with_results

    return run_with_results(options, argv, run_file.record if run_file else None)[0]


def _main(argv: list[str]) -> int:
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        if argv and argv[0] == "run":
            argv = argv[1:]
        elif argv and not argv[0].startswith("-"):  # `harness lss`: a subcommand mistyped, not a run's flags
            raise UserError(unknown_command(argv[0]))
        if not argv:  # `harness` (or `harness run`) alone: its help, as lm-eval's `lm-eval` and `lm-eval run` print
            run_parser().print_help()
            return 0
        _, runs = parse_runs(argv)  # before any heavy import: `--help` stays instant; every run of --config checked
        if len(runs) > 1:  # lmms-eval's batch file
            from harness.run.run_file import run_each

            return run_each(runs, lambda run_file: _run(argv, run_file), _said)
        return _run(argv, runs[0] if runs else None)
    except UserError as err:
        return _said(err)
    except KeyboardInterrupt:  # Ctrl-C before a run has its plan (its tasks' data read), or of another command
        print("harness: interrupted", file=sys.stderr)
        return 130
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
