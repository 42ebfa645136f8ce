"""An interval's bounds as text, one rule for report.md's cells (`harness.outputs.results.estimates.interval_text`) and
the viewer's (`harness.view.shown.interval_text`): at the precision of the value they bound, never finer."""

from __future__ import annotations


def bounds_text(low: float, high: float, decimals: int, trim: bool = False) -> str:
    """`[0.9, 23.6]`: an interval's bounds at `decimals` decimals, those its point estimate is shown with (a bound is
    never finer than the value it bounds); `trim`: trailing zeros dropped, as a value shown at significant digits
    drops them (`harness.view.shown.number_text`)."""

    def one(bound: float) -> str:
        text = f"{bound:.{decimals}f}"
        if trim and "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if trim and text == "-0" else text

    return f"[{one(low)}, {one(high)}]"
