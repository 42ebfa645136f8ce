"""MMLongBench, declared once (`harness.config.benchmark`): its section of `harness report` (categories and datasets
by length beside the paper's; scores on the paper's 0-100 scale), its hooks for `harness view` and its paper's models
(`paper_models.py`), named by every task and group of the folder (`benchmark: !function benchmark.BENCHMARK`); the
ablation sets (App. B), with their own section and viewer hooks, name `ABLATIONS`; the other versions' tasks and
groups (`v1_1/`, `vlmevalkit/`, `vlmevalkit_as_paper/`), each with its own section naming its references
(`version_report.py`), name `V1_1`, `VLMEVALKIT` and `VLMEVALKIT_AS_PAPER` through their templates. Each holds
the paper's models."""

from __future__ import annotations

from dataclasses import replace

from harness.config.benchmark import BenchmarkDeclaration
from harness.outputs.report.hooks import ReportHooks
from tasks.mmlongbench import ablation_report, report, version_report
from tasks.mmlongbench.paper_models import PAPER_MODELS
from tasks.mmlongbench.view_hooks import ABLATION_VIEW_HOOKS, VIEW_HOOKS

BENCHMARK = BenchmarkDeclaration(
    "MMLongBench",
    report=ReportHooks(section=report.section, scale=100, across_models=report.across_models, verdicts=report.VERDICTS),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
)
ABLATIONS = replace(BENCHMARK, report=ReportHooks(section=ablation_report.section, scale=100), view=ABLATION_VIEW_HOOKS)
V1_1 = replace(BENCHMARK, report=ReportHooks(section=version_report.v1_1_section, scale=100))
VLMEVALKIT = replace(BENCHMARK, report=ReportHooks(section=version_report.vlmevalkit_section, scale=100))
VLMEVALKIT_AS_PAPER = replace(BENCHMARK, report=ReportHooks(section=version_report.as_paper_section, scale=100))
