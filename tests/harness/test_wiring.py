"""Small parts of the wiring between backends and the harness: output folder names, secret
redaction, and the response cache when a backend stops the run mid-batch."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pytest

from harness.api import BackendFatalError, Model, Request, Response
from harness.outputs.results.results import model_folder_name
from harness.redact import REDACTED, is_secret_name, redact_mapping, redact_text, secret_values
from harness.running.cache import CachingModel, ResponseCache
from tests.support.model_requests import make_request


def test_model_folder_names_separate_models_and_backends():
    assert model_folder_name("hf", {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"}) == "Qwen__Qwen2.5-VL-7B-Instruct"
    assert (
        model_folder_name("vllm", {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"}) == "vllm__Qwen__Qwen2.5-VL-7B-Instruct"
    )
    assert model_folder_name("openai", {"model": "gpt-4o", "api_key": "x"}) == "openai__gpt-4o"
    assert model_folder_name("openai", {"model": "gpt-4o-mini"}) != model_folder_name("openai", {"model": "gpt-4o"})
    assert model_folder_name("constant", {"answer": "-1"}) == "constant"
    assert model_folder_name("hf", {"pretrained": "/ckpt/a"}) != model_folder_name("hf", {"pretrained": "/ckpt/b"})


def test_secret_names_and_values_are_redacted():
    for name in (
        "api_key",
        "OPENAI_API_KEY",
        "apikey",
        "hf_token",
        "token",
        "client_secret",
        "password",
        "key",
        "auth",
    ):
        assert is_secret_name(name), name
    for name in ("max_batch_tokens", "token_param", "max_num_batched_tokens", "model", "keyframes", "chunk_tokens"):
        assert not is_secret_name(name), name
    args = {"model": "m", "api_key": "sk-1", "nested": {"hf_token": "hf_2", "seed": 3}, "token_param": "max_tokens"}
    assert redact_mapping(args) == {
        "model": "m",
        "api_key": REDACTED,
        "nested": {"hf_token": REDACTED, "seed": 3},
        "token_param": "max_tokens",
    }
    assert secret_values(args) == ["hf_2", "sk-1"]
    assert redact_text("model=m,api_key=sk-1", secret_values(args)) == f"model=m,api_key={REDACTED}"


def test_a_prompt_styles_text_key_is_recorded_not_redacted() -> None:
    """An `hf` model's identity holds its prompt style as described; its `text_key` ("text") is a message field."""
    from harness.models.families import style_named

    style = style_named("default").describe()
    identity = {"model": "hf", "pretrained": "p", "prompt_style": style, "hf_token": "hf_2"}
    recorded = redact_mapping(identity)
    assert recorded["prompt_style"] == style and style["text_key"] == "text"
    assert recorded["hf_token"] == REDACTED


