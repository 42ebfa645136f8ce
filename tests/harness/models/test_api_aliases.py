"""The API aliases run as the papers' official code called each provider (issue 53): resolved on a benchmark's task as
`--model NAME` resolves them, built on their backend, and what they send compared with the official call for the same
row. MMLongBench's Gemini through google-genai as `vlm_model/gemini.py` (26197d2), its GPT-4o and Claude 3.7 Sonnet
as `openai_model.py:138-146`, MMNeedle's Claude 3 Opus through Anthropic's SDK as `needle.py:149-181`; and no seed
from any API alias on any benchmark, since no official call sent one."""

from __future__ import annotations

import pytest

from harness.api import GenerationSettings
from harness.inputs.input_policy import apply_policy
from harness.models.aliases import ALIASES, alias_policy, resolve, task_benchmarks
from harness.models.registry import get_model_class
from tests.support.chat_server import ChatServer
from tests.support.gemini_server import generation_bodies
from tests.support.model_requests import make_request
from tests.support.official_api_calls import (
    GEMINI_ROW_TEXT,
    gemini_side_by_side,
    needle_side_by_side,
    resolved_uploads,
    row_images,
    row_request,
)
from tests.support.official_openai_calls import hub_url, named_bytes, openai_model_call

MMLONGBENCH_TASK = "mmlongbench_niah_vh_single_8k"
# One task of each benchmark whose paper ran API models.
BENCHMARK_TASKS = (MMLONGBENCH_TASK, "mmneedle_m10_n2_k1_pos", "milebench")
API_BACKENDS = ("openai", "gemini", "anthropic")
CLAUDE = "claude-3-7-sonnet-20250219"
LOOPBACK = {"api_key": "test-key", "timeout": "2", "backoff": "0.01", "max_backoff": "0.05", "max_retries": "1"}


def _on(alias: str, task: str, **given: str) -> tuple[str, dict[str, str]]:
    backend, args, _ = resolve(alias, given, task_benchmarks([task]))
    return backend, args


@pytest.mark.parametrize(
    ("alias", "served"),
    [
        ("gemini-2.0-flash", "gemini-2.0-flash-001"),
        ("gemini-2.0-flash-thinking", "gemini-2.0-flash-thinking-exp-01-21"),
        ("gemini-2.5-flash", "gemini-2.5-flash-preview-04-17"),
        ("gemini-2.5-pro", "gemini-2.5-pro-preview-03-25"),
    ],
)
def test_mmlongbenchs_gemini_aliases_send_what_its_wrapper_sent(alias: str, served: str) -> None:
    """Each Gemini alias on an MMLongBench task: the `gemini` backend, and field by field the wrapper's request for the
    same row (temperature and topP 1.0 though the task is greedy, one candidate, maxOutputTokens only for 2.0-Flash,
    the prompt's empty text parts, each image an uploaded RGB PNG), with the run's seed not sent."""
    pytest.importorskip("google.genai")
    backend, args = _on(alias, MMLONGBENCH_TASK, **LOOPBACK)
    assert backend == "gemini"
    official, ours, response = gemini_side_by_side(
        served, lambda base_url: get_model_class(backend).from_args({**args, "base_url": base_url}), seed=0
    )
    assert response.text == "answer:r1"
    (want,), (got,) = generation_bodies(official), generation_bodies(ours)
    assert resolved_uploads(ours, got) == resolved_uploads(official, want)
    assert got["generationConfig"] == want["generationConfig"]


