"""The one build every benchmark runs: a benchmark supplies its source, its plan and its rows; the order of the
steps, the work folder and lock, the plan printed before long work, the dry run, extending a build in place and
the publish are here, once (the way `datasets`' `GeneratorBasedBuilder` asks a dataset only for its info, splits
and examples).

    class MyBuild(BenchmarkBuild):
        info = INFO                                   # a `BuilderInfo`
        config_order = list(CONFIGS)

        def open_source(self, work): ...               # read the source (a fixture goes into `work`): OpenedSource
        def request(self): ...                         # everything that decides the output, "configs" included
        def plan(self, build): ...                     # plan the rows of `build.pending` (no pixels)
        def estimate(self, kept): ...                  # a `BuildEstimate` of the planned work
        def write(self, build): ...                    # write each pending config; returns the manifest's stats

    path = MyBuild(...).run(out_dir, image_storage=..., overwrite=..., command=..., progress=..., dry_run=...)

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
from typing import Any

from builders.core import contract
from builders.core.base_build import CONFIGS_KEY
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.estimate import BuildEstimate, print_plan
from builders.core.parquet_writer import SHARD_BYTES
from builders.core.work_folder import build_lock, work_folder


@dataclass(frozen=True)
class OpenedSource:
    """What an opened source tells the build: where it was read from (`inputs`, recorded in the manifest, not
    compared), why scores on it are not the paper's (`caveats`: `synthetic`, ...) and the card's fields that
    depend on it (its licence)."""

    inputs: dict[str, Any] = field(default_factory=dict)
    caveats: dict[str, str] = field(default_factory=dict)
    card: dict[str, Any] = field(default_factory=dict)


class BenchmarkBuild:
    """One benchmark's build: its options (set by the subclass's constructor) and its parts, as hooks."""

    info: BuilderInfo
    config_order: Sequence[str]  # every config in canonical order: the manifest and card list them so
    workers = 1  # the worker threads of the long stages, as the plan states them
    # A work folder (`builders.core.work_folder`) for the offline fixture and spools; without one the build holds
    # only the lock, from the staging on (its spills live in the staging folder).
    uses_work_folder = True

    # ------------------------------------------------------------------------------------- the parts

    def open_source(self, work: Path | None) -> OpenedSource:
        """Open the source (an offline fixture is written into `work`) and say what it tells the build; user
        mistakes raise `BuildError`. Runs first, inside the work folder."""
        raise NotImplementedError

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
        """Write every config of `build.pending` (`build.config_writer`, `build.add_config`); returns the stats
        for the manifest. Runs inside the staging folder, only when something is pending."""
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

    # --------------------------------------------------------------------------------------- the build

    def run(self, out_dir: str | os.PathLike[str], *, image_storage: str = contract.EMBEDDED, overwrite: bool = False,
            shard_bytes: int = SHARD_BYTES, command: list[str] | None = None, progress: bool = False,
            dry_run: bool = False) -> Path | None:
        """Build into `out_dir/<info.name>` and return that folder; with `dry_run`, print the plan and return None.
        A build already there with the same request gets the missing configs added (unless `overwrite`)."""
        out = Path(out_dir)
        with work_folder(out, self.info.name) if self.uses_work_folder else nullcontext(None) as work:
            try:
                source = self.open_source(work)
                build = DatasetBuild(out, self.info, self.request(), inputs=source.inputs, image_storage=image_storage,
                                     overwrite=overwrite, shard_bytes=shard_bytes, config_order=list(self.config_order),
                                     command=command, caveats=source.caveats, card=source.card)
                build.find_base()
                self.plan(build)
                if progress or dry_run:
                    self._print_plan(build)
                if dry_run:
                    return None
                with nullcontext() if self.uses_work_folder else build_lock(out, self.info.name), build:
                    stats = self.write(build) if build.pending else {}
                    self.after_write(build)
                    return build.publish(stats=stats, card_context=self.card_context())
            finally:
                self.close()

    def _print_plan(self, build: DatasetBuild) -> None:
        estimate = self.estimate(len(build.base.configs) if build.base is not None else 0) if build.pending else None
        if estimate is None:
            print(f"plan: nothing to build; {build.target} already holds {', '.join(self.held_configs(build))}",
                  file=sys.stderr)
        else:
            print_plan(estimate, self.workers)

