"""What `builders` needs of a benchmark, and where it finds them.

A benchmark is a package `builders/<name>/` whose `__init__` exposes `BENCHMARK`, an object with the
attributes and methods of `Benchmark`. Packages are found by listing the `builders` folder (nothing is
imported until a benchmark is asked for), the way `datasets` keeps its packaged builders and lm-eval
its models: adding a benchmark adds a folder and edits nothing here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from builders.core import contract
from builders.core.errors import BuildError

NOT_BENCHMARKS = frozenset({"core"})


@dataclass(frozen=True)
class BuildOptions:
    """The options every benchmark's build takes (its own come in its `argparse.Namespace`)."""

    out_dir: Path
    configs: list[str] | None = None  # known config names, in canonical order; None = every config
    image_storage: str = contract.EMBEDDED
    num_proc: int = 2
    overwrite: bool = False
    progress: bool = True  # the plan and progress bars on stderr
    dry_run: bool = False  # print the plan, build nothing, return None
    command: list[str] | None = None  # the `builders build` argv to record in the manifest (`contract.BUILD_COMMAND`)


@runtime_checkable
class Benchmark(Protocol):
    name: str  # the folder name under OUT/ and in `builders build NAME`
    summary: str  # one line for `builders list`
    default_image_storage: str

    def configs(self) -> Mapping[str, str]:
        """Config name -> one line describing it, in canonical order."""
        ...

    def features(self, config: str, image_storage: str) -> Any:
        """The `datasets.Features` of a config's rows (they include the contract's columns)."""
        ...

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the benchmark's own options to `builders build NAME`."""
        ...

    def build(self, options: BuildOptions, args: argparse.Namespace) -> Path | None:
        """Build into `options.out_dir/<name>` and return that folder (None for `options.dry_run`, which only
        prints the plan); user mistakes raise `BuildError`."""
        ...

    def describe_config(self, name: str, info: Mapping[str, Any]) -> str:
        """What `builders build` prints about a built config, from its manifest entry (e.g. "4 rows")."""
        ...


def positive_int(text: str) -> int:
    """An argparse `type` for counts and sizes that must be at least 1: anything else is a usage error (exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def check_at_least(option: str, value: int | float | None, minimum: int, unit: str = "") -> None:
    """A build option given to the Python API (the CLI's `positive_int` catches most first): below `minimum` is a
    user mistake naming the option; None is "not given"."""
    if value is not None and value < minimum:
        raise BuildError(f"{option} must be at least {minimum}{unit}, got {value}")


def check_seed(seed: int) -> None:
    if seed < 0:
        raise BuildError(f"--seed must be a non-negative integer, got {seed}")


def select_configs(names: list[str] | None, known: Mapping[str, Any] | list[str],
                   accepts: Callable[[str], bool] | None = None) -> list[str]:
    """Config names as a user gives them (comma- or space-separated, any case; None, [] or 'all' = every
    config) -> the selected names in canonical order; unknown names are a `BuildError` listing the valid ones.

    `accepts` (a benchmark's optional `accepts_config`) admits names outside `known`: parametric configs such
    as LoCoVQA's `okvqa_cmp_7` (any context length); they follow the known ones, in the order given."""
    if not names:
        return list(known)
    wanted = [part.strip().lower() for item in names for part in item.split(",") if part.strip()]
    if "all" in wanted:
        return list(known)
    extra = [name for name in dict.fromkeys(wanted) if name not in known and accepts is not None and accepts(name)]
    unknown = [name for name in wanted if name not in known and name not in extra]
    if unknown:
        raise BuildError(f"unknown config(s) {', '.join(unknown)}; valid: {', '.join(known)}")
    return [name for name in known if name in wanted] + extra


def benchmark_names() -> list[str]:
    """The benchmarks in the `builders` package, from its folder listing (no import)."""
    import builders

    return sorted(m.name for m in pkgutil.iter_modules(builders.__path__) if m.ispkg and m.name not in NOT_BENCHMARKS)


def load_benchmark(name: str) -> Benchmark:
    names = benchmark_names()
    if name not in names:
        raise BuildError(f"unknown benchmark {name!r}; known: {', '.join(names)}")
    module = importlib.import_module(f"builders.{name}")
    benchmark = getattr(module, "BENCHMARK", None)
    if not isinstance(benchmark, Benchmark):
        raise TypeError(f"builders.{name} must expose BENCHMARK with the attributes of builders.core.benchmark.Benchmark")
    if benchmark.name != name:
        raise TypeError(f"builders.{name}.BENCHMARK is named {benchmark.name!r}; it must be named after its folder")
    return benchmark
