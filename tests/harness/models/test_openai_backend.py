"""The `openai` backend against a real HTTP server on loopback (tests/support/chat_server.py)."""

from __future__ import annotations

import base64
import hashlib
import time

import pytest

from harness.api import BackendFatalError, GenerationSettings
from harness.models.backends.openai_chat.model import OpenAIChatModel
from harness.models.backends.openai_chat.wire import parse_completion
from harness.models.shared.api_client.replies import image_mime_type, retry_after_seconds
from tests.support.chat_server import ChatServer
from tests.support.model_requests import make_request
from tests.support.provider_tests import QUICK_RETRIES, api_model, closed_port


def _model(server: ChatServer, **args: str) -> OpenAIChatModel:
    return api_model("openai", OpenAIChatModel, server, QUICK_RETRIES, **args)


def _decode_data_url(url: str) -> tuple[str, bytes]:
    head, payload = url.split(",", 1)
    assert head.startswith("data:") and head.endswith(";base64")
    return head[5:-7], base64.b64decode(payload)


def test_request_content_arrives_intact(chat_server, jpeg_red, png_blue, jpeg_green):
    settings = GenerationSettings(max_gen_toks=17, until=("\n\n", "Caption"), seed=3)
    first = make_request(
        "s1",
        ["#id=s1 #do=ok Look:", jpeg_red, "then", png_blue, jpeg_green, "Where is it?"],
        system="You are careful.",
        settings=settings,
    )
    second = make_request("s2", [png_blue, "#id=s2 #do=ok second"], settings=settings, doc_id=1)
    model = _model(chat_server, image_detail="high", concurrency="2")
    try:
        responses = model.generate([first, second])
    finally:
        model.close()

    assert [r.text for r in responses] == ["answer:s1", "answer:s2"]
    assert all(r.ok and r.finish_reason == "stop" for r in responses)
    assert responses[0].usage == {
        "prompt_tokens": 13,
        "completion_tokens": 3,
        "total_tokens": 16,
        "completion_tokens_details.reasoning_tokens": 0,
    }

    (got,) = chat_server.for_sample("s1")
    assert got.path == "/v1/chat/completions"
    assert got.headers["authorization"] == "Bearer test-key"
    body = got.body
    assert body["model"] == "test-vlm"
    assert body["max_tokens"] == 17 and "max_completion_tokens" not in body
    assert body["temperature"] == 0.0 and "top_p" not in body
    assert body["stop"] == ["\n\n", "Caption"]
    assert body["seed"] == 3
    assert body["messages"][0] == {"role": "system", "content": "You are careful."}
    user = body["messages"][1]
    assert user["role"] == "user"
    kinds = [p["type"] for p in user["content"]]
    assert kinds == ["text", "image_url", "text", "image_url", "image_url", "text"]
    images = [_decode_data_url(p["image_url"]["url"]) for p in user["content"] if p["type"] == "image_url"]
    # The original encoded bytes, in prompt order, with the MIME type of their own format.
    assert images == [("image/jpeg", jpeg_red), ("image/png", png_blue), ("image/jpeg", jpeg_green)]
    assert all(p["image_url"]["detail"] == "high" for p in user["content"] if p["type"] == "image_url")
    assert [p["text"] for p in user["content"] if p["type"] == "text"] == [
        "#id=s1 #do=ok Look:",
        "then",
        "Where is it?",
    ]


def test_retries_on_429_500_and_timeouts(chat_server, jpeg_red):
    requests = [
        make_request(sid, [jpeg_red, f"#id={sid} #do={do}"], doc_id=i)
        for i, (sid, do) in enumerate(
            [("r", "rate_once"), ("m", "rate_ms_once"), ("f", "fail_twice"), ("t", "timeout_once"), ("k", "ok")]
        )
    ]
    model = _model(chat_server, concurrency="5", max_backoff="2")  # Retry-After: 1 is within it
    started = time.monotonic()
    try:
        responses = model.generate(requests)
    finally:
        model.close()
    assert time.monotonic() - started < 10
    assert [r.text for r in responses] == ["answer:r", "answer:m", "answer:f", "answer:t", "answer:k"]
    assert {s: chat_server.attempts[s] for s in "rmftk"} == {"r": 2, "m": 2, "f": 3, "t": 2, "k": 1}
    rate = chat_server.for_sample("r")
    assert rate[1].at - rate[0].at >= 0.95  # Retry-After: 1 was honoured
    assert model.stats["retries"] == 1 + 1 + 2 + 1


