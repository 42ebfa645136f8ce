"""What a benchmark declares of itself, once, in its task folder: the `BenchmarkDeclaration` its tasks' and groups' YAML name
(`benchmark: !function benchmark.BENCHMARK`), read through the task configuration wherever the harness needs it,
never by importing a benchmark by name.

    BENCHMARK = BenchmarkDeclaration(
        "MMNeedle",
        report=ReportHooks(section=report.section, scale=1, headline_metrics=report.headline_metrics),
        view=VIEW_HOOKS,
        paper=PAPER_MODELS,
        extras={"locovqa": ("torch", "sentence_transformers")},
    )

- `report`: its part of `harness report`, a `harness.outputs.report.hooks.ReportHooks` (read by the report);
- `view`: its hooks for `harness view`, a `harness.view.view_hooks_api.ViewHooks` (read by the viewer);
- `paper`: its paper's models, a `harness.models.facts.paper_models.PaperModels` (read by alias resolution, `harness
  models` and the benchmark's own report);
- `extras`: the extras of pyproject.toml its scorers need (a task names one in `metadata.requires`), each with the
  modules it brings, checked before a run's first sample (`harness.run.requirements`).

Each field is typed where it is read, in the layer that reads it (this layer is below them all): a field of another
type is said in one line and left out there, so a broken declaration costs its part, not the command. A benchmark
may declare more than one (MMLongBench's ablation sets have their own report section): each is named by the tasks it
covers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from harness.config.yaml_loader import FunctionRef
from harness.errors import TaskConfigError


@dataclass(frozen=True)
class BenchmarkDeclaration:
    """A benchmark's declaration (see the module docstring)."""

    name: str  # its paper's short title, as reports and `harness models` print it ("MMLongBench")
    report: object = None  # a `ReportHooks`
    view: object = None  # a `ViewHooks`
    paper: object = None  # a `PaperModels`
    extras: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # extra -> the modules it brings


def declared_benchmark(ref: FunctionRef | None) -> BenchmarkDeclaration | None:
    """The `BenchmarkDeclaration` a task's or group's `benchmark:` names; None without one. A name that is no `BenchmarkDeclaration` is a
    `TaskConfigError` naming the YAML line."""
    if ref is None:
        return None
    found = ref.resolve_attribute()
    if not isinstance(found, BenchmarkDeclaration):
        raise TaskConfigError(
            f"{ref.yaml_file}:{ref.line}: `benchmark: !function {ref.spec}` is a {type(found).__name__}, not a "
            "harness.config.benchmark.BenchmarkDeclaration"
        )
    return found


def declared_benchmarks(configs: Iterable[object]) -> list[BenchmarkDeclaration]:
    """The benchmarks the task and group configs `configs` declare, each once, in the order first met."""
    refs: dict[tuple[str, str], FunctionRef] = {}
    for config in configs:
        ref = getattr(config, "benchmark", None)
        if isinstance(ref, FunctionRef):
            refs.setdefault((ref.spec, str(ref.yaml_file.parent)), ref)
    found: dict[int, BenchmarkDeclaration] = {}
    for ref in refs.values():
        benchmark = declared_benchmark(ref)
        if benchmark is not None:
            found.setdefault(id(benchmark), benchmark)
    return list(found.values())


T = TypeVar("T")


def field_of(benchmark: BenchmarkDeclaration, name: str, kind: type[T], where: str) -> T | None:
    """The declaration's field `name` when it is a `kind` (else None, said in one line naming it): how each layer
    reads the field it knows the type of."""
    value = getattr(benchmark, name)
    if value is None or isinstance(value, kind):
        return value
    print(
        f"{where}: the {benchmark.name} declaration's {name} is a {type(value).__name__}, not a {kind.__name__}: "
        "left out",
        file=sys.stderr,
    )
    return None
