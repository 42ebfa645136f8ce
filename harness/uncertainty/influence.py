"""Aggregates in first-order form: an estimate, each row's influence on it, and each row's identity and cluster keys
(`Linearized`), so that errors are computed over any clustering (`harness.uncertainty.variance`) and aggregates that
share rows or items combine with their covariance (a group over its members, a difference of two runs paired on rows).

How each aggregation is linearized (θ̂ - θ ≈ Σ_i ψ_i):

- mean: ψ_i = (x_i - x̄)/n. Exact: the mean is linear.
- sum: ψ_i = x_i - x̄ (n held fixed, as a sum over a fixed set of rows is).
- ratio of sums Σa/Σb (MMNeedle's needle-level accuracies): ψ_i = (a_i - θ̂ b_i)/Σb, its influence function
  (the delta method for a ratio estimator; Cochran 1977, §6.3), exact to first order. The plain error keeps the
  project's earlier one, each unit of Σb a Bernoulli trial, p(1-p)/Σb, so that the design effect measures what
  counting needles as independent trials hides (the K needles of one answer share that answer).
- any other aggregation (a task's `!function`): the delete-one jackknife, ψ_i = (n-1)/n (θ̄_(·) - θ̂_(-i)), which is
  the empirical influence function of a smooth statistic and exactly the mean's ψ for a mean (Efron and Stein 1981).
  It is used only to carry such an aggregate into a group or a difference; its own errors come from the cluster
  bootstrap (`harness.uncertainty.bootstrap`), which needs no smoothness (a fold at 50, a median).
- a group's rule g(θ_1, ..., θ_k) over its members: ψ_i = Σ_j ∂g/∂θ_j ψ_i^(j) (the delta method), with the gradient
  taken numerically by central differences (`rule_gradient`), so a benchmark's own `!function` rule needs nothing but
  its values; for the linear built-in rules the difference quotient is exact up to rounding. A row two members share
  (the same task in two subgroups) adds its two influences, and rows of different members that share a cluster key
  fall in one cluster: a shared item is counted once.

Where a part is a `!function` (its jackknife form may be degenerate: a fold at 50 taken at 50 has every delete-one
value equal, so ψ = 0 and a group's error 0.000, issue 63), the jackknife form keeps its statistic (`Linearized.
redraw`) and a group or difference over it keeps its rule (`redrawn_by`): its errors are then the cluster bootstrap
of the whole aggregate, each `!function` part recomputed on the rows drawn and each smooth part by its first-order
form, the rule applied to them (`Linearized.error`).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from harness.uncertainty.bootstrap import DEFAULT_ITERS, redraw_error, value_or_nan
from harness.uncertainty.variance import ClusteredError, design_from_keys, influence_error

T = TypeVar("T")
Keys = tuple[Hashable, ...]


@dataclass(frozen=True)
class Linearized:
    """An aggregate in first-order form: `estimate`, and per row its identity (`rows`, unique: "task/sample id"), its
    cluster keys (`keys`) and its influence (`influence`, summing to 0); `method` says how it was linearized.
    `plain_variance` / `plain_factor`: the aggregate's own i.i.d. variance and its factor where it is not
    n/(n-1) Σ ψ² (a ratio of sums)."""

    estimate: float
    rows: tuple[str, ...]
    keys: tuple[Keys, ...]
    influence: np.ndarray
    method: str
    plain_variance: float | None = None
    plain_factor: float | None = None
    # the aggregate recomputed on redrawn rows (how many times each of `rows` is drawn): a `!function`'s statistic,
    # or a group's rule over its parts redrawn; None: smooth, its first-order form is its error
    redraw: Callable[[np.ndarray], float] | None = None

    def redrawn(self, counts: np.ndarray) -> float:
        """Its value on rows drawn `counts` times each: recomputed where it can be, else to first order,
        θ̂ + Σ_i counts_i ψ_i."""
        if self.redraw is not None:
            return self.redraw(counts)
        return self.estimate + float(counts @ self.influence)

    def error(self, iters: int = DEFAULT_ITERS) -> ClusteredError:
        """Its plain and clustered errors, clusters and design effect: from its first-order form
        (`harness.uncertainty.variance.influence_error`), or, where it can be recomputed on redrawn rows, the
        seeded cluster bootstrap (`redraw_error`, `iters` draws), which needs no smoothness."""
        if self.redraw is not None:
            seed = zlib.crc32("\n".join(self.rows).encode())
            found = redraw_error(self.redraw, design_from_keys(self.keys), iters, seed)
            return replace(found, method=f"{self.method}, cluster bootstrap ({iters} draws)")
        return influence_error(
            self.influence,
            design_from_keys(self.keys),
            plain_variance=self.plain_variance,
            plain_factor=self.plain_factor,
            method=self.method,
        )


def _checked(
    rows: Sequence[str], keys: Sequence[Sequence[Hashable]], n: int
) -> tuple[tuple[str, ...], tuple[Keys, ...]]:
    if len(rows) != n or len(keys) != n:
        raise ValueError(f"{n} values, {len(rows)} row ids and {len(keys)} key lists")
    if len(set(rows)) != n:
        raise ValueError("row ids repeat: each row must be named once")
    return tuple(rows), tuple(tuple(k) for k in keys)


def linearize_mean(
    values: Sequence[float] | np.ndarray, rows: Sequence[str], keys: Sequence[Sequence[Hashable]]
) -> Linearized:
    """The mean of `values`. Edge cases: no rows gives a NaN estimate and no influences; a NaN value makes the
    estimate and every influence NaN."""
    x = np.asarray(values, dtype=float)
    names, row_keys = _checked(rows, keys, len(x))
    if not len(x):
        return Linearized(math.nan, names, row_keys, x, "mean")
    mean = float(x.mean())
    return Linearized(mean, names, row_keys, (x - mean) / len(x), "mean")


def linearize_sum(
    values: Sequence[float] | np.ndarray, rows: Sequence[str], keys: Sequence[Sequence[Hashable]]
) -> Linearized:
    """The sum of `values` over a fixed set of rows. Edge cases: no rows sums to 0.0 with no influences."""
    x = np.asarray(values, dtype=float)
    names, row_keys = _checked(rows, keys, len(x))
    if not len(x):
        return Linearized(0.0, names, row_keys, x, "sum")
    return Linearized(float(x.sum()), names, row_keys, x - x.mean(), "sum")


def linearize_ratio(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    rows: Sequence[str],
    keys: Sequence[Sequence[Hashable]],
) -> Linearized:
    """Σ numerators / Σ denominators, ψ_i = (a_i - θ̂ b_i) / Σb; the plain variance p(1-p)/Σb (each unit a trial).

    Edge cases: no denominator at all (no rows, or every b 0) gives a NaN estimate and NaN influences; rows with b = 0
    and a = 0 have ψ 0 (they add nothing); a ratio outside [0, 1] gives a plain variance of 0 (p(1-p) floored)."""
    a = np.asarray(numerators, dtype=float)
    b = np.asarray(denominators, dtype=float)
    names, row_keys = _checked(rows, keys, len(a))
    total = float(b.sum())
    if not total:
        return Linearized(math.nan, names, row_keys, np.full(len(a), math.nan), "ratio of sums (influence function)")
    ratio = float(a.sum()) / total
    return Linearized(
        ratio,
        names,
        row_keys,
        (a - ratio * b) / total,
        "ratio of sums (influence function)",
        plain_variance=max(ratio * (1 - ratio), 0.0) / total,
        plain_factor=1.0,
    )


def linearize_by_jackknife(
    statistic: Callable[[list[T]], float], values: Sequence[T], rows: Sequence[str], keys: Sequence[Sequence[Hashable]]
) -> Linearized:
    """Any statistic of a list of row values, by the delete-one jackknife: ψ_i = (n-1)/n (θ̄_(·) - θ̂_(-i)).

    `statistic` is called n + 1 times, on the whole list and on each list less one row (order kept), so its cost is
    n times the statistic's. Edge cases: no rows gives its value on [] (NaN if it fails) and no influences; one row
    gives an influence 0; a leave-one-out value that is NaN or raises makes every influence NaN (the error is then
    unknown, not guessed)."""
    items = list(values)
    names, row_keys = _checked(rows, keys, len(items))
    n = len(items)
    estimate = value_or_nan(statistic, items)
    if n < 2:
        return Linearized(estimate, names, row_keys, np.zeros(n), "jackknife")
    left_out = np.array([value_or_nan(statistic, items[:i] + items[i + 1 :]) for i in range(n)])
    if not np.all(np.isfinite(left_out)):
        return Linearized(estimate, names, row_keys, np.full(n, math.nan), "jackknife")
    influence = (n - 1) / n * (left_out.mean() - left_out)
    return Linearized(estimate, names, row_keys, influence, "jackknife", redraw=_redraw(statistic, items))


def _redraw(statistic: Callable[[list[T]], float], items: list[T]) -> Callable[[np.ndarray], float]:
    held = np.empty(len(items), dtype=object)  # the items themselves, picked by numpy (a list comprehension's cost)
    held[:] = items
    return lambda counts: value_or_nan(statistic, held[np.repeat(np.arange(len(items)), counts)].tolist())


def combine(parts: Sequence[tuple[float, Linearized]], estimate: float, method: str = "delta method") -> Linearized:
    """Σ_j w_j · part_j as one aggregate with value `estimate`: the influences of each row summed over the parts that
    hold it (a row is named by its id; its keys are taken from the first part naming it).

    Edge cases: no parts gives no rows; a weight of 0 leaves the part's rows in with no influence (their clusters
    still count); a NaN weight or influence makes the rows it touches NaN, and so the errors."""
    position: dict[str, int] = {}
    keys: list[Keys] = []
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    for weight, part in parts:
        index = np.empty(len(part.rows), dtype=np.int64)
        for k, (row, row_keys) in enumerate(zip(part.rows, part.keys, strict=True)):
            if row not in position:
                position[row] = len(position)
                keys.append(row_keys)
            index[k] = position[row]
        pieces.append((index, weight * part.influence))
    influence = np.zeros(len(position))
    for index, contribution in pieces:
        np.add.at(influence, index, contribution)
    return Linearized(estimate, tuple(position), tuple(keys), influence, method)


def difference(a: Linearized, b: Linearized) -> Linearized:
    """a - b over the rows of both (paired where they share row ids; a row of one alone enters with its own
    influence), e.g. two runs of one task: its clustered error is the paired difference's (redrawn by its parts
    where either is a `!function`'s: `redrawn_by`)."""
    combined = combine([(1.0, a), (-1.0, b)], a.estimate - b.estimate, "difference")
    return redrawn_by(combined, [a, b], lambda values: float(values[0] - values[1]))


