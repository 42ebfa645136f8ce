"""The vllm backend runs requests in the cache order by default (`harness.models.shared.scheduling.prefix_order`), across every task of the
run, with prefix caching left on; `request_order=length` turns the order off. Either way the same answers reach the
same journals. The engine is `fake_vllm.FakeLLM` (its answer spells what it was sent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.models.backends.vllm_engine.backend import VLLMModel
from harness.models.backends.vllm_engine.settings import VLLMSettings, engine_kwargs
from tests.support import fake_vllm
from tests.support.engine_order_runs import NIAH_CONFIGS, journalled_answers
from tests.support.fake_vllm import FAKE_LLM, FAKE_SAMPLING, settings


def test_the_cache_order_is_the_default_and_prefix_caching_stays_on() -> None:
    settings = VLLMSettings(pretrained="m")
    assert settings.request_order == "cache"
    assert "enable_prefix_caching" not in engine_kwargs(settings, {"image": 1})  # vLLM's default: on
    assert VLLMSettings(pretrained="m", request_order="length").request_order == "length"
    with pytest.raises(ValueError, match="vllm backend: request_order must be one of length, cache, got 'fast'"):
        VLLMSettings(pretrained="m", request_order="fast")


@pytest.fixture(scope="module")
def mmlb_dir(fixture_builds) -> Path:
    return fixture_builds(mmlongbench=NIAH_CONFIGS)  # the other engine's order test reads the same build


def run(order: str, data: Path, out: Path) -> tuple[list[str], dict[str, list]]:
    """(sample ids in the order the engine got them, {task: sorted (sample id, response, metrics)})."""
    model = VLLMModel(
        settings(max_model_len=32768, request_order=order),
        llm_factory=FAKE_LLM,
        sampling_factory=FAKE_SAMPLING,
        count_online=False,
    )  # no Hub here
    fake_vllm.CALLS.clear()
    journals = journalled_answers(model, data, out)
    sent = [conversation for call in fake_vllm.CALLS for conversation in call["conversations"]]
    return [summary(conversation) for conversation in sent], journals


def summary(conversation: list[dict]) -> str:
    return "|".join(p.get("text") or p["uuid"] for message in conversation for p in message["content"])


def test_the_engine_gets_another_order_and_the_journals_hold_the_same_answers(mmlb_dir: Path, tmp_path: Path) -> None:
    cache_sent, cache_journals = run("cache", mmlb_dir, tmp_path / "cache")
    length_sent, length_journals = run("length", mmlb_dir, tmp_path / "length")
    assert cache_journals == length_journals and all(cache_journals.values())
    assert sorted(cache_sent) == sorted(length_sent) and cache_sent != length_sent
