"""How the viewer's pages show what they show: numbers, excerpts, a document's axis values, a benchmark's marks on
the images and a model's answer; and markdown as HTML with raw HTML escaped."""

from __future__ import annotations

import math
from typing import Any


def markdown_html(text: str) -> str:
    """Markdown to HTML with raw HTML escaped (a results file's text is not trusted)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def number_text(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "N/A"
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
    return "" if value is None else str(value)


def of_doc(per_doc: list[tuple[str, ...]], doc_id: int) -> tuple[str, ...]:
    return per_doc[doc_id] if 0 <= doc_id < len(per_doc) else ()


def finite_float(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is None or math.isfinite(value) else None


def natural_key(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def excerpt(text: Any, limit: int = 160) -> str:
    if not isinstance(text, str):
        return ""
    return text if len(text) <= limit else text[:limit] + "…"


def image_marks(
    marks_hook: Any, doc: dict[str, Any] | None, record: dict[str, Any], model: str
) -> list[dict[str, Any]]:
    """The benchmark's marks on the prompt's images (`sample_marks`: MMNeedle's gold cell and the model's guess)."""
    if not callable(marks_hook) or doc is None:
        return []
    try:
        marks = list(marks_hook(doc, record.get("response")))
    except Exception:  # a benchmark's drawing aid must not lose the page
        return []
    return [
        dict(
            mark,
            label=f"{mark.get('kind')}{' of ' + model if mark.get('kind') == 'guess' else ''}: row "
            f"{mark.get('row')}, column {mark.get('col')}",
        )
        for mark in marks
    ]


def answer_fields(model: str, record: dict[str, Any]) -> dict[str, Any]:
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    return {
        "model": model,
        "response": record.get("response"),
        "status": record.get("status"),
        "error": record.get("error"),
        "refusal": record.get("refusal"),
        "metrics": metrics,
        "tokens": record.get("token_count"),
        "finish": record.get("finish_reason"),
        "truncation": record.get("truncation"),
        "usage": record.get("usage"),
        "round_trip": record.get("text_round_trip"),
    }
