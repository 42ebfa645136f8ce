"""A judge stage's prompt is a string (one user message, as every judge sent before) or the messages with their
roles, for an official judge that sent several turns (MMLongBench-Doc's extractor ends on an assistant turn)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.api import GenerationSettings
from harness.errors import TaskConfigError
from harness.models.registry import get_model_class
from harness.running.task.judge import JudgeSpec, judge_samples
from tests.support.chat_server import ChatServer


def spec(prompts: Any) -> JudgeSpec:
    return JudgeSpec(
        prompts=prompts,
        parse=lambda reply: reply,
        score=lambda doc, response, verdicts: {"judged": 1.0},
        metrics=("judged",),
        model=None,
        settings=GenerationSettings(max_gen_toks=16),
    )


def turns(doc: dict, response: str) -> dict[str, Any]:
    return {"only": [{"role": "user", "content": "Read this."}, {"role": "assistant", "content": f"A:{response}"}]}


def test_a_stage_given_as_messages_is_sent_with_their_roles_and_shared_where_equal() -> None:
    server = ChatServer(answer=lambda body: "ok")
    server.start()
    try:
        judge = get_model_class("openai").from_args({"model": "j", "base_url": server.base_url, "api_key": "k"})
        samples: list[tuple[str, int, dict[str, Any], str]] = [
            ("s0", 0, {}, "red"),
            ("s1", 1, {}, "red"),
            ("s2", 2, {}, "blue"),
        ]
        outcomes = judge_samples(spec(turns), "t", judge, samples, progress=False)
        judge.close()
        bodies = [r.body for r in server.received]
    finally:
        server.stop()
    assert [o.metrics for o in outcomes] == [{"judged": 1.0}] * 3
    assert sorted(b["messages"][1]["content"] for b in bodies) == ["A:blue", "A:red"]  # the two reds asked once
    assert [m["role"] for m in bodies[0]["messages"]] == ["user", "assistant"]


@pytest.mark.parametrize(
    "prompt",
    [[], [{"role": "tool", "content": "x"}], [{"role": "user", "content": ["x"]}], [{"role": "user"}], 3],
)
def test_a_prompt_of_neither_form_is_one_line_naming_the_task_stage_and_sample(prompt: Any) -> None:
    judge = get_model_class("constant").from_args({"answer": "ok"})
    with pytest.raises(TaskConfigError, match=r"^task 't': judge.prompts gave stage 'only' of sample 's0' neither"):
        judge_samples(spec(lambda doc, response: {"only": prompt}), "t", judge, [("s0", 0, {}, "x")], progress=False)
