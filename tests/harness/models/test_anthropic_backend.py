"""The `anthropic` backend against a loopback server that speaks the Anthropic Messages API
(tests/support/anthropic_server.py): what it sends, compared field by field with what MMNeedle's `needle.py` sends
through the same SDK for the same row, and the retries, timeouts and errors it shares with the `openai` backend."""

from __future__ import annotations

import base64

import pytest

from harness.api import GenerationSettings
from harness.models.backends.anthropic_messages.model import OFFICIAL_API_VERSION, AnthropicModel
from harness.models.registry import get_model_class
from tests.support.anthropic_server import AnthropicServer
from tests.support.model_requests import make_request
from tests.support.official_api_calls import needle_side_by_side
from tests.support.provider_tests import (
    QUICK_RETRIES,
    api_model,
    check_malformed_and_huge_refused,
    check_one_sample_problem,
    check_rejected_key_stops_the_run,
    check_retried_once,
    check_unreachable_server_stops_at_once,
)

anthropic = pytest.importorskip("anthropic")


def _model(server: AnthropicServer | str, **args: str) -> AnthropicModel:
    return api_model("anthropic", AnthropicModel, server, QUICK_RETRIES, **args)


def anthropic_pin() -> str:
    """The `anthropic-version` the installed SDK sends of its own."""
    import anthropic

    return str(anthropic.Anthropic(api_key="x").default_headers["anthropic-version"])


def _bodies(server: AnthropicServer) -> list[dict]:
    return [r.body for r in server.received if r.path == "/v1/messages"]


def test_the_request_is_needle_pys():
    """Field by field, as MMNeedle's Claude 3 Opus was called: its images in order as base64 JPEG blocks, the
    instruction after them, max_tokens 300, no temperature."""
    official, ours, response = needle_side_by_side(
        lambda base_url: _model(base_url, model="claude-3-opus-20240229", send_temperature="false")
    )
    assert response.text == "answer:r1" and response.finish_reason == "end_turn"
    assert response.usage == {"input_tokens": 13, "output_tokens": 3}
    (want,), (got,) = _bodies(official), _bodies(ours)
    assert got == want
    (sent,) = [r for r in ours.received if r.path == "/v1/messages"]
    (sent_officially,) = [r for r in official.received if r.path == "/v1/messages"]
    # needle.py's pinned SDK sent 2023-06-01, which ours sends; needle.py here runs through the installed SDK, which
    # sends its own pin (what `api_version=sdk` sends: the test below)
    assert sent.headers["anthropic-version"] == OFFICIAL_API_VERSION == "2023-06-01"
    assert sent_officially.headers["anthropic-version"] == anthropic_pin()
    key = sent.headers.get("x-api-key") or sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert key == "test-key"


def test_defaults_send_only_what_the_task_asks(anthropic_server, png_blue):
    """The task's temperature (greedy: 0), its stop strings, a system turn as `system`, each image's own media type;
    no top_p, no seed (the Messages API takes none)."""
    settings = GenerationSettings(max_gen_toks=17, until=("Caption",), seed=3)
    request = make_request("s1", ["#id=s1 Look:", png_blue, ""], system="Be brief.", settings=settings)
    model = _model(anthropic_server)
    try:
        assert model.generate([request])[0].text == "answer:s1"
    finally:
        model.close()
    (body,) = _bodies(anthropic_server)
    # The API version sent is needle.py's (its pinned SDK sent 2023-06-01), and the results' backend figures record it
    (sent,) = [r for r in anthropic_server.received if r.path == "/v1/messages"]
    assert sent.headers["anthropic-version"] == "2023-06-01" == model.statistics()["anthropic_version"]
    assert {k: v for k, v in body.items() if k != "messages"} == {
        "model": "claude-test",
        "max_tokens": 17,
        "system": "Be brief.",
        "temperature": 0.0,
        "stop_sequences": ["Caption"],
    }
    blocks = body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]  # the empty text is left out
    assert blocks[1]["source"]["media_type"] == "image/png"
    assert base64.b64decode(blocks[1]["source"]["data"]) == png_blue


@pytest.mark.parametrize("scenario", ["rate_once", "overloaded_once", "fail_once", "timeout_once"])
def test_retried_until_answered(anthropic_server, scenario):
    check_retried_once(_model, anthropic_server, scenario)


@pytest.mark.parametrize(
    ("scenario", "text", "error", "refused"),
    [
        ("refusal", None, "refused: the model refused (stop_reason refusal)", True),
        ("empty", "", None, False),
        ("bad_request", None, "provider_error: HTTP 400: image could not be processed", False),
        ("always_500", None, "provider_error: gave up after 4 attempts: HTTP 500: internal error", False),
    ],
)
def test_one_sample_problems(anthropic_server, scenario, text, error, refused):
    check_one_sample_problem(_model(anthropic_server), scenario, text, error, refused)


def test_malformed_and_huge_answers_are_refused_unread(anthropic_server):
    check_malformed_and_huge_refused(_model(anthropic_server, max_response_bytes="100000"))


def test_a_rejected_key_stops_the_run(anthropic_server):
    check_rejected_key_stops_the_run(_model(anthropic_server, concurrency="1"), anthropic_server)


def test_an_unreachable_server_stops_at_once():
    check_unreachable_server_stops_at_once("anthropic")


def test_settings_are_checked():
    with pytest.raises(ValueError, match="no API key"):
        get_model_class("anthropic").from_args({"model": "m", "base_url": "https://example.invalid"})
    with pytest.raises(ValueError, match="temperature must be in"):
        get_model_class("anthropic").from_args({"model": "m", "base_url": "http://127.0.0.1:1", "temperature": "2"})


def test_what_is_sent_is_part_of_the_models_identity(anthropic_server):
    """The response cache keys answers by the model's identity: two runs that send different fields never share."""
    assert _model(anthropic_server).identity() != _model(anthropic_server, send_temperature="false").identity()


def test_api_version_sdk_sends_the_installed_sdks_own_pin(anthropic_server, png_blue):
    """`api_version=sdk`: the header the installed SDK pins (not needle.py's), recorded as sent."""
    pin = anthropic_pin()
    model = _model(anthropic_server, api_version="sdk")
    try:
        model.generate([make_request("s1", ["#id=s1 Look:", png_blue, ""])])
    finally:
        model.close()
    (sent,) = [r for r in anthropic_server.received if r.path == "/v1/messages"]
    assert sent.headers["anthropic-version"] == pin == model.statistics()["anthropic_version"]
