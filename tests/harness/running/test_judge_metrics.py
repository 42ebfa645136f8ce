"""`judge.score` returns the metrics `judge.metrics` declares: all of them, but those the task declares `some_rows:
true` (MMLongBench's `score_nonempty`, none on an empty answer), which a row may lack; the same rule as
`process_results` (`harness.running.task.task.Task.score`)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from harness.api import GenerationSettings
from harness.errors import TaskConfigError
from harness.models.registry import get_model_class
from harness.running.task.judge import JudgeSpec, judge_samples
from tasks.mmlongbench.scoring import parse_judge_json


def judged(returned: Mapping[str, float], some_rows: frozenset[str] = frozenset()) -> dict[str, float] | None:
    spec = JudgeSpec(
        prompts=lambda doc, response: {"only": "judge this"},
        parse=parse_judge_json,
        score=lambda doc, response, verdicts: dict(returned),
        metrics=("fluency_f1", "score_nonempty"),
        model=None,
        settings=GenerationSettings(max_gen_toks=16),
    )
    judge = get_model_class("constant").from_args({"answer": '{"ok": 1}'})
    (outcome,) = judge_samples(spec, "t", judge, [("s", 0, {}, "answer")], progress=False, some_rows=some_rows)
    return outcome.metrics


def test_every_declared_metric_is_returned() -> None:
    assert judged({"fluency_f1": 0.5, "score_nonempty": 0.5}) == {"fluency_f1": 0.5, "score_nonempty": 0.5}


def test_a_metric_left_out_is_refused_unless_the_task_declares_it_some_rows() -> None:
    with pytest.raises(TaskConfigError, match=r"judge.score returned \['fluency_f1'\]"):
        judged({"fluency_f1": 0.5})
    assert judged({"fluency_f1": 0.5}, some_rows=frozenset({"score_nonempty"})) == {"fluency_f1": 0.5}
    with pytest.raises(TaskConfigError, match=r"judge.score returned \['score_nonempty'\]"):
        judged({"score_nonempty": 0.5}, some_rows=frozenset({"score_nonempty"}))


def test_an_undeclared_metric_is_refused() -> None:
    with pytest.raises(TaskConfigError, match="judge.score returned"):
        judged({"fluency_f1": 0.5, "score_nonempty": 0.5, "other": 1.0})