def test_a_retry_after_date_far_ahead_waits_no_longer_than_max_backoff(chat_server, jpeg_red):
    """`Retry-After: <a date in 2099>` on a 500 once held the request 300 s whatever the client's bounds (issue 41)."""
    model = _model(chat_server, max_backoff="0.2")
    started = time.monotonic()
    try:
        (response,) = model.generate([make_request("d", [jpeg_red, "#id=d #do=date_once"])])
    finally:
        model.close()
    assert response.text == "answer:d" and chat_server.attempts["d"] == 2
    attempts = chat_server.for_sample("d")
    assert 0.15 <= attempts[1].at - attempts[0].at < 3  # max_backoff, not the 73 years the server asked for
    assert time.monotonic() - started < 5


def test_per_sample_failures_never_raise(chat_server, jpeg_red):
    scenarios = ["ok", "refuse", "filter", "filter_400", "malformed", "no_choices", "bad_request", "always_500"]
    requests = [make_request(do, [jpeg_red, f"#id={do} #do={do}"], doc_id=i) for i, do in enumerate(scenarios)]
    model = _model(chat_server, max_retries="2", concurrency="4")
    try:
        by_name = dict(zip(scenarios, model.generate(requests), strict=True))
    finally:
        model.close()

    assert by_name["ok"].ok
    for refused in ("refuse", "filter", "filter_400"):
        response = by_name[refused]
        assert response.text is None and response.refused and response.error.startswith("refused:")
    assert "I can't help with that." in by_name["refuse"].error
    assert by_name["filter"].finish_reason == "content_filter"
    assert by_name["malformed"].error.startswith("malformed_response:") and not by_name["malformed"].refused
    assert by_name["no_choices"].error == "malformed_response: no choices"
    assert by_name["bad_request"].error == "provider_error: HTTP 400: image could not be processed"
    assert by_name["always_500"].error.startswith("provider_error: gave up after 3 attempts: HTTP 500")
    # 4xx answers and malformed bodies are not retried; 5xx is, up to max_retries.
    assert {s: chat_server.attempts[s] for s in scenarios} == {
        "ok": 1,
        "refuse": 1,
        "filter": 1,
        "filter_400": 1,
        "malformed": 1,
        "no_choices": 1,
        "bad_request": 1,
        "always_500": 3,
    }
    assert model.stats["refusals"] == 3


def test_auth_failure_stops_the_run(chat_server, jpeg_red):
    model = _model(chat_server, concurrency="1")
    try:
        first = model.generate([make_request("z", ["#id=z #do=ok", jpeg_red])])
        assert first[0].text == "answer:z"
        # The batch in which the key is rejected raises at once, handing over what it got: the
        # rejected request's own record, and None for the request that was never sent.
        with pytest.raises(BackendFatalError, match="401") as failure:
            model.generate(
                [
                    make_request("a", ["#id=a #do=auth", jpeg_red]),
                    make_request("b", ["#id=b #do=ok", jpeg_red], doc_id=1),
                ]
            )
        bad, later = failure.value.responses
        assert bad.error.startswith("provider_error: HTTP 401: Incorrect API key")
        assert later is None
        assert chat_server.attempts == {"z": 1, "a": 1}
        with pytest.raises(BackendFatalError, match="401") as again:
            model.generate([make_request("c", ["#id=c #do=ok"])])
        assert again.value.responses is None
        assert chat_server.attempts == {"z": 1, "a": 1}
    finally:
        model.close()


def test_concurrency_is_limited(chat_server):
    requests = [make_request(f"c{i}", [f"#id=c{i} #do=slow"], doc_id=i) for i in range(12)]
    model = _model(chat_server, concurrency="3", timeout="5")
    try:
        responses = model.generate(requests)
    finally:
        model.close()
    assert [r.text for r in responses] == [f"answer:c{i}" for i in range(12)]
    assert chat_server.max_in_flight == 3


def test_missing_api_key_is_a_clear_error(monkeypatch, chat_server):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="no API key for https://api.openai.com/v1; set OPENAI_API_KEY"):
        OpenAIChatModel.from_args({"model": "gpt-4o"})
    with pytest.raises(ValueError, match="AZURE_OPENAI_API_KEY"):
        OpenAIChatModel.from_args(
            {"model": "gpt-4o", "base_url": "https://x.openai.azure.com", "api_version": "2024-10-21"}
        )
    # A loopback server (e.g. `vllm serve`) needs no key; none is sent.
    model = OpenAIChatModel.from_args({"model": "m", "base_url": chat_server.base_url})
    try:
        assert model.generate([make_request("n", ["#id=n #do=ok"])])[0].text == "answer:n"
    finally:
        model.close()
    assert "authorization" not in chat_server.received[0].headers