def redrawn_by(combined: Linearized, parts: Sequence[Linearized], rule: Callable[[np.ndarray], float]) -> Linearized:
    """`combined` (a `combine` of `parts`, holding each part's rows), recomputable on redrawn rows where a part is:
    each part's value on its rows among those drawn (`Linearized.redrawn`), and `rule` over the parts' values.
    Unchanged where no part is recomputable (its first-order form is then its error)."""
    if not any(part.redraw is not None for part in parts):
        return combined
    position = {row: i for i, row in enumerate(combined.rows)}
    held = [np.array([position[row] for row in part.rows], dtype=np.int64) for part in parts]  # each part's rows

    def redraw(counts: np.ndarray) -> float:
        values = [part.redrawn(counts[rows]) for part, rows in zip(parts, held, strict=True)]
        return rule(np.array(values, dtype=float))

    return replace(combined, redraw=redraw)


def rule_gradient(rule: Callable[[np.ndarray], float], values: Sequence[float] | np.ndarray) -> np.ndarray:
    """∂rule/∂v_j at `values` by central differences, step 1e-6 · max(1, |v_j|).

    Edge cases: a NaN value has a gradient 0 (a rule that leaves N/A members out does not move with them); a rule
    that is NaN on either side of a step gives that component NaN (a strict rule over a missing member)."""
    v = np.asarray(values, dtype=float)
    gradient = np.zeros(len(v))
    for j in range(len(v)):
        if not math.isfinite(v[j]):
            continue
        step = 1e-6 * max(1.0, abs(v[j]))
        up, down = v.copy(), v.copy()
        up[j] += step
        down[j] -= step
        gradient[j] = (rule(up) - rule(down)) / (2 * step)
    return gradient