@pytest.mark.parametrize(("alias", "served"), [("gpt-4o", "gpt-4o-2024-11-20"), ("claude-3.7-sonnet", CLAUDE)])
def test_mmlongbenchs_gpt4o_and_claude_send_what_openai_model_py_sent(alias: str, served: str, chat_server) -> None:
    """`openai_model.py:106-167` for the same row (four images in JPEG, PNG, GIF and WEBP, two of them adjacent, one
    first and one last): the prompt cut by `re.split`, its empty texts sent too, `detail: auto` on every image, and
    max_tokens (the generation length), temperature 0.0 (do_sample is False), top_p 1.0 and nothing else: no seed, no
    max_completion_tokens, even at api.openai.com. Each image as at 8K: GPT-4o's the file's own bytes (the Hub URL
    run_api.sh gave it, `hub_url`: the named departure), Claude's decoded, made RGB and sent as a PNG."""
    pytest.importorskip("openai")
    backend, args = _on(alias, MMLONGBENCH_TASK)
    assert backend == "openai"
    at_provider = get_model_class(backend).from_args({**args, "api_key": "test-key"})
    assert at_provider.token_param == "max_tokens"  # not what `auto` picks for api.openai.com
    _, args = _on(alias, MMLONGBENCH_TASK, base_url=chat_server.base_url, **LOOPBACK)
    model = get_model_class(backend).from_args(args)
    images = row_images()
    request = apply_policy(row_request(images, 128, seed=0), alias_policy(alias, MMLONGBENCH_TASK))
    official = ChatServer()
    official.start()
    try:
        (response,) = model.generate([request])
        openai_model_call(official, served, GEMINI_ROW_TEXT, images, 128, url_of=hub_url if alias == "gpt-4o" else None)
    finally:
        model.close()
        official.stop()
    assert response.error is None
    (sent,), (want,) = chat_server.received, official.received
    assert named_bytes(sent.body) == named_bytes(want.body)
    assert list(sent.body) == ["model", "messages", "max_tokens", "temperature", "top_p"]
    assert [p["text"] for p in sent.body["messages"][0]["content"] if p["type"] == "text"] == [
        "",
        "#id=r1 Which of these shows a cat? ",
        "",
        "Answer the question.",
        "",
    ]
    urls = [p["image_url"]["url"] for p in sent.body["messages"][0]["content"] if p["type"] == "image_url"]
    png = all(url.startswith("data:image/png;base64,") for url in urls)
    assert png == (alias == "claude-3.7-sonnet") and urls == (
        [p["image_url"]["url"] for p in want.body["messages"][0]["content"] if p["type"] == "image_url"]
        if png
        else urls
    )


def _paper_run(name: str) -> bool:
    from harness.models.aliases import index_benchmarks
    from harness.models.facts.paper_models import papers

    return any(table.run_by(name) for _, table in papers(index_benchmarks()))


@pytest.mark.parametrize(
    "alias", sorted(name for name, alias in ALIASES.items() if alias.backend in API_BACKENDS and _paper_run(name))
)
@pytest.mark.parametrize("task", BENCHMARK_TASKS)
def test_no_api_alias_sends_a_seed(alias: str, task: str) -> None:
    """No official call of an API model sent a seed (MMLongBench's `openai_model.py` and `gemini.py`, MMNeedle's
    `needle.py`; MileBench published none): a run's seed reaches no provider from an alias a paper ran, on any
    benchmark (an alias no paper ran sends what its own declaration says)."""
    backend, args = _on(alias, task, base_url="http://127.0.0.1:9", api_key="test-key")
    model = get_model_class(backend).from_args(args)
    request = make_request("r1", ["#id=r1 Which one?"], settings=GenerationSettings(max_gen_toks=8, seed=0))
    if backend == "gemini":
        assert model.config(request).seed is None
    else:
        assert "seed" not in model.payload(request)


def test_mmneedles_claude_3_opus_is_needle_pys_call() -> None:
    """MMNeedle's Claude 3 Opus on its alias: Anthropic's SDK (the `anthropic` backend) and field by field
    `needle.py`'s request for the same row."""
    pytest.importorskip("anthropic")
    backend, args = _on("claude-3-opus", "mmneedle_m10_n2_k1_pos", **LOOPBACK)
    assert backend == "anthropic"
    official, ours, response = needle_side_by_side(
        lambda base_url: get_model_class(backend).from_args({**args, "base_url": base_url}), seed=0
    )
    assert response.text == "answer:r1"
    (want,), (got,) = ([r.body for r in server.received if r.path == "/v1/messages"] for server in (official, ours))
    assert got == want
