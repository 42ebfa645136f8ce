"""The API models of 2026 (issue 61, item 3): GPT-5.x, Gemini 3 and Claude 4.x, and the judges VLMEvalKit and
MMLongBench V1.1 name, each sent as its provider documents it. What each alias sends is compared, body for body, with
the request the provider's own SDK builds for the same call (openai-python's `chat.completions.create`, Anthropic's
`messages.create`) at the loopback servers; each family's image rule with the provider's worked examples; what the
cost estimate prices an answer at, where no cap is sent."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.api import GenerationSettings
from harness.models.aliases import ALIASES, resolve
from harness.models.families import family_of_api_name
from harness.models.registry import get_model_class
from harness.run.models import judge_args
from harness.run.plan import ModelChoice
from harness.running.screen_only import screen_model
from tests.support.anthropic_server import AnthropicServer
from tests.support.chat_server import ChatServer
from tests.support.model_requests import make_request

LOOPBACK = {"api_key": "test-key", "timeout": "2", "backoff": "0.01", "max_backoff": "0.05", "max_retries": "1"}
TEXT = "#id=r1 #do=ok Which one?"


def _alias_model(name: str, base_url: str, **given: str):
    backend, args, _ = resolve(name, {**LOOPBACK, "base_url": base_url, **given}, [])
    return get_model_class(backend).from_args(args)


def _openai_bodies(server: ChatServer) -> list[dict]:
    return [r.body for r in server.received if r.path.endswith("/chat/completions")]


def _sdk_chat(server: ChatServer, **call: object) -> dict:
    """The body openai-python itself posts for `call`."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)
    client.chat.completions.create(**call)
    return _openai_bodies(server)[-1]


@pytest.mark.parametrize(
    ("alias", "given", "sdk_fields"),
    [
        # GPT-5.5: no temperature, no seed, no cap (its reasoning counts against max_completion_tokens)
        ("gpt-5.5", {}, {}),
        ("gpt-5.5", {"reasoning_effort": "low", "token_cap": "task"}, {"reasoning_effort": "low", "cap": True}),
        ("gpt-5.2", {"token_cap": "2048"}, {"max_completion_tokens": 2048}),
        # VLMEvalKit's judge: its cap as max_completion_tokens, no temperature
        ("gpt-5.5-2026-04-24", {}, {"cap": True}),
    ],
)
def test_gpt5_aliases_send_what_openai_python_sends(
    alias: str, given: dict[str, str], sdk_fields: dict[str, object], chat_server: ChatServer
) -> None:
    """A greedy request with a seed, as a task sends it: the alias's body is the SDK's for the same call, without
    `max_tokens`, `temperature` or `seed`, which GPT-5.x refuse or no official call sent."""
    model = _alias_model(alias, chat_server.base_url, **given)
    request = make_request("r1", [TEXT], settings=GenerationSettings(max_gen_toks=1024, temperature=0.0, seed=7))
    (response,) = model.generate([request])
    assert response.text == "answer:r1"
    (ours,) = _openai_bodies(chat_server)
    call: dict[str, object] = {"model": ALIASES[alias].args["model"], "messages": ours["messages"]}
    if sdk_fields.pop("cap", False):
        call["max_completion_tokens"] = 1024
    official = _sdk_chat(chat_server, **call, **sdk_fields)
    assert ours == official
    assert not {"max_tokens", "temperature", "seed"} & set(ours)


def test_gpt55s_images_go_at_detail_high(chat_server: ChatServer, png_blue: bytes) -> None:
    """Omitted, GPT-5.5 takes an image at `original` (up to 10,000 patches): its alias sends `high`."""
    model = _alias_model("gpt-5.5", chat_server.base_url)
    request = make_request("r1", [TEXT, png_blue])
    model.generate([request])
    (body,) = _openai_bodies(chat_server)
    parts = [p for p in body["messages"][0]["content"] if p["type"] == "image_url"]
    assert [p["image_url"]["detail"] for p in parts] == ["high"]