def test_environment_supplies_url_and_key(monkeypatch, chat_server):
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    model = OpenAIChatModel.from_args({"model": "m"})
    try:
        model.generate([make_request("e", ["#id=e #do=ok"])])
    finally:
        model.close()
    assert chat_server.received[0].headers["authorization"] == "Bearer env-key"


def test_azure_deployment_url_and_header(chat_server):
    model = _model(
        chat_server,
        base_url=chat_server.base_url.removesuffix("/v1"),
        api_version="2024-10-21",
        deployment="my-gpt4o",
        image_detail="low",
    )
    try:
        assert model.generate([make_request("z", ["#id=z #do=ok"])])[0].ok
    finally:
        model.close()
    (got,) = chat_server.received
    assert got.path == "/openai/deployments/my-gpt4o/chat/completions"
    assert got.query == {"api-version": ["2024-10-21"]}
    assert got.headers["api-key"] == "test-key" and "authorization" not in got.headers


def test_sampling_settings_and_prefill_flags(chat_server):
    settings = GenerationSettings(max_gen_toks=5, do_sample=True, temperature=0.7, top_p=0.9)
    request = make_request("p", ["#id=p #do=ok"], settings=settings, prefix="Answer:")
    model = _model(chat_server, continue_final_message="true", token_param="max_completion_tokens", send_seed="false")
    reasoning = _model(chat_server, send_temperature="false")
    try:
        model.generate([request])
        reasoning.generate([request])
    finally:
        model.close()
        reasoning.close()
    assert "temperature" not in chat_server.received[1].body and "top_p" in chat_server.received[1].body
    # Without continue_final_message the prefix is not sent: no extra assistant turn after the user's.
    assert [m["role"] for m in chat_server.received[1].body["messages"]] == ["user"]
    body = chat_server.received[0].body
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9
    assert body["max_completion_tokens"] == 5 and "max_tokens" not in body and "seed" not in body
    assert body["messages"][-1] == {"role": "assistant", "content": "Answer:"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_unreadable_image_and_image_cap_fail_only_their_sample(chat_server, jpeg_red):
    from harness.api import ImageRef

    garbage = ImageRef(hashlib.sha256(b"nope").hexdigest(), lambda: b"not an image at all")
    model = _model(chat_server, max_images="1")
    try:
        bad, too_many, good = model.generate(
            [
                make_request("g", ["#id=g #do=ok", garbage]),
                make_request("two", ["#id=two #do=ok", jpeg_red, jpeg_red], doc_id=1),
                make_request("fine", ["#id=fine #do=ok", jpeg_red], doc_id=2),
            ]
        )
    finally:
        model.close()
    assert bad.error.startswith("invalid_input: image") and "unrecognised encoding" in bad.error
    assert too_many.error == "too_many_images: 2 > max_images=1"
    assert good.text == "answer:fine"
    assert set(chat_server.attempts) == {"fine"}  # nothing was sent for the failed ones


def test_model_args_are_typed_and_checked(chat_server):
    model = _model(chat_server, concurrency="4", timeout="2.5", image_detail="high", context_length="128000")
    assert (model.settings.concurrency, model.settings.timeout, model.facts.context_length) == (4, 2.5, 128000)
    assert model.facts.batch_size == 16  # 4 x concurrency per runner batch
    identity = model.identity()
    # The whole address (another port is another server), never credentials.
    assert identity["served_model"] == "test-vlm" and identity["server"] == chat_server.base_url
    other = OpenAIChatModel.from_args({"model": "test-vlm", "base_url": "http://u:pw-secret@127.0.0.1:1/v1"})
    assert other.identity()["server"] == "http://127.0.0.1:1/v1" != identity["server"]
    assert "test-key" not in repr(identity) and "test-key" not in repr(model.settings)
    with pytest.raises(ValueError, match="unknown model argument 'temperature'"):
        _model(chat_server, temperature="0")
    with pytest.raises(ValueError, match="concurrency='many'"):
        _model(chat_server, concurrency="many")
    with pytest.raises(ValueError, match="image_detail must be"):
        _model(chat_server, image_detail="ultra")
    with pytest.raises(ValueError, match="model"):
        OpenAIChatModel.from_args({"base_url": chat_server.base_url})


def test_pure_helpers(jpeg_red, png_blue):
    assert image_mime_type(jpeg_red) == "image/jpeg" and image_mime_type(png_blue) == "image/png"
    assert image_mime_type(b"GIF89a....") == "image/gif"
    assert image_mime_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert image_mime_type(b"hello") is None
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert retry_after_seconds({}) is None
    listed = parse_completion(
        {
            "choices": [
                {
                    "message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                    "finish_reason": "stop",
                }
            ]
        }
    )
    assert listed.text == "ab"
    assert parse_completion({"choices": [{"message": {"content": None}, "finish_reason": "length"}]}).text == ""
    assert parse_completion({"error": {"message": "overloaded"}}).error == "provider_error: overloaded"
    assert parse_completion([1, 2]).error.startswith("malformed_response")


def test_a_server_lost_mid_run_is_retried_before_the_run_stops():
    server = ChatServer()
    server.start()
    model = OpenAIChatModel.from_args(
        {"model": "m", "base_url": server.base_url, "max_retries": "2", "backoff": "0.01", "concurrency": "1"}
    )
    try:
        assert model.generate([make_request("a", ["#id=a"])])[0].ok
        server.stop()  # the server goes away after answering
        with pytest.raises(BackendFatalError, match="cannot connect"):
            model.generate([make_request("b", ["#id=b"], doc_id=1)])
        assert model.stats["attempts"] == 1 + 3 and model.stats["retries"] == 2  # a blip is retried
    finally:
        model.close()


def test_unreachable_server_stops_the_run():
    model = OpenAIChatModel.from_args(
        {
            "model": "m",
            "base_url": f"http://127.0.0.1:{closed_port()}/v1",
            "max_retries": "1",
            "backoff": "0.01",
            "concurrency": "1",
        }
    )
    try:
        with pytest.raises(BackendFatalError, match="cannot connect") as failure:
            model.generate([make_request("a", ["x"]), make_request("b", ["y"], doc_id=1)])
        first, second = failure.value.responses
        # Nothing was ever reached: no retry and no backoff, the run stops at the first refusal.
        assert first.error.startswith("provider_error: connection error: ConnectError")
        assert model.stats["attempts"] == 1 and model.stats["retries"] == 0
        assert second is None  # never sent
        with pytest.raises(BackendFatalError, match="cannot connect"):
            model.generate([make_request("c", ["z"])])
    finally:
        model.close()


def test_an_input_policy_sets_image_detail_per_request(chat_server, jpeg_red):
    """MMLongBench ran GPT-4o with detail low on natural images only: the alias's policy travels in the
    request's processor settings; anything else there has no meaning for an API and fails its sample."""
    from dataclasses import replace
    from functools import partial

    from harness.inputs.input_policy import InputPolicy, apply_policy
    from harness.models import aliases

    model = _model(chat_server, image_detail="high")
    gpt4o = partial(aliases.alias_policy, "gpt-4o")
    natural = apply_policy(make_request("n", ["#id=n #do=ok", jpeg_red]), gpt4o("mmlongbench_niah_vh_single_128k"))
    document = apply_policy(
        make_request("d", ["#id=d #do=ok", jpeg_red], doc_id=1), gpt4o("mmlongbench_docvqa_slidevqa_128k")
    )
    tiles = replace(
        make_request("t", ["#id=t #do=ok", jpeg_red], doc_id=2),
        processor_kwargs=InputPolicy.of(processor_kwargs={"max_patches": 1}).processor_kwargs,
    )
    try:
        responses = model.generate([natural, document, tiles])
    finally:
        model.close()
    assert [r.text for r in responses[:2]] == ["answer:n", "answer:d"]
    details = {
        sid: [
            p["image_url"]["detail"]
            for p in chat_server.for_sample(sid)[0].body["messages"][-1]["content"]
            if p["type"] == "image_url"
        ]
        for sid in ("n", "d")
    }
    # Natural images at 128K: low; documents: the official `detail: auto`, over the backend's own high.
    assert details == {"n": ["low"], "d": ["auto"]}
    assert responses[2].error.startswith("invalid_input: processor setting(s) max_patches have no meaning")
    assert "t" not in chat_server.attempts
