"""How the viewer's pages show what they show: numbers, excerpts, a document's axis values, a benchmark's marks on
the images and a model's answer; and markdown as HTML with raw HTML escaped."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def markdown_html(text: str) -> str:
    """Markdown to HTML with raw HTML escaped (a results file's text is not trusted)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def number_text(value: object) -> str:
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


def page_number(text: str | None, pages: int) -> int:
    """The page a `page=` parameter asks for, within 1..`pages`: ASCII digits only (`²` is a digit to
    `str.isdigit`, not to `int`), and a number of more digits than any page count (past the last page, and past
    Python's limit for int(str)) is the last page."""
    if not text or not (text.isascii() and text.isdigit()):
        return 1
    return pages if len(text) > 9 else min(max(1, int(text)), pages)


GRID_LIMIT = 32  # MMNeedle's largest grid is 8 x 8; a "row,column" key past this is drawn in a list instead


def grid_place(key: str) -> tuple[int, int] | None:
    """(row, column) of a breakdown key `"r,c"` (1-based, each at most `GRID_LIMIT`), or None."""
    parts = key.split(",")
    if len(parts) != 2 or not all(p.strip().isascii() and p.strip().isdigit() and len(p.strip()) <= 3 for p in parts):
        return None
    row, column = (int(p) for p in parts)
    return (row, column) if 1 <= row <= GRID_LIMIT and 1 <= column <= GRID_LIMIT else None


def heat_cell(key: str, value: object) -> dict[str, Any] | None:
    """A breakdown's cell as a heat map draws it (`{"mean": 0.25, "n": 4}`: its percentage, its shade 0-10 and its
    count), or None when the results file holds something else there."""
    mean = value.get("mean") if isinstance(value, dict) else None
    if not isinstance(mean, int | float) or isinstance(mean, bool):
        return None
    try:
        mean = float(mean)
    except OverflowError:
        return None
    if not math.isfinite(mean):
        return None
    count = value.get("n") if isinstance(value, dict) else None
    return {
        "key": key,
        "mean": mean,
        "percent": f"{100 * mean:.0f}",
        "level": int(min(max(mean, 0.0), 1.0) * 10 + 0.5),
        "n": count if isinstance(count, int) and not isinstance(count, bool) else "?",
    }


def natural_key(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def excerpt(text: object, limit: int = 160) -> str:
    if not isinstance(text, str):
        return ""
    return text if len(text) <= limit else text[:limit] + "…"


def image_marks(
    marks_hook: object,
    doc: Mapping[str, object] | None,
    record: Mapping[str, object],
    model: str,
    siblings: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The benchmark's marks on the prompt's images (`sample_marks`: MMNeedle's gold cell and the model's guess,
    LoCoVQA's question image, MMLongBench VH's needle); `siblings`, the documents its `sample_siblings` column
    relates to this one, for a hook that reads them."""
    if not callable(marks_hook) or doc is None:
        return []
    try:
        found = marks_hook(doc, record.get("response"), siblings) if siblings is not None else None
        marks = list(found if found is not None else marks_hook(doc, record.get("response")))
    except Exception:  # a benchmark's drawing aid must not lose the page
        return []
    out = []
    for mark in marks:
        what = mark.get("legend") or mark.get("kind")
        where = f"row {mark.get('row')}, column {mark.get('col')}" if mark.get("n", 1) != 1 else "the whole image"
        owner = " of " + model if mark.get("kind") == "guess" else ""
        out.append(dict(mark, label=f"{what}{owner}: image {int(mark.get('image', 0)) + 1}, {where}"))
    return out


def gold_text(gold: object) -> str | None:
    """The gold answer as a reader wants it: a gold the data holds as JSON (MMLongBench's `"Yes"`, a list of
    aliases, DocVQA's list answers, which the release holds as JSON text inside the JSON) without its quotes, one
    answer a line; any other text as it is."""
    if not isinstance(gold, str):
        return None if gold is None else str(gold)
    try:
        value = json.loads(gold)
    except ValueError:
        return gold
    if isinstance(value, str) and value.startswith("["):  # a list held as JSON text inside the JSON (DocVQA's)
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
        return "\n".join(str(v) for v in value)
    return gold


def metric_rows(value: object) -> list[tuple[str, str]] | None:
    """A metric whose value is a list, as the rows of a small table: a breakdown's `[key, value]` pairs, or the
    parts of a `[numerator, denominator]`; None for a plain value."""
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, list) and len(item) == 2 for item in value):
        return [(str(key), number_text(item)) for key, item in value]
    if len(value) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return [("numerator", number_text(value[0])), ("denominator", number_text(value[1]))]
    return [(str(position), number_text(item)) for position, item in enumerate(value)]


def answer_fields(model: str, record: Mapping[str, object]) -> dict[str, Any]:
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    return {
        "model": model,
        "response": record.get("response"),
        "raw_response": record.get("raw_response"),  # the whole output, its thinking taken out of `response`
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
