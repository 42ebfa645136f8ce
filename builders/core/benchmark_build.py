"""The one build every benchmark runs: a benchmark supplies its options, its source, its plan and its rows; the order
of the steps, the work folder and lock, the plan printed before long work, the dry run, extending a build in place,
the contract's columns of every row and how images are stored, and the publish are here, once (the way `datasets`'
`GeneratorBasedBuilder` asks a dataset only for its info, splits and examples).

    class MyBuild(BenchmarkBuild[MyOptions]):
        info = INFO                                   # a `BuilderInfo`
        Options = MyOptions                           # its fields make `builders build mybench`'s flags
        config_order = list(CONFIGS)

        def features(self, image_storage): ...        # the rows' columns (`contract_rows.row_features`)
        def open_source(self, work): ...               # read the source (a fixture goes into `work`): OpenedSource
        def request(self): ...                         # everything that decides the output, "configs" included
        def plan(self, build): ...                     # plan the rows of `build.pending` (no pixels)
        def estimate(self, kept): ...                  # a `BuildEstimate` of the planned work
        def write(self, build): ...                    # write each pending config (`self.rows`); the manifest's stats

    path = MyBuild.build(out_dir, configs, limit=3, image_storage="shared")   # any field of MyOptions or BuildOptions

`run` opens the source, makes the `DatasetBuild` (which finds the build in place that this one extends, and so
the configs still to write: `build.pending`), asks for the plan, prints its estimate with `progress` or
`dry_run` (and stops there for `dry_run`), writes the pending configs inside the staging folder and publishes.
The other hooks have defaults that do nothing; override the ones whose names say what the benchmark has.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from datasets import Features

from builders.core import contract
from builders.core.base_build import CONFIGS_KEY
from builders.core.contract_rows import RowWriter
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.estimate import BuildEstimate, print_plan
from builders.core.options import BUILD_OPTIONS, BenchmarkOptions, BuildOptions
from builders.core.parquet_writer import SHARD_BYTES
from builders.core.tokens import TextTokenCounter, make_text_counter
from builders.core.work_folder import build_lock, work_folder

OptionsT = TypeVar("OptionsT", bound=BenchmarkOptions)


@dataclass(frozen=True)
class OpenedSource:
    """What an opened source tells the build: where it was read from (`inputs`, recorded in the manifest, not
    compared), why scores on it are not the paper's (`caveats`: `synthetic`, ...) and the card's fields that
    depend on it (its licence)."""

    inputs: dict[str, Any] = field(default_factory=dict)
    caveats: dict[str, str] = field(default_factory=dict)
    card: dict[str, Any] = field(default_factory=dict)


class BenchmarkBuild(Generic[OptionsT]):
    """One benchmark's build: its options (`self.options`, an instance of `Options`), the configs asked for, how it
    runs (`self.run_options`), and its parts, as hooks."""

    info: ClassVar[BuilderInfo]
    Options: ClassVar[type[BenchmarkOptions]]  # the options dataclass: its fields make the benchmark's flags
    config_order: ClassVar[Sequence[str]]  # every config in canonical order: the manifest and card list them so
    default_image_storage: ClassVar[str] = contract.EMBEDDED
    parallel: ClassVar[bool] = False  # its long stages run on `num_proc` worker threads (`self.workers`)
    # A work folder (`builders.core.work_folder`) for the offline fixture and spools; without one the build holds
    # only the lock, from the staging on (its spills live in the staging folder).
    uses_work_folder: ClassVar[bool] = True

    def __init__(
        self, options: OptionsT, configs: Sequence[str] | None = None, run: BuildOptions | None = None
    ) -> None:
        """`configs`: the names asked for (None: the benchmark's default set)."""
        self.options = options
        self.asked_configs = list(configs) if configs is not None else None
        self.run_options = run or BuildOptions()
        self.image_storage = self.run_options.image_storage or self.default_image_storage
        self.progress = self.run_options.progress
        self.workers = self.run_options.num_proc if self.parallel else 1  # as the plan states them
        self.counter: TextTokenCounter = make_text_counter(getattr(options, "text_tokenizer", "approx"))

    @classmethod
    def build(
        cls, out_dir: str | os.PathLike[str], configs: Sequence[str] | None = None, **options: Any
    ) -> Path | None:
        """Build `configs` (None: the default set) into `out_dir/<info.name>` and return that folder (None with
        `dry_run`); `options`: the fields of `cls.Options` and of `BuildOptions`, by name."""
        run = BuildOptions(**{name: options.pop(name) for name in list(options) if name in BUILD_OPTIONS})
        # `Options` is the subclass's OptionsT, which a ClassVar cannot name (mypy: a plain BenchmarkOptions)
        return cls(cls.Options(**options), configs, run).run(out_dir)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------------- the parts

    def open_source(self, work: Path | None) -> OpenedSource:
        """Open the source (an offline fixture is written into `work`) and say what it tells the build; user
        mistakes raise `BuildError`. Runs first, inside the work folder. Default: no source (a generated dataset)."""
        return OpenedSource()

    def request(self) -> dict[str, Any]:
        """What decides the output (`configs`: the requested names): a folder built with another request is
        not replaced silently, and one with the same request and other configs is extended."""
        raise NotImplementedError

    def plan(self, build: DatasetBuild) -> None:
        """Plan the rows of `build.pending` (no pixels); flag what the plan already shows (`build.add_caveat`)."""
        raise NotImplementedError

    def estimate(self, kept: int) -> BuildEstimate | None:
        """The planned work's size and time (`kept`: configs carried over from the build in place); None when
        the plan holds nothing to write."""
        raise NotImplementedError

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        """Write every config of `build.pending` (`self.rows`, `build.add_config`); returns the stats for the
        manifest. Runs inside the staging folder, only when something is pending."""
        raise NotImplementedError

    # ------------------------------------------------------------ what a benchmark may add (defaults: nothing)

    def after_write(self, build: DatasetBuild) -> None:
        """Flag what only writing showed (`build.add_caveat`), before the publish."""

    def card_context(self) -> dict[str, Any]:
        """Values for the card template (`dataset_cards/<name>/card.md.jinja`)."""
        return {}

    def held_configs(self, build: DatasetBuild) -> list[str]:
        """The configs a plan with nothing to write names as already built."""
        return list(build.request[CONFIGS_KEY])

    def close(self) -> None:
        """Release what `open_source` and `plan` opened (runs however the build ends)."""

    def needs_work_folder(self) -> bool:
        """Whether this build, with its options, reads its source through a work folder (`uses_work_folder`)."""
        return self.uses_work_folder

    # --------------------------------------------------------------------------------------- the rows

    def features(self, image_storage: str) -> Features:
        """The columns of every config's rows, the contract's among them (`contract_rows.row_features`)."""
        raise NotImplementedError

    def rows(self, build: DatasetBuild, config: str) -> RowWriter:
        """The writer of one config's rows, which fills the contract's columns (`contract_rows.RowWriter`)."""
        return RowWriter(build, config, self.features(build.image_storage), self.counter)

    # --------------------------------------------------------------------------------------- the build

    def run(self, out_dir: str | os.PathLike[str]) -> Path | None:
        """Build into `out_dir/<info.name>` and return that folder; with `dry_run`, print the plan and return None.
        A build already there with the same request gets the missing configs added (unless `overwrite`)."""
        out, run = Path(out_dir), self.run_options
        uses_work_folder = self.needs_work_folder()
        with work_folder(out, self.info.name) if uses_work_folder else nullcontext(None) as work:
            try:
                source = self.open_source(work)
                build = DatasetBuild(
                    out,
                    self.info,
                    self.request(),
                    inputs=source.inputs,
                    image_storage=self.image_storage,
                    overwrite=run.overwrite,
                    shard_bytes=SHARD_BYTES if run.shard_bytes is None else run.shard_bytes,
                    config_order=list(self.config_order),
                    command=run.command,
                    caveats=source.caveats,
                    card=source.card,
                )
                build.find_base()
                self.plan(build)
                if run.progress or run.dry_run:
                    self._print_plan(build)
                if run.dry_run:
                    return None
                with nullcontext() if uses_work_folder else build_lock(out, self.info.name), build:
                    stats = self.write(build) if build.pending else {}
                    self.after_write(build)
                    return build.publish(stats=stats, card_context=self.card_context())
            finally:
                self.close()

    def _print_plan(self, build: DatasetBuild) -> None:
        estimate = self.estimate(len(build.base.configs) if build.base is not None else 0) if build.pending else None
        if estimate is None:
            print(
                f"plan: nothing to build; {build.target} already holds {', '.join(self.held_configs(build))}",
                file=sys.stderr,
            )
        else:
            print_plan(estimate, self.workers)
