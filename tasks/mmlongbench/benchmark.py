"""MMLongBench, declared once (`harness.config.benchmark`): its section of `harness report` (categories and datasets
by length beside the paper's; scores on the paper's 0-100 scale), its hooks for `harness view` and its paper's models
(`paper_models.py`), named by every task and group of the folder (`benchmark: !function benchmark.BENCHMARK`); the
ablation sets (App. B), with their own section and viewer hooks, name `ABLATIONS`."""

from __future__ import annotations

from dataclasses import replace

from harness.config.benchmark import Benchmark
from harness.outputs.report_hooks import ReportHooks
from tasks.mmlongbench import ablation_report, report
from tasks.mmlongbench.paper_models import PAPER_MODELS
from tasks.mmlongbench.view_hooks import ABLATION_VIEW_HOOKS, VIEW_HOOKS

BENCHMARK = Benchmark(
    "MMLongBench",
    report=ReportHooks(section=report.section, scale=100, across_models=report.across_models),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
)
ABLATIONS = replace(BENCHMARK, report=ReportHooks(section=ablation_report.section, scale=100), view=ABLATION_VIEW_HOOKS)
