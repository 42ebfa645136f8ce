"""MileBench, declared once (`harness.config.benchmark`): its section of `harness report` (Table 2's layout, the
paper's row beside the run; scores on the paper's 0-100 scale), its hooks for `harness view` and its paper's models
(`paper_models.py`). Every task and group of the folder names it (`benchmark: !function benchmark.BENCHMARK`)."""

from __future__ import annotations

from harness.config.benchmark import BenchmarkDeclaration
from harness.outputs.report.hooks import ReportHooks
from tasks.milebench import report
from tasks.milebench.paper_models import PAPER_MODELS
from tasks.milebench.view_hooks import VIEW_HOOKS

BENCHMARK = BenchmarkDeclaration(
    "MileBench",
    report=ReportHooks(
        section=report.section, scale=100, headline_metrics=report.headline_metrics, verdicts=report.VERDICTS
    ),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
)
