"""The number the viewer shows for a model's task or group: report.md's cell for it, made by the same code
(`harness.outputs.report.headline_cell`: the value on 0-100 with its 95 % interval, Wilson's on the effective n of
`harness.outputs.estimates`; the row's scale as `report.row_scale` decides it over every model of the folder), or,
where there is none, why (`harness.outputs.group_values.why_no_value`). The index, the group grids and members and the
task pages all show numbers through `shown`, so a cell reads the same on every page and in the report.

The index's table (`/`): one row per task and group any model's results hold, one column per model, each cell the
number report.md shows for it (`values.shown`), or "—" and why where there is none.

The rows come in two parts: first those of report.md's table across models, in its order (each benchmark's
`headline_metrics`, then every other task and group that has a metric: `report.headline_rows`), then every task and
group the report's tables across models leave out (MileBench's subsets and sub-groups, which its Table 2 shows;
groups that pool nothing, such as LoCoVQA's `locovqa` and MMLongBench's ablation sets), each by its first metric."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.task_index import natural_key
from harness.outputs.group_values import first_metric, why_no_value
from harness.outputs.report import headline_cell, row_scale
from harness.view.catalog import Catalog

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
    """One model's cell of a row."""

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
        """The models that ran it."""
        return [cell.model for cell in self.cells if cell.shown.ran]


def index_rows(catalog: Catalog) -> list[IndexRow]:
    union = catalog.union
    rows: list[tuple[str, str | None, bool]] = [(name, metric, True) for name, metric in catalog.cross_rows]
    listed = {name for name, _ in catalog.cross_rows}
    for name in sorted((set(union.results) | set(union.groups)) - listed, key=natural_key):
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
