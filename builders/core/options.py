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
`--num-proc`, `--overwrite`, `--quiet`, `--dry-run`), are `BuildOptions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from builders.core import contract
from builders.core.contract import at_least, non_negative_integer, option, switch
from builders.core.errors import BuildError

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


# ---------------------------------------------------------------------------------- every build's options


EVERY_BUILD = "options of every build"  # their `--help` group


@dataclass(frozen=True, kw_only=True)
class BuildOptions(BenchmarkOptions):
    """How a build runs, whatever its benchmark: the flags of every build (`build_parser`), and the Python API's
    keywords beside a benchmark's options. `--out`, `--configs` and `--quiet` are the command's alone (the API takes
    the folder and the configs as arguments, and `progress`)."""

    out: str | None = option(
        None, "output folder; the dataset goes to DIR/<benchmark>", group=EVERY_BUILD, metavar="DIR", required=True
    )
    configs: list[str] | None = option(
        None, "configs to build, comma- or space-separated", group=EVERY_BUILD, metavar="NAME", nargs="+"
    )
    image_storage: str | None = option(  # None: the benchmark's default
        None,
        "embedded: every row holds its images' bytes; shared: each distinct image is stored once, in the "
        f"'{contract.IMAGE_TABLE_CONFIG}' config, and rows name theirs by sha256 (default: %(default)s)",
        group=EVERY_BUILD,
        choices=contract.IMAGE_STORAGES,
    )
    num_proc: int = option(2, "worker threads (default 2)", group=EVERY_BUILD, parse=int, check=at_least(1))
    overwrite: bool = switch(
        "replace OUT/<benchmark> with exactly these configs, whatever it holds (without it, a folder holding the "
        "same build with other configs gets the missing ones added, and a different build is an error)",
        group=EVERY_BUILD,
    )
    quiet: bool = switch("no plan, no progress bars", group=EVERY_BUILD)
    dry_run: bool = switch(
        "print the plan (rows, estimated size and time) and stop; nothing is written", group=EVERY_BUILD
    )
    progress: bool = False  # the plan and progress bars on stderr (the command's: not --quiet)
    command: list[str] | None = None  # the `builders build` argv to record in the manifest (`contract.BUILD_COMMAND`)
    shard_bytes: int | None = None  # a shard's size budget; None: the Parquet writer's (`parquet_writer.SHARD_BYTES`)


COMMAND_ONLY = {"out", "configs", "quiet"}  # the Python API takes the folder and configs as arguments, and `progress`
BUILD_OPTIONS = frozenset(item.name for item in fields(BuildOptions)) - COMMAND_ONLY
