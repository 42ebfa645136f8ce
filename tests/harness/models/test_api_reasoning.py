"""How much an API model is asked to reason, sent only when given and always recorded (issue 74, item 2): OpenAI's
`reasoning_effort`, Gemini's `thinking_config`, Anthropic's `thinking`; where nothing is sent, the results' backend
figures say what the provider documents as the model's default, and where it says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import GenerationSettings
from harness.models.registry import get_model_class
from tests.support.model_requests import make_request

TASK = "mmneedle_m1_n2_k1_pos"
LOOPBACK = "api_key=test-key,timeout=2,backoff=0.01,max_backoff=0.05,max_retries=1"


@pytest.mark.parametrize(("given", "sent", "record"), [("", None, "none"), (",reasoning_effort=high", "high", None)])
def test_a_gpt5_run_records_its_reasoning_effort(
    given: str, sent: str | None, record: str | None, chat_server, mmneedle_dir: Path, tmp_path: Path, harness
) -> None:
    pytest.importorskip("openai")
    run = harness(
        *("--tasks", TASK, "--model", "gpt-5.2", "--limit", "1", "--data_dir", mmneedle_dir),
        *("--model_args", f"base_url={chat_server.base_url},{LOOPBACK}{given}", "--output_path", tmp_path),
    )
    assert run.code == 0, run.err
    assert {r.body.get("reasoning_effort") for r in chat_server.received} == {sent}
    (results,) = tmp_path.rglob("results_*.json")
    reasoning = json.loads(results.read_text())["config"]["backend_stats"]["reasoning"]
    assert (reasoning["setting"], reasoning["sent"], reasoning.get("provider_default")) == (
        "reasoning_effort",
        sent,
        record,
    )
    if record is not None:  # where the default comes from, in OpenAI's words
        assert "GPT-5.2" in reasoning["source"]


def test_gemini_thinking_is_sent_as_given_and_gemini_3_s_default_recorded() -> None:
    pytest.importorskip("google.genai")
    gemini = get_model_class("gemini")
    request = make_request("r1", ["Which one?"], settings=GenerationSettings(max_gen_toks=8))
    asked = gemini.from_args({"model": "gemini-3-flash-preview", "api_key": "k", "thinking_level": "low"})
    config = asked.config(request).thinking_config
    assert config is not None and config.thinking_level.value == "LOW" and config.thinking_budget is None
    assert asked.statistics()["reasoning"] == {"setting": "thinking_config", "sent": {"thinking_level": "low"}}
    assert asked.identity()["thinking_config"] == {"thinking_level": "low"}
    plain = gemini.from_args({"model": "gemini-3-flash-preview", "api_key": "k"})
    assert plain.config(request).thinking_config is None and "thinking_config" not in plain.identity()
    assert plain.statistics()["reasoning"]["provider_default"] == "high"
    assert "reasoning" not in gemini.from_args({"model": "gemini-2.0-flash-001", "api_key": "k"}).statistics()
    with pytest.raises(ValueError, match="thinking_level must be one of minimal, low, medium, high"):
        gemini.from_args({"model": "gemini-3-flash-preview", "api_key": "k", "thinking_level": "deep"})


def test_claude_s_thinking_is_recorded_sent_or_off() -> None:
    pytest.importorskip("anthropic")
    anthropic = get_model_class("anthropic")
    off = anthropic.from_args({"model": "claude-opus-4-6", "api_key": "k"}).statistics()["reasoning"]
    assert (off["setting"], off["sent"], off["provider_default"]) == ("thinking", None, "disabled")
    on = anthropic.from_args({"model": "claude-opus-4-6", "api_key": "k", "thinking_budget": "2048"}).statistics()
    assert on["reasoning"] == {"setting": "thinking", "sent": {"type": "enabled", "budget_tokens": 2048}}
