"""A build option, declared once: a dataclass field whose default and type are the Python API's, and whose metadata
makes its `builders build NAME` flag (`--` and the field's name with dashes, its help, metavar and choices) and
the check every way of making the options runs (a `BuildError` naming the flag, before any work).

    @dataclass(frozen=True, kw_only=True)
    class MyOptions(BenchmarkOptions):
        source: str = option("fixture", "where the release is: a folder, or 'fixture' (offline)")
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
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, TypeVar

from builders.core import contract
from builders.core.errors import BuildError

FLAG = "flag"  # the field metadata key of an option's flag
Check = Callable[[Any], str | None]  # a value -> what is wrong with it (said after the flag's name), or None


@dataclass(frozen=True)
class Flag:
    """How an option shows on the command line; `check` runs on every value but None ("not given")."""

    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    check: Check | None = None


def option(
    default: object,
    help: str,
    *,
    metavar: str | None = None,
    choices: Sequence[str] | None = None,
    check: Check | None = None,
) -> Any:
    """A dataclass field that is also a flag: a bool field is a switch (`--full`), a list field takes one or more
    values and may be repeated (`--source A B --source C`), any other field one value of its type."""
    return field(default=default, metadata={FLAG: Flag(help, metavar, tuple(choices) if choices else None, check)})


# ------------------------------------------------------------------------------------------------ checks


def at_least(minimum: int, unit: str = "") -> Check:
    return lambda value: f"must be at least {minimum}{unit}, got {value}" if value < minimum else None


def between(low: float, high: float) -> Check:
    return lambda value: None if low <= value <= high else f"must be between {low} and {high}, got {value}"


def non_negative_integer(value: int) -> str | None:
    return f"must be a non-negative integer, got {value}" if value < 0 else None


# ------------------------------------------------------------------------------- options several builds take


def text_tokenizer_option() -> Any:
    return option(
        "approx",
        "'approx' (offline, default) or 'hf:<tokenizer.json path or hub name>' for the rows' text "
        "token figures (text_tokens, ...; a paper's own tokenizer, e.g. Llama-2's, gives its counts)",
        metavar="SPEC",
    )


def seed_option() -> Any:
    return option(0, "sampling seed (default 0)", check=non_negative_integer)


def limit_option(what: str) -> Any:
    """`--limit L`: at most L of what the benchmark says (`what`: the rest of the help after "at most L")."""
    return option(None, f"at most L {what}", metavar="L", check=at_least(1))


def skip_bad_images_option() -> Any:
    return option(
        False,
        "leave out the rows that show a damaged image (listed in the manifest; the build is flagged "
        "'limited') instead of stopping at the first damaged image",
    )


# ----------------------------------------------------------------------------------- a benchmark's options


@dataclass(frozen=True, kw_only=True)
class BenchmarkOptions:
    """The base of a benchmark's options dataclass: its values are checked as it is made."""

    def __post_init__(self) -> None:
        for item in fields(self):
            flag, value = item.metadata.get(FLAG), getattr(self, item.name)
            if flag is None or value is None:
                continue
            if flag.choices is not None and value not in flag.choices:
                raise BuildError(f"{flag_name(item)} must be one of {', '.join(flag.choices)}, got {value!r}")
            problem = flag.check(value) if flag.check is not None else None
            if problem is not None:
                raise BuildError(f"{flag_name(item)} {problem}")


OptionsT = TypeVar("OptionsT", bound=BenchmarkOptions)


def flag_name(item: Field[Any]) -> str:
    return "--" + item.name.replace("_", "-")


def _flag_kind(annotation: Any) -> tuple[type, bool]:
    """(the type a flag's text is parsed to, whether it takes a list) from its field's annotation."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next(_flag_kind(arg) for arg in typing.get_args(annotation) if arg is not type(None))
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True
    return annotation, False


def _parser(kind: type) -> dict[str, Any]:
    """argparse's `type=` for a field's type: none for text, which argparse keeps as it is."""
    return {} if kind is str else {"type": kind}


def add_flags(group: argparse._ActionsContainer, options: type[BenchmarkOptions]) -> None:
    """The flags of an options dataclass, in its fields' order."""
    hints = typing.get_type_hints(options)
    for item in fields(options):
        flag = item.metadata.get(FLAG)
        if flag is None:
            continue
        kind, many = _flag_kind(hints[item.name])
        default = None if item.default is MISSING else item.default
        if kind is bool:
            group.add_argument(flag_name(item), action="store_true", help=flag.help)
        elif many:
            group.add_argument(
                flag_name(item), action="extend", nargs="+", **_parser(kind), metavar=flag.metavar, help=flag.help
            )
        else:
            group.add_argument(
                flag_name(item),
                **_parser(kind),
                default=default,
                metavar=flag.metavar,
                choices=flag.choices,
                help=flag.help,
            )


def options_from_args(options: type[OptionsT], args: argparse.Namespace) -> OptionsT:
    return options(**{item.name: getattr(args, item.name) for item in fields(options) if FLAG in item.metadata})


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
