"""MMLongBench-Doc's section of `harness report`: `show_results`' figures (accuracy and generalized F1; accuracy on
single-page, cross-page and unanswerable questions, by evidence source and by document type), on the extractor's
answers where a judge ran, else on the replies themselves (`unextracted_*`, said so)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from harness.outputs.model_results import ModelResults
from tasks.mmlongbench_doc.beside import beside_lines
from tasks.mmlongbench_doc.utils import DOC_TYPES, EVIDENCE_SOURCES, PAGE_CELLS

TASK = "mmlongbench_doc"
PAGE_LABELS = dict(zip(PAGE_CELLS, ("Single-page", "Cross-page", "Unanswerable"), strict=True))


def _value(data: ModelResults, metric: str) -> float | None:
    value = data.results.get(TASK, {}).get(f"{metric},none")
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def _pct(value: float | None) -> str:
    return "N/A" if value is None else f"{100 * value:.1f}"


def _table(data: ModelResults, prefix: str, columns: Iterable[tuple[str, str]]) -> list[str]:
    """One row of accuracies, `columns` (metric suffix, label)."""
    shown = list(columns)
    return [
        "| " + " | ".join(label for _, label in shown) + " |",
        "|" + "---|" * len(shown),
        "| " + " | ".join(_pct(_value(data, prefix + metric)) for metric, _ in shown) + " |",
        "",
    ]


def scored_on(data: ModelResults) -> str:
    """`""` (the extractor's answers) where the run has them, else `"unextracted_"`."""
    return "" if _value(data, "acc") is not None else "unextracted_"


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    if TASK not in data.results:
        return []
    prefix = scored_on(data)
    how = (
        "on the extractor's answers (the paper's three stages)"
        if not prefix
        else "on the replies themselves: no extractor ran (`--judge_model`), so not the paper's figures"
    )
    lines = [f"### MMLongBench-Doc ({model})", "", f"Scored {how}; {data.provenance_line()}", ""]
    pages = [(f"acc_{cell}", label) for cell, label in PAGE_LABELS.items()]
    lines += _table(data, prefix, [("acc", "Acc"), ("f1", "F1"), *pages])
    lines += ["By evidence source:", ""]
    lines += _table(data, prefix, [(f"acc_{cell}", name) for name, cell in EVIDENCE_SOURCES.items()])
    lines += ["By document type:", ""]
    lines += _table(data, prefix, [(f"acc_{cell}", name) for name, cell in DOC_TYPES.items()])
    scored = "accuracy" if not prefix else "accuracy on the unextracted replies"
    return lines + beside_lines(data, _value(data, prefix + "acc"), scored)


def headline_metrics(names: list[str]) -> list[tuple[str, str]]:
    return [(name, metric) for name in names if name == TASK for metric in ("acc", "f1")]
