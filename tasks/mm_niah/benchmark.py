"""MM-NIAH, declared once (`harness.config.benchmark`): its section of `harness report` (the paper's per-task scores
and heat maps by context length and needle depth; scores on proportions, which the report shows as percentages), its
hooks for `harness view` and its paper's models. Every task and group of the folder names it (`benchmark: !function
benchmark.BENCHMARK`)."""

from __future__ import annotations

from harness.config.benchmark import BenchmarkDeclaration
from harness.outputs.report.hooks import ReportHooks
from tasks.mm_niah import report
from tasks.mm_niah.paper_models import PAPER_MODELS
from tasks.mm_niah.view_hooks import VIEW_HOOKS

BENCHMARK = BenchmarkDeclaration(
    "MM-NIAH",
    report=ReportHooks(
        section=report.section, scale=1, headline_metrics=report.headline_metrics, verdicts=report.VERDICTS
    ),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
)