class StopsAtThird(Model):
    """Answers two requests, then the provider rejects the key: the batch raises with what it got."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    @classmethod
    def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
        return cls()

    def identity(self):
        return {"model": "stops"}

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        answers: list[Response | None] = []
        for request in requests:
            if len(self.sent) >= 2:
                answers.append(None)
                continue
            self.sent.append(request.sample_id)
            answers.append(Response(text=f"answer {request.sample_id}"))
        if None in answers:
            raise BackendFatalError("HTTP 401", answers)
        return answers  # type: ignore[return-value]


def test_cache_keeps_what_a_failing_batch_answered(tmp_path):
    requests = [make_request(f"s{i}", [f"q{i}"], doc_id=i) for i in range(4)]
    first = CachingModel(StopsAtThird(), ResponseCache(tmp_path / "c.sqlite3"))
    first.generate(requests[:1])
    with pytest.raises(BackendFatalError, match="HTTP 401") as failure:
        first.generate(requests)  # s0 from the cache, s1 answered, s2 and s3 not
    assert [r.text if r else None for r in failure.value.responses] == ["answer s0", "answer s1", None, None]
    assert (first.cache_hits, first.requests_sent) == (1, 2)
    first.close()
    inner = StopsAtThird()
    second = CachingModel(inner, ResponseCache(tmp_path / "c.sqlite3"))
    assert [r.text for r in second.generate(requests[:2])] == ["answer s0", "answer s1"]
    assert inner.sent == [] and second.cache_hits == 2
    second.close()


def test_a_backend_failure_report_is_one_line_with_details_in_a_file(mmneedle_dir, tmp_path, capsys):
    from harness.models.registry import _REGISTRY, register_model
    from harness.run.cli import main

    @register_model("test_replica_dies")
    class ReplicaDies(Model):
        @classmethod
        def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
            return cls()

        def generate(self, requests):
            raise BackendFatalError(
                "vllm replica 1 failed during generation:\nTraceback (most recent call last):\n"
                "  ...\nRuntimeError: CUDA error: an illegal memory access was encountered"
            )

    try:
        code = main(
            [
                "--tasks",
                "mmneedle_m1_n2_k1_neg",
                "--model",
                "test_replica_dies",
                "--data_dir",
                str(mmneedle_dir),
                "--output_path",
                str(tmp_path),
                "--no_progress",
            ]
        )
    finally:
        _REGISTRY.pop("test_replica_dies")
    err = capsys.readouterr().err
    assert code == 1
    (line,) = [line for line in err.splitlines() if "replica" in line or "Traceback" in line]
    details = tmp_path / "test_replica_dies" / "backend_error.log"
    assert line == (
        f"harness: error: the model backend stopped: vllm replica 1 failed during generation: (details in "
        f"{details}); finished samples are saved under {details.parent}, run the same command to resume"
    )
    assert "CUDA error: an illegal memory access" in details.read_text()


def test_every_backend_reads_model_args_with_one_parser():
    from harness.models.backends.hf.settings import HFSettings
    from harness.models.backends.openai_chat.model import OpenAIChatSettings
    from harness.models.backends.vllm_engine.settings import VLLMSettings
    from harness.models.facts.args import settings_from_args

    cases = [
        (HFSettings, {"pretrained": "p"}, "trust_remote_code"),
        (VLLMSettings, {"pretrained": "p"}, "use_tqdm"),  # its own; the engine's are typed by vLLM's EngineArgs
        (OpenAIChatSettings, {"model": "m"}, "send_seed"),
    ]
    for cls, required, flag in cases:
        for text, value in (
            ("true", True),
            ("on", True),
            ("1", True),
            ("yes", True),
            ("False", False),
            ("off", False),
            ("0", False),
            ("no", False),
        ):
            assert getattr(settings_from_args(cls, {**required, flag: text}, "b"), flag) is value, (cls, text)
        with pytest.raises(ValueError, match=rf"b backend: model argument {flag}='maybe': expected true or false"):
            settings_from_args(cls, {**required, flag: "maybe"}, "b")
        with pytest.raises(ValueError, match=r"b backend: unknown model argument 'nope'; known: "):
            settings_from_args(cls, {**required, "nope": "1"}, "b")


def test_secrets_are_collected_by_name_url_and_environment():
    from harness.redact import collect_secrets, url_credentials

    assert url_credentials("http://user:pw-1234@host/v1 and https://tok-5678@h2") == ["pw-1234", "tok-5678"]
    secrets = collect_secrets(
        {"api_key": "sk-arg", "base_url": "http://me:pw-1234@host/v1", "model": "m"},
        environ={
            "OPENAI_API_KEY": "sk-env-12345",
            "HF_TOKEN": "short",
            "PATH": "/usr/bin:/bin",
            "HTTPS_PROXY": "http://proxy:px-999999@gw:3128",
        },
    )
    # Longest first; short env values are left alone. A URL's credentials count with the basic-auth token an
    # HTTP client makes of them (`Authorization: Basic base64(user:password)`), from arguments and environment.
    assert secrets == [
        base64.b64encode(b"proxy:px-999999").decode(),
        "bWU6cHctMTIzNA==",
        "sk-env-12345",
        "px-999999",
        "pw-1234",
        "sk-arg",
    ]
    assert base64.b64decode("bWU6cHctMTIzNA==") == b"me:pw-1234"
    assert url_credentials("https://h/v1?api-key=q-key-1&model=m") == ["q-key-1"]  # a secret-named query parameter


def test_a_secret_is_scrubbed_in_every_encoding_a_run_writes():
    import json
    from urllib.parse import quote

    from harness.redact import collect_secrets, dumps, register, scrub

    user, key = "reader", 'k3y/with"odd\\chars+é'
    register(collect_secrets({"base_url": f"http://{user}:{quote(key, safe='')}@host/v1"}, environ={}))
    basic = base64.b64encode(f"{user}:{key}".encode()).decode()
    nested = json.dumps({"error": json.dumps({"message": f"bad key {key}"})})  # a JSON body inside a JSON record
    forms = [
        key,
        quote(key, safe=""),
        basic,
        f"Basic {basic}",
        json.dumps(key),
        json.dumps(key, ensure_ascii=False),
        nested,
        repr(key),
        base64.b64encode(key.encode()).decode(),
    ]
    for form in forms:
        assert REDACTED in scrub(f"<{form}>"), form
        for text in (scrub(f"<{form}>"), dumps({"error": form}), dumps({"error": form}, ensure_ascii=False)):
            for encoded in (key, quote(key, safe=""), json.dumps(key)[1:-1], basic):
                assert encoded not in text, (form, text)
    assert json.loads(dumps({"error": f"HTTP 401: rejected {key}"})) == {"error": f"HTTP 401: rejected {REDACTED}"}


def test_a_command_line_is_redacted_by_name_whatever_the_secret_length():
    from harness.redact import redact_command

    argv = [
        "harness",
        "--model_args",
        "model=m,api_key=k1,base_url=http://u:p2@h/v1?token=t3",
        "--judge_args=key=k4",
        "--tasks",
        "t",
    ]
    assert redact_command(argv) == [
        "harness",
        "--model_args",
        f"model=m,api_key={REDACTED},base_url=http://u:{REDACTED}@h/v1?token={REDACTED}",
        f"--judge_args=key={REDACTED}",
        "--tasks",
        "t",
    ]
    # The results' model_args: a URL's credentials where they stand, however short (only they: "pw" stays in /pwd).
    assert redact_mapping({"base_url": "http://u:pw@h/v1/pwd?key=q&a=1", "model": "m"}) == {
        "base_url": f"http://u:{REDACTED}@h/v1/pwd?key={REDACTED}&a=1",
        "model": "m",
    }
