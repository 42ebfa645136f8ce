"""Fuzz: the inputs of a judge's agreement, `harness compare` of a judge swap (issue 64). Any two judges' metric
values (read from a journal as `number` reads them: bools, integers past a float's range, infinities, a few rows or
one value in all), any clusters, any level of measurement a task declares and any recorded judge end in the rows of
`agreement_rows` (statistics finite or NaN, intervals ordered) or in one `UserError` line naming the task's YAML; never
another exception, never a hang."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.config.task_config import MetricSpec
from harness.errors import UserError
from harness.outputs.compare.judge_agreement import JudgedPairs, agreement_rows, judge_names, measurement_of
from harness.outputs.compare.paired_runs import number
from harness.outputs.compare.stats import CompareOptions
from harness.uncertainty.agreement import MEASUREMENTS

from .conftest import JSON, LONG_INTEGERS, bounded, budget, counted

VALUES = st.one_of(
    st.sampled_from([0, 1, True, False, 0.5, 100, -1, 1e308, -1e308, math.inf, -math.inf, math.nan, None, "1"]),
    st.integers(1, 5),
    st.floats(allow_nan=True),
    LONG_INTEGERS.filter(lambda digits: len(digits) < 4300).map(int),  # past that, no JSON reader makes it
    JSON,
)
JUDGES = st.dictionaries(st.sampled_from(["model", "served_model", "server", "args", "x"]), JSON, max_size=4)


@st.composite
def judged_pairs(draw: st.DrawFn) -> JudgedPairs:
    rows = draw(st.lists(st.tuples(VALUES, VALUES, st.integers(0, 6)), max_size=40))
    a, b, keys, a_only, b_only = [], [], [], 0, 0
    for x_raw, y_raw, cluster in rows:  # as `swapped_pairs` reads each paired row
        x, y = number(x_raw), number(y_raw)
        a_only, b_only = a_only + (x is not None and y is None), b_only + (x is None and y is not None)
        if x is not None and y is not None:
            a.append(x)
            b.append(y)
            keys.append((f"doc{cluster}",))
    measurement = draw(st.sampled_from(MEASUREMENTS))
    judge_a = draw(JUDGES)
    judge_b = draw(st.one_of(st.just(judge_a), JUDGES))
    task = draw(st.sampled_from(["t1", "t2"]))
    return JudgedPairs(task, "score", measurement, "drawn", judge_a, judge_b, a, b, keys, a_only, b_only)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # values near 1e308: numpy's overflow, a NaN in the row
@budget(fuzz=600, ci=30)  # each a bootstrap of kappa and alpha
@given(judged=st.lists(judged_pairs(), min_size=1, max_size=3), iters=st.integers(0, 30), level=st.floats(0.5, 0.999))
def test_any_judges_values_give_agreement_rows(judged: list[JudgedPairs], iters: int, level: float) -> None:
    counted()
    with bounded(60, "agreement"):
        rows = agreement_rows(judged, CompareOptions(level=level, bootstrap_iters=iters))
    assert len(rows) >= len(judged)
    for row in rows:
        for low, high in (("kappa_low", "kappa_high"), ("alpha_low", "alpha_high")):
            if not (math.isnan(row[low]) or math.isnan(row[high])):
                assert row[low] <= row[high], row
        assert math.isnan(row["kappa"]) or row["kappa"] <= 1.0 + 1e-9, row  # 1 at most: agreeing on every row
        assert math.isnan(row["alpha"]) or row["alpha"] <= 1.0 + 1e-9, row
        assert isinstance(row["judge_a"], str) and isinstance(row["judge_b"], str)


@budget(fuzz=2000, ci=30)
@given(declared=st.one_of(st.sampled_from(MEASUREMENTS), JSON), aggregation=st.one_of(st.sampled_from(["mean"]), JSON))
def test_any_declared_level_of_measurement_is_read_or_one_line(declared: object, aggregation: object) -> None:
    counted()
    spec = MetricSpec("score", aggregation, kwargs={"level_of_measurement": declared})  # type: ignore[arg-type]
    try:
        measurement, why = measurement_of(spec, "tasks/t.yaml: task 't'")
    except UserError as err:
        assert str(err).startswith("tasks/t.yaml: task 't': metric 'score'") and "\n" not in str(err), err
        return
    assert measurement in MEASUREMENTS and why
    if declared is not None:
        assert measurement == declared


@budget(fuzz=2000, ci=30)
@given(a=JUDGES, b=JUDGES)
def test_any_recorded_judges_are_named(a: dict[str, object], b: dict[str, object]) -> None:
    counted()
    with bounded(5, "judge names"):
        first, second = judge_names(a, b)
    assert isinstance(first, str) and isinstance(second, str)


@budget(fuzz=2000, ci=30)
@given(value=VALUES)
@example(value=10**400)  # once an OverflowError out of `number` (`harness compare` on such a journal)
def test_any_metric_value_is_one_number_or_none(value: object) -> None:
    counted()
    found = number(value)
    assert found is None or (isinstance(found, float) and not math.isnan(found))
