"""How the viewer's pages show what they show: numbers, excerpts, a document's axis values, a benchmark's marks on
the images and a model's answer; and markdown as HTML with raw HTML escaped.

The number the viewer shows for a model's task or group: report.md's cell for it, made by the same code
(`harness.outputs.report.report_md.headline_cell`: the value on 0-100 with its 95 % interval, Wilson's on the effective n of
`harness.outputs.results.estimates`; the row's scale as `report.row_scale` decides it over every model of the folder), or,
where there is none, why (`harness.outputs.results.groups.why_no_value`). The index, the group grids and members and the
task pages all show numbers through `shown`, so a cell reads the same on every page and in the report.

The index's table (`/`): one row per task and group any model's results hold, one column per model, each cell the
number report.md shows for it (`shown`), or "—" and why where there is none.

The rows come in two parts: first those of report.md's table across models, in its order (each benchmark's
`headline_metrics`, then every other task and group that has a metric: `report.headline_rows`), then every task and
group the report's tables across models leave out (MileBench's subsets and sub-groups, which its Table 2 shows;
groups that pool nothing, such as LoCoVQA's `locovqa` and MMLongBench's ablation sets), each by its first metric.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy
from markupsafe import Markup, escape

from harness.config.task_index import natural_key as name_key
from harness.outputs.report.report_md import headline_cell, row_scale
from harness.outputs.results.groups import first_metric, why_no_value
from harness.outputs.results.interval_bounds import bounds_text
from harness.view.catalog import Catalog

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict


def markdown_html(text: str) -> str:
    """Markdown to HTML with raw HTML escaped (a results file's text is not trusted)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    prose_line_breaks(md, tokens)
    return md.renderer.render(tokens, md.options, {})


def prose_line_breaks(md: MarkdownIt, tokens: Sequence[Token]) -> None:
    """The names and keys of markdown's prose (paragraphs, lists, headings) may end a line where `line_breaks` marks:
    report.md's lists of long task names (`bench_ablation_occ_vrag_infoseek_16k`) at 375 px. Not its tables': a word of a
    table keeps whole, the table scrolling in its own box."""
    tables = 0
    for token in tokens:
        tables += {"table_open": 1, "table_close": -1}.get(token.type, 0)
        if token.type == "inline" and not tables:
            for child in token.children or []:
                if child.type in ("text", "code_inline"):
                    child.meta["line_breaks"] = True
    from markdown_it.renderer import RendererHTML

    assert isinstance(md.renderer, RendererHTML)  # the HTML renderer, as MarkdownIt makes it
    text, code = md.renderer.rules["text"], md.renderer.rules["code_inline"]

    def text_rule(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        return str(line_breaks(token.content)) if token.meta.get("line_breaks") else text(tokens, idx, options, env)

    def code_rule(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        if not token.meta.get("line_breaks"):
            return code(tokens, idx, options, env)
        return f"<code{renderer.renderAttrs(token)}>{line_breaks(token.content)}</code>"

    md.add_render_rule("text", text_rule)
    md.add_render_rule("code_inline", code_rule)


# Where a name or a key of machine text may end a line on a narrow page: after `_`, `,`, `:`, `;`, `=` or `/` and
# after `>` (a placeholder's, `<image>`), never inside a run of letters and digits (`bench_docvqa_` over
# `bench_doc_8k` at 375 px, not `bench_docv` over `qa_...`).
LINE_ENDS = re.compile(r"(?<=[_,:;=/>])(?=\S)")


def line_breaks(text: object) -> Markup:
    """`text` escaped, with a `<wbr>` (a line may end here, nothing is shown) where `LINE_ENDS` allows one."""
    return Markup("<wbr>").join(escape(part) for part in LINE_ENDS.split(str(text)))


# Below this, a computed value is floating-point noise (an interval's edge at 1 - 1 + ... = 5.551e-17), shown as 0
NOISE = 1e-9


def number_text(value: object) -> str:
    """A number as a page shows it: 4 significant digits, never in exponent form, noise as 0, NaN as N/A."""
    if isinstance(value, float):
        if math.isnan(value):
            return "N/A"
        if abs(value) < NOISE:
            return "0"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        text = f"{value:.4g}"
        if "e" in text:  # 4 significant digits written out (0.00001235, 12350)
            text = numpy.format_float_positional(value, precision=4, unique=False, fractional=False, trim="-")
        return text
    return "" if value is None else str(value)


def _shown_decimals(value: float) -> int:
    """The decimals `number_text` shows `value` at (before trailing zeros go): those of its 4 significant digits, 0
    for a whole number or one it shows as 0."""
    if not math.isfinite(value) or abs(value) < NOISE or value.is_integer():
        return 0
    rounded = abs(float(f"{value:.4g}"))  # 9.9996 is 10.00: the decimals of what is shown
    return max(0, 3 - math.floor(math.log10(rounded)))


def interval_text(bounds: tuple[float, float]) -> str:
    """`[low, high]` at the decimals of the larger bound's 4 significant digits, trailing zeros dropped as `number_text`
    drops them: its value lies between them, so no bound is shown finer than the value it bounds (an edge at
    0.000001701 beside a value of 33.33 and an edge of 89.22 is 0; `harness.outputs.results.interval_bounds.bounds_text`,
    report.md's rule)."""
    low, high = bounds
    return bounds_text(low, high, _shown_decimals(max(abs(low), abs(high))), trim=True)


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


def gold_text(gold: object, hook: object = None, doc: dict[str, object] | None = None) -> str | None:
    """The gold answer as a reader wants it: in the form a reply gives it where the benchmark says how
    (`ViewHooks.gold_shown`: an option's letter for the index a release holds), else a gold the data holds as
    JSON (a `"Yes"`, a list of aliases, a list of answers, which a release holds as JSON text inside the JSON) without its quotes, one answer a line; any other text as it is."""
    if callable(hook) and doc is not None and isinstance(gold, str):
        try:
            found = hook(doc, gold)
        except Exception:  # a benchmark's reading aid must not lose the page: the gold as the data holds it
            found = None
        if found is not None:
            return str(found)
    if not isinstance(gold, str):
        return None if gold is None else str(gold)
    try:
        value = json.loads(gold)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser (a journal's target is anyone's)
        return gold
    if isinstance(value, str) and value.startswith("["):  # a list held as JSON text inside the JSON (DocVQA's)
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return value
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
        return "\n".join(str(v) for v in value)
    return gold


def metric_rows(value: object, fields: Sequence[str] | None = None) -> list[tuple[str, str]] | None:
    """A metric whose value is a list, as the rows of a small table: its numbers by the names the benchmark gives its
    fields (`ViewHooks.metric_fields`: a row's score and the flags beside it, never one number read as a score), a
    breakdown's `[key, value]` pairs, or the parts of a `[numerator, denominator]`; None for a plain value."""
    if not isinstance(value, list) or not value:
        return None
    if fields and len(fields) == len(value) and not any(isinstance(item, list) for item in value):
        return [(str(name), number_text(item)) for name, item in zip(fields, value, strict=True)]
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
        "truncation": _truncation(record.get("truncation")),
        "usage": record.get("usage"),
        "round_trip": record.get("text_round_trip"),
    }


def _truncation(value: object) -> Mapping[str, object] | None:
    """What the task's truncation rule dropped (an object the page lists); another value (a journal is anyone's) as
    recorded, said to be no object."""
    if value is None or isinstance(value, Mapping):
        return value
    return {"as recorded (not an object)": json.dumps(value)}


NONE_SHOWN = "—"
NOT_RUN = "not run"  # a cell's `why` where the model did not run the task or group


@dataclass(frozen=True)
class Shown:
    """One cell: `text` as report.md writes it (`27.8 [18.3, 39.8]`, `N/A`, `3.2 ± 0.41`), "—" where the results hold
    no value, "" where the model did not run it; `why` says why there is no number ("" where there is one)."""

    text: str
    why: str = ""
    scale: int | None = 1  # the row's scale: 1 or 100 (shown on 0-100), None: not a proportion, shown as recorded
    value: float | None = None  # the number on 0-100 (as recorded where `scale` is None), for a cell's shade

    @property
    def ran(self) -> bool:
        return self.why != NOT_RUN

    @property
    def level(self) -> int | None:
        """The cell's shade, 0..10; None without a number on 0-100 (N/A, —, not run), which no shade stands for: 0's
        would read as a score of 0."""
        if self.value is None or self.scale is None:
            return None
        return int(min(max(self.value / 100, 0.0), 1.0) * 10 + 0.5)

    @property
    def shade(self) -> str:
        """The cell's CSS class: `h0`..`h10`, or `no-number`."""
        return "no-number" if self.level is None else f"h{self.level}"


def shown(catalog: Catalog, model: str, name: str, metric: str | None) -> Shown:
    """`metric` of task or group `name` for `model`, as report.md shows it (None: the entry has no metric)."""
    data = catalog.models.get(model)
    if data is None or (name not in data.results and name not in data.groups):
        return Shown("", NOT_RUN)
    if metric is None:
        return Shown(NONE_SHOWN, why_no_value(data, name, None))
    why = why_no_value(data, name, metric)
    entry = data.results.get(name) or data.groups.get(name) or {}
    value = entry.get(f"{metric},none")
    try:
        scale = row_scale(catalog.everyone, name, metric, catalog.declared)
        text = headline_cell(data, name, metric, scale)
        number = float(value) * (100 / scale if scale else 1) if not why and isinstance(value, int | float) else None
    except (OverflowError, ValueError, TypeError) as err:  # 10**4000: no float holds it; shown, not a 500
        return Shown(f"unreadable ({type(err).__name__}: {err})", "a value no float holds", None)
    return Shown(text or NONE_SHOWN, why, scale, number)


@dataclass(frozen=True)
class IndexCell:
    model: str
    shown: Shown
    n: int | None  # a task's rows scored
    failed: int  # a task's rows not scored (errors, over length, refused, invalid)


@dataclass(frozen=True)
class IndexRow:
    name: str
    metric: str | None
    group: bool
    in_report: bool  # a row of report.md's table across models (and, for a group with a value, of its summary)
    cells: list[IndexCell]

    @property
    def ran(self) -> list[str]:
        return [cell.model for cell in self.cells if cell.shown.ran]


def index_rows(catalog: Catalog) -> list[IndexRow]:
    union = catalog.union
    rows: list[tuple[str, str | None, bool]] = [(name, metric, True) for name, metric in catalog.cross_rows]
    listed = {name for name, _ in catalog.cross_rows}
    for name in sorted((set(union.results) | set(union.groups)) - listed, key=name_key):
        rows.append((name, first_metric(union.results.get(name) or union.groups[name]), False))
    out = []
    for name, metric, in_report in rows:
        cells = []
        for model in catalog.model_names():
            data = catalog.models[model]
            counters = data.counters(name) if name in data.results else {}
            scored = counters.get("n_scored")
            failed = counters.get("sample_len", 0) - (scored or 0) if counters else 0
            cells.append(IndexCell(model, shown(catalog, model, name, metric), scored, failed))
        out.append(IndexRow(name, metric, name not in union.results, in_report, cells))
    return out
