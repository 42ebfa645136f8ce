"""The decay of accuracy with context length (spec §3.6): the paper's "exponential" fit and the alternatives.

The paper reports r² and p-value stars of an "exponential curve fit" per model and task (Tables 2-3) and never
says how it fitted; the later version calls the trend logarithmic. Three forms, all reported:

- `exp`: least squares of ln(y) on x (`scipy.stats.linregress`; y floored at 1e-3 so zeros can be logged):
  y = A e^(b x); r² and p are the regression's. The default, compared with Tables 2-3.
- `log`: least squares of y on ln(x): y = a + b ln(x).
- `exp_offset`: y = a e^(-b x) + c by nonlinear least squares (`scipy.optimize.curve_fit`); r² = 1 - SSres/SStot,
  no p-value.

x is the visual context length (the paper's x axis), or for "Haystack-k" rows the number of digits at length k.
The paper's down arrow marks a fit whose accuracy rises with x (`rising`); a series is sub-chance when more than
half of its points are below the random baseline (Appendix E).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

FLOOR = 1e-3
FORMS = ("exp", "log", "exp_offset")


@dataclass(frozen=True)
class Fit:
    form: str
    r2: float
    p: float | None
    slope: float  # the sign says whether y rises with x
    params: tuple[float, ...]

    @property
    def stars(self) -> str:
        """The paper's marks: * p <= 0.05, ** p <= 0.01, *** p <= 0.001."""
        if self.p is None or math.isnan(self.p):
            return ""
        return "***" if self.p <= 0.001 else "**" if self.p <= 0.01 else "*" if self.p <= 0.05 else ""

    @property
    def rising(self) -> bool:
        return self.slope > 0

    def predict(self, x: float) -> float:
        if self.form == "exp":
            return self.params[0] * math.exp(self.params[1] * x)
        if self.form == "log":
            return self.params[0] + self.params[1] * math.log(x)
        a, b, c = self.params
        return a * math.exp(-b * x) + c

    def label(self) -> str:
        """`.924***`, with `↓` before the stars when y rises with x (as the paper prints it)."""
        text = "n/a" if math.isnan(self.r2) else f"{self.r2:.3f}".lstrip("0") if self.r2 < 1 else "1.000"
        return text + ("↓" if self.rising else "") + self.stars


def _linear(x: Sequence[float], y: Sequence[float], form: str, transform_x, transform_y) -> Fit | None:
    from scipy.stats import linregress

    xs = [transform_x(v) for v in x]
    ys = [transform_y(v) for v in y]
    if len(set(xs)) < 2:
        return None
    if len(set(ys)) < 2:  # a flat series: nothing to explain, no decay
        return Fit(form, math.nan, None, 0.0, (ys[0], 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = linregress(xs, ys)
    return Fit(
        form,
        float(result.rvalue) ** 2,
        float(result.pvalue),
        float(result.slope),
        (float(result.intercept), float(result.slope)),
    )


def fit(x: Sequence[float], y: Sequence[float], form: str = "exp") -> Fit | None:
    """The fit of `y` against `x` in one of `FORMS`; None with fewer than three points (or no spread in x)."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} x values, {len(y)} y values")
    if len(x) < 3:
        return None
    if form == "exp":
        found = _linear(x, y, form, float, lambda v: math.log(max(v, FLOOR)))
        if found is None or math.isnan(found.r2):
            return found
        return Fit(form, found.r2, found.p, found.slope, (math.exp(found.params[0]), found.params[1]))
    if form == "log":
        if min(x) <= 0:
            return None
        return _linear(x, y, form, math.log, float)
    if form == "exp_offset":
        return _exp_offset(x, y)
    raise ValueError(f"unknown fit form {form!r}; known: {', '.join(FORMS)}")


def _exp_offset(x: Sequence[float], y: Sequence[float]) -> Fit | None:
    import numpy as np
    from scipy.optimize import curve_fit

    xs, ys = np.asarray(x, float), np.asarray(y, float)
    total = float(((ys - ys.mean()) ** 2).sum())
    if total == 0:
        return Fit("exp_offset", math.nan, None, 0.0, (0.0, 0.0, float(ys[0])))

    def model(v, a, b, c):
        return a * np.exp(-b * v) + c

    start = (float(ys.max() - ys.min()) or 1.0, 1.0 / max(float(xs.mean()), 1.0), float(ys.min()))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            params, _ = curve_fit(model, xs, ys, p0=start, maxfev=20000)
    except (RuntimeError, ValueError):
        return None
    residual = float(((ys - model(xs, *params)) ** 2).sum())
    a, b, c = (float(v) for v in params)
    return Fit("exp_offset", max(0.0, 1 - residual / total), None, -a * b, (a, b, c))


def sub_chance(y: Sequence[float], chance: Sequence[float]) -> bool:
    """More than half of the points below the random baseline (Appendix E's highlight)."""
    return sum(1 for v, c in zip(y, chance, strict=True) if v < c) > len(y) / 2
