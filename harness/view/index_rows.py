"""The index's table (`/`): one row per task and group any model's results hold, one column per model, each cell the
number report.md shows for it (`values.shown`), or "—" and why where there is none.

The rows come in two parts: first those of report.md's table across models, in its order (each benchmark's
`headline_metrics`, then every other task and group that has a metric: `report.headline_rows`), then every task and
group the report's tables across models leave out (MileBench's subsets and sub-groups, which its Table 2 shows;
groups that pool nothing, such as LoCoVQA's `locovqa` and MMLongBench's ablation sets), each by its first metric."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.task_index import natural_key
from harness.outputs.group_values import first_metric
from harness.view.catalog import Catalog
from harness.view.values import Shown, shown


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
