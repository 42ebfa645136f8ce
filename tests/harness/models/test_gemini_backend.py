"""The `gemini` backend against a loopback server that speaks the Gemini API (tests/support/gemini_server.py): what it
sends, compared field by field with what MMLongBench's official wrapper sends through the same SDK for the same row,
and the retries, timeouts and errors it shares with the `openai` backend."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from harness.api import GenerationSettings
from harness.models.backends.gemini.model import GeminiModel
from harness.models.registry import get_model_class
from tests.support.gemini_server import GeminiServer, generation_bodies
from tests.support.model_requests import make_request
from tests.support.official_api_calls import gemini_side_by_side, resolved_uploads
from tests.support.provider_tests import (
    QUICK_RETRIES,
    api_model,
    check_malformed_and_huge_refused,
    check_one_sample_problem,
    check_rejected_key_stops_the_run,
    check_retried_once,
    check_unreachable_server_stops_at_once,
)

genai = pytest.importorskip("google.genai")


def _model(server: GeminiServer | str, **args: str) -> GeminiModel:
    return api_model("gemini", GeminiModel, server, QUICK_RETRIES, **args)


@pytest.mark.parametrize(
    ("served", "limit"),
    [("gemini-2.5-pro-preview-03-25", "none"), ("gemini-2.0-flash-001", "task")],
)
def test_the_request_is_the_official_wrappers(served: str, limit: str):
    """Field by field, with the settings the official run gave each model (`gemini.py:126-136`): temperature and topP
    1.0, one candidate, maxOutputTokens only for 2.0-Flash; each image an RGB PNG uploaded with mime type image/png;
    the prompt's text cut as the wrapper's `re.split` cut it, empty parts included."""
    official, ours, response = gemini_side_by_side(
        served,
        lambda base_url: _model(
            base_url,
            model=served,
            temperature="1.0",
            top_p="1.0",
            candidate_count="1",
            max_output_tokens=limit,
            empty_text_parts="true",
        ),
    )
    assert response.text == "answer:r1"
    (want,), (got,) = generation_bodies(official), generation_bodies(ours)
    assert resolved_uploads(ours, got) == resolved_uploads(official, want)
    assert got["generationConfig"] == want["generationConfig"]
    assert ("maxOutputTokens" in got["generationConfig"]) == (limit == "task")
    assert [p.get("text") for p in got["contents"][0]["parts"]][:2] == ["", None]  # the wrapper's leading empty text
    assert [r.path for r in ours.received if r.path.endswith(":generateContent")] == [
        f"/v1beta/models/{served}:generateContent"
    ]

    def uploads(server: GeminiServer) -> list[tuple[str | None, str | None, Any]]:
        return [
            (
                r.headers.get("x-goog-upload-header-content-type"),
                r.headers.get("x-goog-upload-header-content-length"),
                r.body,
            )
            for r in server.received
            if r.headers.get("x-goog-upload-command") == "start"
        ]

    assert uploads(ours) == uploads(official)
    assert [data for _, data in ours.files.values()] == [data for _, data in official.files.values()]


def test_defaults_send_only_what_the_task_asks(gemini_server, jpeg_red):
    """Without the wrapper's settings: the task's temperature (greedy: 0), its max_gen_toks, its stop strings; no
    topP, no candidateCount, no seed; no empty text parts; a system turn as the system instruction."""
    settings = GenerationSettings(max_gen_toks=17, until=("\n\n",), seed=3)
    request = make_request("s1", ["#id=s1 Look:", jpeg_red, "Where?"], system="Be brief.", settings=settings)
    model = _model(gemini_server)
    try:
        (response,) = model.generate([request])
    finally:
        model.close()
    assert response.ok and response.text == "answer:s1" and response.finish_reason == "STOP"
    assert response.usage == {"prompt_token_count": 11, "candidates_token_count": 3, "total_token_count": 14}
    (body,) = generation_bodies(gemini_server)
    assert body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 17, "stopSequences": ["\n\n"]}
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert [sorted(p) for p in body["contents"][0]["parts"]] == [["text"], ["fileData"], ["text"]]


def test_images_inline_and_in_their_own_bytes(gemini_server, jpeg_red):
    request = make_request("s1", ["#id=s1 Look:", jpeg_red])
    model = _model(gemini_server, images="inline", image_format="original")
    try:
        assert model.generate([request])[0].ok
    finally:
        model.close()
    (body,) = generation_bodies(gemini_server)
    inline = body["contents"][0]["parts"][1]["inlineData"]  # the SDK writes the blob's own keys in snake case
    assert inline["mime_type"] == "image/jpeg" and base64.urlsafe_b64decode(inline["data"]) == jpeg_red
    assert not gemini_server.files  # nothing uploaded


def test_an_image_is_uploaded_once_a_run(gemini_server, jpeg_red, png_blue):
    requests = [make_request(f"s{i}", [f"#id=s{i} Look:", jpeg_red, png_blue], doc_id=i) for i in range(3)]
    model = _model(gemini_server, concurrency="3")
    try:
        assert all(r.ok for r in model.generate(requests))
        assert len(gemini_server.files) == 2 and model.stats["uploads"] == 2
    finally:
        model.close()
    again = _model(gemini_server, reuse_uploads="false")
    try:
        assert again.generate(requests[:1])[0].ok
    finally:
        again.close()
    assert len(gemini_server.files) == 4  # once a request, as the wrapper did


@pytest.mark.parametrize("scenario", ["rate_once", "fail_once", "timeout_once"])
def test_retried_until_answered(gemini_server, scenario):
    check_retried_once(_model, gemini_server, scenario)


def test_an_upload_is_retried(jpeg_red):
    server = GeminiServer(upload_faults=[503])
    server.start()
    model = _model(server)
    try:
        (response,) = model.generate([make_request("s1", ["#id=s1 Look:", jpeg_red])])
    finally:
        model.close()
        server.stop()
    assert response.ok and model.stats["uploads"] == 2 and model.stats["retries"] == 1


@pytest.mark.parametrize(
    ("scenario", "text", "error", "refused"),
    [
        ("blocked", None, "refused: the prompt was blocked (SAFETY)", True),
        ("safety", None, "refused: the answer was stopped (SAFETY)", True),
        ("empty", "", None, False),  # gemini.py:161: no text is the empty answer
        ("thoughts", "answer:s1", None, False),  # a thought part is not the answer
        ("bad_request", None, "provider_error: HTTP 400: image could not be processed", False),
        ("always_500", None, "provider_error: gave up after 4 attempts: HTTP 500: internal error", False),
    ],
)
def test_one_sample_problems(gemini_server, scenario, text, error, refused):
    check_one_sample_problem(_model(gemini_server), scenario, text, error, refused)


def test_malformed_and_huge_answers_are_refused_unread(gemini_server):
    check_malformed_and_huge_refused(_model(gemini_server, max_response_bytes="100000"))


def test_a_rejected_key_stops_the_run(gemini_server):
    check_rejected_key_stops_the_run(_model(gemini_server, concurrency="1"), gemini_server)


def test_an_unreachable_server_stops_at_once():
    check_unreachable_server_stops_at_once("gemini")


def test_settings_are_checked():
    with pytest.raises(ValueError, match="max_output_tokens must be task, none or a positive number"):
        get_model_class("gemini").from_args({"model": "m", "base_url": "http://127.0.0.1:1", "max_output_tokens": "x"})
    with pytest.raises(ValueError, match="no API key"):
        get_model_class("gemini").from_args({"model": "m", "base_url": "https://example.invalid"})


def test_what_the_config_sends_is_part_of_the_models_identity(gemini_server):
    """The response cache keys answers by the model's identity: two runs that send different configs never share."""
    plain, wrapper = _model(gemini_server), _model(gemini_server, temperature="1.0", max_output_tokens="none")
    assert plain.identity() != wrapper.identity()
    assert plain.identity() == _model(gemini_server, reuse_uploads="false").identity()  # the same answers


