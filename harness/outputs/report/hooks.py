"""What a benchmark gives `harness report`, declared: the `ReportHooks` of its declaration
(`harness.config.benchmark.BenchmarkDeclaration.report`, which its tasks' YAML names): its section (a `Section`), the scale
its scores are on, the rows its benchmark shows in the cross-model table, a part drawn across every model, and how
its numbers meet the paper's (`verdicts`: the tolerance and which data are the paper's own items,
`harness.outputs.report.verdict.VerdictRule`).

    BenchmarkDeclaration("Toy", report=ReportHooks(section=report.section, scale=100, across_models=report.across_models,
                                                verdicts=report.VERDICTS))

A declaration without `report` adds no section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from harness.config.benchmark import BenchmarkDeclaration, field_of

if TYPE_CHECKING:
    from harness.outputs.report.verdict import VerdictRule
    from harness.outputs.results.model_results import ModelResults


class Section(Protocol):
    """A benchmark's part of one model's report: markdown lines (figures drawn into `out_dir`), from the results of
    the tasks and groups that declare it."""

    def __call__(self, model: str, data: ModelResults, out_dir: Path) -> list[str]: ...


class HeadlineMetrics(Protocol):
    """The (task or group, metric) rows, in the benchmark's order, the cross-model table shows of `names`."""

    def __call__(self, names: list[str]) -> list[tuple[str, str]]: ...


class AcrossModels(Protocol):
    """A part of the report drawn across every model (one figure with all of them), from each model's results."""

    def __call__(self, models: Mapping[str, ModelResults], out_dir: Path) -> list[str]: ...


@dataclass(frozen=True)
class ReportHooks:
    """A benchmark's part of `harness report` (`BenchmarkDeclaration.report`)."""

    section: Section | None = None  # its section of each model's report
    scale: Literal[1, 100] | None = None  # 1: scores are proportions; 100: a paper's 0-100 scores
    headline_metrics: HeadlineMetrics | None = None  # without: each task's and group's first metric
    across_models: AcrossModels | None = None
    verdicts: VerdictRule | None = None  # the tolerance beside the paper, and which data are its own items


NO_HOOKS = ReportHooks()


def report_of(benchmark: BenchmarkDeclaration) -> ReportHooks:
    """The `ReportHooks` a benchmark declares (none: `NO_HOOKS`). Anything else is said in one line and left out: a
    broken declaration costs its part of the report, not the report."""
    return field_of(benchmark, "report", ReportHooks, "harness") or NO_HOOKS
