"""A task's metrics with their errors as its results file records them: the value, the plain standard error
(`<metric>_stderr,<filter>`), the one clustered on the task's `cluster_key:` (`<metric>_stderr_clustered,<filter>`),
and from the file's `uncertainty` section (`harness.outputs.results_file.MetricUncertainty`) its rows, clusters,
design effect and method. Nothing is re-computed here: the viewer shows what the run wrote.

A metric whose scored rows are all 0 or full marks is a proportion, and the task's headline metric is on the scale
report.md shows it on: each gets the interval report.md gives it (`harness.outputs.estimates.Estimate.interval`:
Wilson's on the effective n, p(1 - p) / SE² with SE the larger of the clustered and plain errors; docs/statistics.md),
which never collapses at 0 % or 100 %, where "± 0.0" would say a 0 of 12 is certain. The effective n shown is the
same one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from harness.outputs.estimates import Estimate
from harness.outputs.results_file import MetricUncertainty
from harness.view.catalog import TaskRun
from harness.view.sample_index import SampleIndex, as_float


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
    effective_n: float  # the n its interval is Wilson's on (NaN: none)


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


def task_errors(run: TaskRun, index: SampleIndex, headline: tuple[str, int | None] | None = None) -> list[MetricErrors]:
    """Each metric of the task's results (`"<metric>,<filter>"`), its errors beside it; `headline`: the task's
    headline metric and the scale report.md shows it on (`report.row_scale`), whose interval is report.md's."""
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
        stderr = as_float(run.entry.get(f"{metric}_stderr,{filter_}"))
        clustered = as_float(run.entry.get(f"{metric}_stderr_clustered,{filter_}"))
        scale = headline[1] if headline is not None and headline[0] == metric else _full_marks(index, metric)
        estimate = Estimate(_finite(value), _finite(stderr), _finite(clustered), n, clusters, scale, _finite(deff))
        size = estimate.effective_n() if scale else None
        wilson = estimate.interval() if size is not None else None
        out.append(
            MetricErrors(
                metric,
                filter_,
                value,
                stderr,
                clustered,
                n,
                clusters,
                deff,
                str(details.get("method") or ""),
                wilson,
                math.nan if size is None else size,
            )
        )
    return out


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