@pytest.mark.parametrize(
    ("alias", "given", "want"),
    [
        # sampled with both: the temperature alone (Claude 4.5+ refuse both)
        ("claude-sonnet-4.5", {}, {"max_tokens": 64, "temperature": 0.7}),
        # extended thinking: its budget on top of the answer's cap, and no sampling field
        (
            "claude-opus-4.5",
            {"thinking_budget": "2048"},
            {"max_tokens": 64 + 2048, "thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
    ],
)
def test_claude4_aliases_send_what_anthropics_sdk_sends(
    alias: str, given: dict[str, str], want: dict[str, object], anthropic_server: AnthropicServer
) -> None:
    anthropic = pytest.importorskip("anthropic")
    model = _alias_model(alias, anthropic_server.base_url, **given)
    settings = GenerationSettings(max_gen_toks=64, temperature=0.7, top_p=0.9, do_sample=True)
    (response,) = model.generate([make_request("r1", [TEXT], settings=settings)])
    assert response.text == "answer:r1"
    bodies = [r.body for r in anthropic_server.received if r.path == "/v1/messages"]
    ours = bodies[-1]
    client = anthropic.Anthropic(api_key="test-key", base_url=anthropic_server.base_url, max_retries=0)
    sampling = {k: want.pop(k) for k in ("temperature",) if k in want}
    client.messages.create(
        model=ALIASES[alias].args["model"],
        messages=ours["messages"],
        extra_body=sampling or None,
        **want,  # type: ignore[arg-type]
    )
    official = [r.body for r in anthropic_server.received if r.path == "/v1/messages"][-1]
    assert ours == official and "top_p" not in ours


def test_a_thinking_budget_below_the_apis_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="thinking_budget"):
        get_model_class("anthropic").from_args({"model": "claude-opus-4-5-20251101", "thinking_budget": "512"})


def test_gemini3_sends_no_temperature_and_no_cap() -> None:
    """Gemini 3's guide: keep the temperature at its default (1.0); thinking spends a cap, so none is sent (as the
    2.5 models'), and each answer is priced at the model's output limit."""
    pytest.importorskip("google.genai")
    for name in ("gemini-3.1-pro-preview", "gemini-3-pro-preview", "gemini-3-flash-preview"):
        model = _alias_model(name, "http://127.0.0.1:9")
        config = model.config(make_request("r1", [TEXT], settings=GenerationSettings(max_gen_toks=128, seed=3)))
        assert config.temperature is None and config.max_output_tokens is None and config.seed is None, name
        cap = screen_model("gemini", dict(ALIASES[name].args)).output_cap
        assert cap.of(128) == 65536 and "output_limit=65,536" in cap.note, name


@pytest.mark.parametrize(
    ("served", "size", "settings", "tokens"),
    [
        # OpenAI's vision guide, its worked examples of the 1,536-patch budget (GPT-5.2's)
        ("gpt-5.2-2025-12-11", (1024, 1024), {}, 1024),
        ("gpt-5.2-2025-12-11", (1800, 2400), {}, 1452),
        # GPT-5.5: 2,500 patches and 2,048 px at high (1,536 x 2,048, then x 0.8907: 1,368 x 1,824, 43 x 57 patches);
        # at original (its default) 10,000 and 6,000 px: the whole image, 57 x 75
        ("gpt-5.5-2026-04-23", (1800, 2400), {"image_detail": "high"}, 43 * 57),
        ("gpt-5.5-2026-04-23", (1800, 2400), {}, 57 * 75),
        ("gpt-5.5-2026-04-23", (1024, 1024), {"image_detail": "low"}, 256),  # a 512-px version
        # GPT-5's tiles: 70 + 140 a tile (a 1024 x 1024 image at high: 768 x 768, four tiles)
        ("gpt-5-2025-08-07", (1024, 1024), {"image_detail": "high"}, 70 + 140 * 4),
        ("gpt-5-2025-08-07", (1024, 1024), {"image_detail": "low"}, 70),
        # Gemini 3: by media resolution, 1,120 by default
        ("gemini-3.1-pro-preview", (4000, 3000), {}, 1120),
        ("gemini-3-flash-preview", (64, 64), {"media_resolution": "low"}, 280),
        # Claude 4.x: Anthropic's rule for its Claude 3 and 4 models ((1000 x 1000) / 750, its worked example)
        ("claude-sonnet-4-5-20250929", (1000, 1000), {}, 1334),
    ],
)
def test_each_image_rule_as_its_provider_publishes_it(
    served: str, size: tuple[int, int], settings: dict[str, str], tokens: int
) -> None:
    family = family_of_api_name(served)
    assert family is not None
    assert family.image_tokens(*size, settings) == tokens


def test_a_gpt5_answer_sent_no_cap_is_priced_at_the_models_output_limit() -> None:
    cap = screen_model("openai", dict(ALIASES["gpt-5.5"].args)).output_cap
    assert cap.of(128) == 128000 and "token_cap=none" in cap.note
    assert screen_model("openai", dict(ALIASES["gpt-5.5-2026-04-24"].args)).output_cap.of(1024) == 1024
    loose = screen_model("openai", {"model": "gpt-5.5-2026-04-23", "token_cap": "none"}).output_cap
    assert loose.of(128) is None and "nothing bounds" in loose.note  # said to be unbounded, not priced at a cap
    thinking = screen_model("anthropic", {"model": "claude-opus-4-6", "thinking_budget": "4096"}).output_cap
    assert thinking.of(128) == 128 + 4096


def test_a_tasks_judge_model_takes_its_aliases_arguments_under_those_given() -> None:
    """`--judge_model openai` on a VLMEvalKit DocVQA task: its judge, gpt-5.5-2026-04-24, is sent as its alias says
    (no temperature, max_completion_tokens); what `--judge_args` gives stays over it; a judge model without an alias
    (V1.1's Doubao-Seed-1.8) gets the judge's arguments alone."""
    given = {"base_url": "https://gateway.example/v1", "send_seed": "true"}
    plan = SimpleNamespace(judge=ModelChoice("openai", "openai", dict(given), None, dict(given)))
    args = judge_args(plan, "gpt-5.5-2026-04-24")  # type: ignore[arg-type]
    assert args["model"] == "gpt-5.5-2026-04-24" and args["send_temperature"] == "false"
    assert args["token_param"] == "max_completion_tokens" and args["send_seed"] == "true"
    assert judge_args(plan, "Doubao-Seed-1.8") == {**given, "model": "Doubao-Seed-1.8"}  # type: ignore[arg-type]
    assert judge_args(plan, None) == given  # type: ignore[arg-type]
