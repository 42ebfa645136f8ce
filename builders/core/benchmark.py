"""What `builders` needs of a benchmark, and where it finds them.

A benchmark is a package `builders/<name>/` whose `__init__` exposes `BENCHMARK`, a `BuilderSpec`. Packages are
found by listing the `builders` folder (nothing is imported until a benchmark is asked for), the way `datasets`
keeps its packaged builders and lm-eval its models: adding a benchmark adds a folder and edits nothing here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from builders.core.errors import BuildError

if TYPE_CHECKING:  # the registry itself imports no build code: `builders list` and `push` start fast
    from builders.core.benchmark_build import BenchmarkBuild

NOT_BENCHMARKS = frozenset({"core"})


def rows_built(info: Mapping[str, object]) -> str:
    return f"{info['rows']} rows"


@dataclass(frozen=True)
class BuilderSpec:
    """What `builders` knows of a benchmark: its build (whose options dataclass makes its flags), one line for
    `builders list`, its configs, and what `builders build` says of a built config."""

    build_class: type[BenchmarkBuild[Any]]
    summary: str  # one line for `builders list`
    config_lines: Mapping[str, str]  # config name -> one line describing it, in canonical order
    describe: Callable[[Mapping[str, object]], str] = rows_built  # a built config, from its manifest entry
    # Names outside `config_lines` that are configs too (parametric ones: LoCoVQA's `okvqa_cmp_7`).
    accepts_config: Callable[[str], bool] | None = None

    @property
    def name(self) -> str:  # the folder name under OUT/ and in `builders build NAME`
        return self.build_class.info.name

    @property
    def default_image_storage(self) -> str:
        return self.build_class.default_image_storage

    def configs(self) -> Mapping[str, str]:
        return self.config_lines

    def describe_config(self, name: str, info: Mapping[str, object]) -> str:
        return self.describe(info)


def select_configs(
    names: list[str] | None, known: Mapping[str, object] | list[str], accepts: Callable[[str], bool] | None = None
) -> list[str]:
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


def load_benchmark(name: str) -> BuilderSpec:
    names = benchmark_names()
    if name not in names:
        raise BuildError(f"unknown benchmark {name!r}; known: {', '.join(names)}")
    module = importlib.import_module(f"builders.{name}")
    benchmark = getattr(module, "BENCHMARK", None)
    if not isinstance(benchmark, BuilderSpec):
        raise TypeError(f"builders.{name} must expose BENCHMARK, a builders.core.benchmark.BuilderSpec")
    if benchmark.name != name:
        raise TypeError(f"builders.{name}.BENCHMARK is named {benchmark.name!r}; it must be named after its folder")
    return benchmark