@pytest.mark.parametrize(
    ("args", "most"),
    [
        ({}, 300),  # the request's max_gen_toks, sent as the cap
        ({"max_output_tokens": "128"}, 128),  # a cap of its own
        ({"max_output_tokens": "none"}, None),  # no cap sent, none known: nothing bounds an answer
        ({"max_output_tokens": "none", "output_limit": "65536"}, 65536),  # the model's own output limit
    ],
)
def test_what_bounds_an_answers_billed_output(args: dict[str, str], most: int | None):
    from harness.running.screen_only import screen_model

    cap = screen_model("gemini", {"model": "gemini-test", **args}).output_cap
    assert cap.of(300) == most and cap.bounded == (most is not None)
    assert ("output_limit" in cap.note) == ("max_output_tokens" in args and args["max_output_tokens"] == "none")


def test_the_aliases_sent_no_cap_are_priced_at_the_models_output_limit():
    from harness.models.aliases import ALIASES
    from harness.running.screen_only import screen_model

    for name, alias in ALIASES.items():
        if alias.backend != "gemini":
            continue
        cap = screen_model("gemini", dict(alias.args)).output_cap
        if alias.args.get("max_output_tokens") == "none":  # 2.0-Flash-Thinking, 2.5-Flash, 2.5-Pro
            assert cap.of(128) == 65536, name
        else:
            assert cap.of(128) == 128 and not cap.note, name


def test_the_output_limit_is_never_sent(gemini_server):
    """`output_limit` only prices an answer: the request, and the model's identity, are the same without it."""
    request = make_request("s1", ["hello"])
    plain, priced = (
        _model(gemini_server, max_output_tokens="none"),
        _model(gemini_server, max_output_tokens="none", output_limit="65536"),
    )
    assert plain.config(request) == priced.config(request) and plain.identity() == priced.identity()
    assert priced.config(request).max_output_tokens is None
    with pytest.raises(ValueError, match="output_limit"):
        _model(gemini_server, output_limit="0")
