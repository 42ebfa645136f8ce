"""MMNeedle, declared once (`harness.config.benchmark`): its section of `harness report` (the paper's tables, cell
heat maps, depth curves; scores on proportions, which the report shows as percentages beside the others), its hooks
for `harness view` and its paper's models (`paper_models.py`). Every task and group of the folder names it
(`benchmark: !function benchmark.BENCHMARK`)."""

from __future__ import annotations

from harness.config.benchmark import BenchmarkDeclaration
from harness.outputs.report.hooks import ReportHooks
from tasks.mmneedle import report
from tasks.mmneedle.paper_models import PAPER_MODELS
from tasks.mmneedle.view_hooks import VIEW_HOOKS

BENCHMARK = BenchmarkDeclaration(
    "MMNeedle",
    report=ReportHooks(
        section=report.section, scale=1, headline_metrics=report.headline_metrics, verdicts=report.VERDICTS
    ),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
)
