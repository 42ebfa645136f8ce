"""A task's metrics with their errors as its results file records them: the value, the plain standard error
(`<metric>_stderr,<filter>`), the one clustered on the task's `cluster_key:` (`<metric>_stderr_clustered,<filter>`),
and from the file's `uncertainty` section (`harness.outputs.results_file.MetricUncertainty`) its rows, clusters,
design effect and method. Nothing is re-computed here: the viewer shows what the run wrote.

A metric whose scored rows are all 0 or full marks is a proportion: it gets the Wilson interval on the effective n
(n / design effect; `harness.uncertainty.effective_n`, `wilson_interval`), which never collapses at 0 % or 100 %,
where "± 0.0" would say a 0 of 12 is certain."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from harness.outputs.model_results import ModelResults
from harness.outputs.results_file import MetricUncertainty
from harness.uncertainty import effective_n, wilson_interval
from harness.view.catalog import TaskRun
from harness.view.sample_index import SampleIndex, as_float

LEVEL = 0.95


@dataclass(frozen=True)
class MetricErrors:
    """One metric of a task as the page shows it (NaN where the results file holds no number)."""

    metric: str
    filter: str
    value: float
    stderr: float
    stderr_clustered: float
    n: int | None
    n_clusters: int | None
    design_effect: float
    method: str
    wilson: tuple[float, float] | None  # on the metric's own scale; None: not a proportion

    @property
    def effective_n(self) -> float:
        if self.n is None:
            return math.nan
        return effective_n(self.n, self.design_effect, self.n_clusters or 0)


def _uncertainty(run: TaskRun) -> Mapping[str, MetricUncertainty]:
    section = run.run.get("uncertainty")
    found = section.get(run.task) if isinstance(section, Mapping) else None
    if not isinstance(found, Mapping):
        return {}
    return {str(k): cast(MetricUncertainty, v) for k, v in found.items() if isinstance(v, Mapping)}


COUNT_MOST = 2**53  # a count past it is no count of rows (an untrusted file's); no float holds it exactly


def _count(value: object) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < COUNT_MOST
    return value if ok and isinstance(value, int) else None


def _full_marks(index: SampleIndex, metric: str) -> float | None:
    """Full marks of a 0/1 (or 0/100) metric over the journal's scored rows; None for any other metric."""
    values = index.metrics.get(metric)
    if values is None:
        return None
    seen = values[~np.isnan(values)]
    full = index.full_marks(metric)
    return full if len(seen) and bool(np.all((seen == 0.0) | (seen == full))) else None


def task_errors(run: TaskRun, index: SampleIndex) -> list[MetricErrors]:
    """Each metric of the task's results (`"<metric>,<filter>"`), its errors beside it."""
    uncertainty = _uncertainty(run)
    out = []
    for key, raw in run.entry.items():
        metric, _, filter_ = key.partition(",")
        if not filter_ or metric.endswith(("_stderr", "_stderr_clustered")) or metric == "alias":
            continue
        value = as_float(raw)
        found = uncertainty.get(metric)
        details: Mapping[str, object] = found if found is not None else {}
        n, clusters = _count(details.get("n")), _count(details.get("n_clusters"))
        deff = as_float(details.get("design_effect"))
        full = _full_marks(index, metric)
        wilson = None
        if full is not None and n and math.isfinite(value) and 0.0 <= value / full <= 1.0:
            low, high = wilson_interval(value / full, effective_n(n, deff, clusters or 0), LEVEL)
            wilson = (low * full, high * full)
        out.append(
            MetricErrors(
                metric,
                filter_,
                value,
                as_float(run.entry.get(f"{metric}_stderr,{filter_}")),
                as_float(run.entry.get(f"{metric}_stderr_clustered,{filter_}")),
                n,
                clusters,
                deff,
                str(details.get("method") or ""),
                wilson,
            )
        )
    return out


def headline_interval(data: ModelResults, name: str, metric: str, scale: int | None, scored: int | None) -> str | None:
    """A proportion's headline cell on 0-100 with its 95 % Wilson interval on the effective n, `50.0 [38.2, 61.8]`
    (rows, clusters and design effect from the results file's `uncertainty` section; a file from before it holds
    none: the `scored` rows, i.i.d.); None for a row that is no proportion (`scale` None) or holds no number. A
    mean of scores in [0, 1] gets the same interval: its variance is at most p(1 - p), so the interval is wide
    enough for it too."""
    entry = data.results.get(name) or data.groups.get(name) or {}
    value = as_float(entry.get(f"{metric},none"))
    if scale is None or not math.isfinite(value) or not 0.0 <= value / scale <= 1.0:
        return None
    source = data.sources.get(name)
    section: object = source.get("uncertainty") if source is not None else None
    by_metric = section.get(name) if isinstance(section, Mapping) else None
    details = by_metric.get(metric) if isinstance(by_metric, Mapping) else None
    if isinstance(details, Mapping) and _count(details.get("n")):
        n, clusters, deff = _count(details.get("n")), _count(details.get("n_clusters")), details.get("design_effect")
        size = effective_n(n or 0, as_float(deff), clusters or 0)
    elif _count(scored):
        size = float(scored or 0)
    else:
        return None
    low, high = wilson_interval(value / scale, size, LEVEL)
    return f"{value * 100 / scale:.1f} [{low * 100:.1f}, {high * 100:.1f}]"
