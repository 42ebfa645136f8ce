"""What a benchmark's report module gives `harness report`, declared: its section (named by the tasks' YAML,
`report: !function report.section`, a `Section`) and, in the same module, its `REPORT_HOOKS` (`ReportHooks`): the
scale its scores are on, the rows its benchmark shows in the cross-model table, a part drawn across every model, and
how its numbers meet the paper's (`verdicts`: the tolerance and which data are the paper's own items,
`harness.outputs.verdict.VerdictRule`).

    REPORT_HOOKS = ReportHooks(scale=100, headline_metrics=headline_metrics, across_models=across_models,
                               verdicts=VERDICTS)

A module without `REPORT_HOOKS` has a section only.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from harness.outputs.model_results import ModelResults
    from harness.outputs.verdict import VerdictRule

HOOKS_NAME = "REPORT_HOOKS"  # the name of a report module's `ReportHooks`


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
    """A report module's declaration beside its section (`REPORT_HOOKS`)."""

    scale: Literal[1, 100] | None = None  # 1: scores are proportions; 100: a paper's 0-100 scores
    headline_metrics: HeadlineMetrics | None = None  # without: each task's and group's first metric
    across_models: AcrossModels | None = None
    verdicts: VerdictRule | None = None  # the tolerance beside the paper, and which data are its own items


NO_HOOKS = ReportHooks()


def hooks_of(section: Section) -> ReportHooks:
    """The `ReportHooks` the module of `section` declares (none: `NO_HOOKS`). Anything else under the name is said in
    one line and left out: a broken hook costs its part of the report, not the report."""
    module = inspect.getmodule(section)
    hooks = getattr(module, HOOKS_NAME, NO_HOOKS)
    if isinstance(hooks, ReportHooks):
        return hooks
    name = module.__name__ if module is not None else "?"
    print(f"harness: {name}.{HOOKS_NAME} is a {type(hooks).__name__}, not a ReportHooks: left out", file=sys.stderr)
    return NO_HOOKS
