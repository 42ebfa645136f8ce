"""MMLongBench-Doc's section of `harness report`: `show_results`'s figures (accuracy and generalized F1; accuracy
by evidence source, and on single-page, cross-page and unanswerable questions), on the extractor's answers where a
judge ran, else on the replies themselves (`unextracted_*`, said so)."""

from __future__ import annotations

import math
from pathlib import Path

from harness.outputs.model_results import ModelResults

TASK = "mmlongbench_doc"
SOURCES = (("text", "Pure-text"), ("layout", "Layout"), ("table", "Table"), ("chart", "Chart"), ("figure", "Figure"))
PAGES = (("single_page", "Single-page"), ("cross_page", "Cross-page"), ("unanswerable", "Unanswerable"))


def _value(data: ModelResults, metric: str) -> float | None:
    value = data.results.get(TASK, {}).get(f"{metric},none")
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def _pct(value: float | None) -> str:
    return "N/A" if value is None else f"{100 * value:.1f}"


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
    lines += ["| Acc | F1 | " + " | ".join(label for _, label in SOURCES + PAGES) + " |"]
    lines += ["|" + "---|" * (2 + len(SOURCES) + len(PAGES))]
    cells = [_pct(_value(data, f"{prefix}acc_{cell}")) for cell, _ in SOURCES + PAGES]
    lines += [
        f"| {_pct(_value(data, prefix + 'acc'))} | {_pct(_value(data, prefix + 'f1'))} | " + " | ".join(cells) + " |"
    ]
    return [*lines, ""]


def headline_metrics(names: list[str]) -> list[tuple[str, str]]:
    return [(name, metric) for name in names if name == TASK for metric in ("acc", "f1")]
