"""A build option, declared once on the idiom the harness shares (`builders.core.contract.options`): a dataclass field
whose default and type are the Python API's, and whose metadata makes its `builders build NAME` flag (`--` and the
field's name with dashes, its help, metavar, parser and choices) and the check every way of making the options runs
(a `BuildError` naming the flag, before any work).

    @dataclass(frozen=True, kw_only=True)
    class MyOptions(BenchmarkOptions):
        source: str = option("fixture", "where the release is: a folder, or 'fixture' (offline)")
        full: bool = switch("every row")
        limit: int | None = limit_option("rows per config (default: all)")
        seed: int = seed_option()
        text_tokenizer: str = text_tokenizer_option()

The flags follow the fields' order (the order `builders build NAME --help` lists them and the recorded build
command spells them out in). A field without metadata is the Python API's alone (an object the command line cannot
give). The options every build takes, whatever its benchmark (`--out`, `--configs`, `--image-storage`,
`--num-proc`, `--overwrite`, `--quiet`, `--dry-run`), are `RunOptions` and `add_run_flags`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from builders.core import contract
from builders.core.contract import add_flags, at_least, between, non_negative_integer, option, switch
from builders.core.errors import BuildError

__all__ = [
    "RUN_OPTIONS",
    "BenchmarkOptions",
    "RunOptions",
    "add_flags",
    "add_run_flags",
    "at_least",
    "between",
    "limit_option",
    "non_negative_integer",
    "option",
    "options_from_args",
    "run_options_from_args",
    "seed_option",
    "skip_bad_images_option",
    "switch",
    "text_tokenizer_option",
]


# ------------------------------------------------------------------------------- options several builds take


def text_tokenizer_option() -> Any:
    return option(
        "approx",
        "'approx' (offline, default) or 'hf:<tokenizer.json path or hub name>' for the rows' text "
        "token figures (text_tokens, ...; a paper's own tokenizer, e.g. Llama-2's, gives its counts)",
        metavar="SPEC",
    )


def seed_option() -> Any:
    return option(0, "sampling seed (default 0)", parse=int, check=non_negative_integer)


def limit_option(what: str) -> Any:
    """`--limit L`: at most L of what the benchmark says (`what`: the rest of the help after "at most L")."""
    return option(None, f"at most L {what}", metavar="L", parse=int, check=at_least(1))


def skip_bad_images_option() -> Any:
    return switch(
        "leave out the rows that show a damaged image (listed in the manifest; the build is flagged "
        "'limited') instead of stopping at the first damaged image",
    )


# ----------------------------------------------------------------------------------- a benchmark's options


@dataclass(frozen=True, kw_only=True)
class BenchmarkOptions(contract.DeclaredOptions):
    """The base of a benchmark's options dataclass: its values are read and checked as it is made, a bad one a
    `BuildError` naming its flag (`--memory-budget-mb`)."""

    error: ClassVar[Callable[[str], Exception]] = BuildError
    dashes: ClassVar[bool] = True

    @classmethod
    def choice_problem(cls, names: str, value: object, choices: tuple[str, ...]) -> str:
        return f"{names} must be one of {', '.join(choices)}, got {value!r}"


OptionsT = TypeVar("OptionsT", bound=BenchmarkOptions)


def options_from_args(options: type[OptionsT], args: argparse.Namespace) -> OptionsT:
    return options.from_namespace(args)


# ---------------------------------------------------------------------------------- every build's options


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How a build runs, whatever its benchmark (the Python API's names; `add_run_flags` makes their flags)."""

    image_storage: str | None = None  # embedded or shared; None: the benchmark's default
    num_proc: int = 2  # worker threads, for the benchmarks whose builds use them
    overwrite: bool = False  # replace the build in place, whatever it holds
    progress: bool = False  # the plan and progress bars on stderr
    dry_run: bool = False  # print the plan, write nothing
    command: list[str] | None = None  # the `builders build` argv to record in the manifest (`contract.BUILD_COMMAND`)
    shard_bytes: int | None = None  # a shard's size budget; None: the Parquet writer's (`parquet_writer.SHARD_BYTES`)

    def __post_init__(self) -> None:
        if self.num_proc < 1:
            raise BuildError(f"--num-proc must be at least 1, got {self.num_proc}")
        if self.image_storage is not None and self.image_storage not in contract.IMAGE_STORAGES:
            raise BuildError(
                f"image storage must be one of {', '.join(contract.IMAGE_STORAGES)}, got {self.image_storage!r}"
            )


RUN_OPTIONS = frozenset(item.name for item in fields(RunOptions))


def add_run_flags(parser: argparse.ArgumentParser, default_image_storage: str, config_count: int) -> None:
    """The flags of every build (`--out`, `--configs` and the `RunOptions`)."""
    common = parser.add_argument_group("options of every build")
    common.add_argument(
        "--out", required=True, metavar="DIR", help="output folder; the dataset goes to DIR/<benchmark>"
    )
    common.add_argument(
        "--configs",
        nargs="+",
        metavar="NAME",
        help=f"configs to build, comma- or space-separated (default: all {config_count}; see `builders list`)",
    )
    common.add_argument(
        "--image-storage",
        choices=contract.IMAGE_STORAGES,
        default=default_image_storage,
        help="embedded: every row holds its images' bytes; shared: each distinct image is stored once, in the "
        f"'{contract.IMAGE_TABLE_CONFIG}' config, and rows name theirs by sha256 (default: {default_image_storage})",
    )
    common.add_argument(
        "--num-proc", type=int, default=RunOptions.num_proc, help=f"worker threads (default {RunOptions.num_proc})"
    )
    common.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUT/<benchmark> with exactly these configs, whatever it holds (without it, a folder holding the "
        "same build with other configs gets the missing ones added, and a different build is an error)",
    )
    common.add_argument("--quiet", action="store_true", help="no plan, no progress bars")
    common.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (rows, estimated size and time) and stop; nothing is written",
    )


def run_options_from_args(args: argparse.Namespace, command: list[str]) -> RunOptions:
    return RunOptions(
        image_storage=args.image_storage,
        num_proc=args.num_proc,
        overwrite=args.overwrite,
        progress=not args.quiet,
        dry_run=args.dry_run,
        command=command,
    )
