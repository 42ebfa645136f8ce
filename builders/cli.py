"""`builders`: build benchmark datasets and push them to the Hugging Face Hub.

    builders list
    builders build mmneedle --source synthetic --limit 4 --out data/
    builders build mmneedle --configs m10_n2_k1 --out data/   # adds a config to the build already there
    builders build mmneedle --help          # the options every build takes, then MMNeedle's own
    builders push data/mmneedle --repo ORG/mmneedle --tag v1.0.0 --dry-run

Benchmarks are the packages under `builders/` (`builders.core.benchmark`); nothing here names one.
User mistakes end with exit code 2 and one line, `builders: error: ...`, naming the file or value (argparse's mistakes
too, whichever command: the line names its `--help`, where the usage is); `builders` (or `builders build`) alone
prints its help.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from builders.core import contract
from builders.core.benchmark import BuilderSpec, benchmark_names, load_benchmark, select_configs
from builders.core.contract import REQUIRED, add_flags, option, switch
from builders.core.errors import BuildError
from builders.core.options import EVERY_BUILD, BenchmarkOptions, BuildOptions

PREFIX = "builders: error: "  # every error line of every command, as `harness: error: ` for the harness


class CommandParser(contract.OneLineParser):
    """The parser of a `builders` command: a mistake is a `BuildError`, one line `builders: error: REASON` naming the
    command's `--help`, not argparse's usage before the reason."""

    mistake = BuildError


@dataclass(frozen=True, kw_only=True)
class ListFlags(BenchmarkOptions):
    benchmark: str | None = option(
        None, "only this benchmark's configs", positional=True, nargs="?", metavar="BENCHMARK"
    )


@dataclass(frozen=True, kw_only=True)
class BuildFlags(BenchmarkOptions):
    benchmark: str = option(REQUIRED, "one of: %(choices)s", positional=True)  # its choices: the benchmarks found
    options: list[str] = option([], "the options of that benchmark's build", positional=True, nargs=argparse.REMAINDER)


@dataclass(frozen=True, kw_only=True)
class PushFlags(BenchmarkOptions):
    folder: str = option(REQUIRED, "a built dataset folder, e.g. data/mmneedle", positional=True)
    repo: str = option(REQUIRED, "Hub dataset repository", metavar="ORG/NAME")
    tag: str = option(REQUIRED, "semantic version tag for the upload's commit", metavar="vX.Y.Z")
    private: bool = switch("create the repository as private")
    dry_run: bool = switch("list what would be uploaded; no network")
    token: str | None = option(None, "Hub token (default: the logged-in token or HF_TOKEN)")


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """`builders`' parser, and its `build` command's (whose help `builders build` alone prints)."""
    parser = CommandParser(prog="builders", description="Build benchmark datasets and push them to the Hub.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,build,push}")
    listing = commands.add_parser(
        "list",
        help="list the benchmarks and their configs",
        description="List the benchmarks and their configs: all of them, or one benchmark's.",
    )
    add_flags(listing, ListFlags)
    build = commands.add_parser(
        "build",
        help="build a benchmark into OUT/<benchmark>",
        description="Build a benchmark into OUT/<benchmark>, a folder laid out like a Hub dataset repo "
        "(load it with datasets.load_dataset(folder, config)). `builders build NAME --help` lists NAME's options.",
    )
    add_flags(build, BuildFlags, late={"benchmark": {"choices": benchmark_names()}})
    add_flags(commands.add_parser("push", help="upload a built folder to the Hub and tag the commit"), PushFlags)
    return parser, build


def build_parser(benchmark: BuilderSpec) -> argparse.ArgumentParser:
    """`builders build NAME`'s options: those every build takes, then the benchmark's own (its options' fields)."""
    parser = CommandParser(prog=f"builders build {benchmark.name}", description=benchmark.summary)
    count = len(benchmark.configs())
    late = {
        "configs": {"help": f"configs to build, comma- or space-separated (default: all {count}; see `builders list`)"},
        "image_storage": {"default": benchmark.default_image_storage},
    }
    add_flags(parser, BuildOptions, [EVERY_BUILD], late)
    add_flags(parser.add_argument_group(f"options of {benchmark.name}"), benchmark.build_class.Options)
    return parser


def _list(only: str | None = None) -> None:
    names = benchmark_names()
    if only is not None and only not in names:
        close = difflib.get_close_matches(only, names, n=3, cutoff=0.6)
        hint = f"; did you mean {' / '.join(close)}?" if close else ""
        raise BuildError(f"unknown benchmark {only!r}{hint} (the benchmarks are {', '.join(names)})")
    for name in [only] if only else names:
        benchmark = load_benchmark(name)
        configs = benchmark.configs()
        print(f"{name}: {len(configs)} configs ({benchmark.summary})")
        width = max((len(c) for c in configs), default=0)
        for config, description in configs.items():
            print(f"  {config:<{max(width, 10)}}  {description}")


# Options that say where and how fast to build, not what: left out of the recorded build command.
NOT_IN_BUILD_COMMAND = frozenset({"help", "out", "configs", "overwrite", "quiet", "num_proc", "dry_run"})


def recorded_command(
    name: str, parser: argparse.ArgumentParser, args: argparse.Namespace, options: type[BenchmarkOptions]
) -> list[str]:
    """The argv that reproduces what this build holds: `builders build NAME` and every option that decides
    the output and is not at its default (a declared option's field default), spelled out in full (whatever
    abbreviation the user typed)."""
    defaults = {item.name: contract.default_of(item) for item in contract.declared(options)}
    argv = ["builders", "build", name]
    for action in parser._actions:  # argparse keeps no public list of a parser's options
        if not action.option_strings or action.dest in NOT_IN_BUILD_COMMAND:
            continue
        value = getattr(args, action.dest, action.default)
        if value == defaults.get(action.dest, action.default) or value is None:
            continue
        option = max(action.option_strings, key=len)
        if isinstance(action, argparse._StoreTrueAction):
            argv.append(option)
        else:
            argv += [option, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return argv


def _build(name: str, argv: list[str]) -> None:
    from builders.core.staging import read_manifest

    benchmark = load_benchmark(name)
    parser = build_parser(benchmark)
    args = parser.parse_args(argv)
    command = recorded_command(name, parser, args, benchmark.build_class.Options)
    run = replace(BuildOptions.from_namespace(args), progress=not args.quiet, command=command)
    configs = select_configs(args.configs, benchmark.configs(), benchmark.accepts_config) if args.configs else None
    options = benchmark.build_class.Options.from_namespace(args)
    target = Path(args.out) / name
    before = read_manifest(target) if target.is_dir() and not args.overwrite else None
    path = benchmark.build_class(options, configs, run).run(args.out)
    if path is None:  # --dry-run: the plan was the output
        return
    manifest = read_manifest(path)
    if manifest is None:
        raise BuildError(f"{path}: the build wrote no {contract.MANIFEST_NAME}")
    unchanged = _say_what_changed(before, manifest, path)
    for config, info in manifest["configs"].items():
        print(f"{config}: {benchmark.describe_config(config, info)}, {info['num_bytes']:,} bytes")
    table = manifest.get("image_table")
    if table:
        print(f"{contract.IMAGE_TABLE_CONFIG}: {table['images']} distinct images, {table['num_bytes']:,} bytes")
    print(f"{'unchanged' if unchanged else 'built'} {path} (content {manifest.get('content_hash')})")
    first = next(iter(manifest["configs"]), None)
    if first is not None:
        print(f'load with: datasets.load_dataset("{path.resolve()}", "{first}", split="test")')


def _say_what_changed(before: contract.BuildManifest | None, after: contract.BuildManifest, path: Path) -> bool:
    """Say whether the build found the same build in place and added its missing configs to it; True when
    it had nothing to do."""
    if not before or before.get("request", {}).get("configs") is None:
        return False
    old, new = list(before["configs"]), list(after["configs"])
    if before == after:
        print(
            f"nothing to build: {path} already holds these configs (pass --overwrite to rebuild them)", file=sys.stderr
        )
        return True
    if set(old) < set(new):
        added = [c for c in new if c not in old]
        print(
            f"added {', '.join(added)} to the build in {path}; kept its {len(old)} other config(s) as they were",
            file=sys.stderr,
        )
    return False


def describe_os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    what = exc.strerror or str(exc)
    hint = {
        errno.ENOSPC: " (the disk is full)",
        errno.EROFS: " (a read-only file system)",
        errno.EFBIG: " (over the file size limit)",
        errno.EDQUOT: " (over the disk quota)",
    }.get(exc.errno or 0, "")
    return f"{where}{what}{hint}; the build stopped and left nothing that looks like a complete dataset"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, build = _parser()
    try:
        if argv in ([], ["build"]):  # nothing to do but learn how: the help, as `harness` alone prints its own
            (build if argv else parser).print_help()
            return 0
        args = parser.parse_args(argv)
        if args.command == "list":
            _list(args.benchmark)
        elif args.command == "build":
            _build(args.benchmark, args.options)
        elif args.command == "push":
            from builders.core.push import push

            push(args.folder, args.repo, args.tag, private=args.private, dry_run=args.dry_run, token=args.token)
    except BuildError as exc:
        print(f"{PREFIX}{exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `builders list | head`: the reader left; not an error (an OSError: caught first)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:  # a read-only or full disk, a folder without write permission: one line, not a traceback
        print(f"{PREFIX}{describe_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was left that looks like a complete dataset", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
