"""MMLongBench-Doc, declared once (`harness.config.benchmark`): its section of `harness report` (accuracy and F1,
by evidence source and by single-page, cross-page and unanswerable questions), its viewer hooks (`view_hooks.py`) and its
paper's models. Its task names it (`benchmark: !function benchmark.BENCHMARK`)."""

from __future__ import annotations

from harness.config.benchmark import BenchmarkDeclaration
from harness.outputs.report.hooks import ReportHooks
from tasks.mmlongbench_doc import report
from tasks.mmlongbench_doc.paper_models import PAPER_MODELS
from tasks.mmlongbench_doc.view_hooks import VIEW_HOOKS

BENCHMARK = BenchmarkDeclaration(
    "MMLongBench-Doc",
    report=ReportHooks(
        section=report.section, scale=1, headline_metrics=report.headline_metrics, verdicts=report.VERDICTS
    ),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
)
