"""vLLM keeps the checkpoint's generation_config where the official HF `generate` applied it (issue 42, finding 5): a
vllm alias, or an hf alias switched to vllm, loads it (`generation_config=auto`) and each request's explicit
`SamplingParams` keep the decoding greedy still applies (Qwen2-VL's repetition penalty 1.05); a plain vllm run stays
neutral."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from harness.models.backends.vllm_engine.engines import LocalEngine
from harness.models.backends.vllm_engine.requests import sampling_kwargs
from harness.run.plan import resolve_model
from tests.support.fake_vllm import FAKE_SAMPLING, FakeLLM, param


class CheckpointLLM(FakeLLM):
    """The engine of a checkpoint whose generation_config.json holds sampling and a repetition penalty."""

    def get_default_sampling_params(self) -> Any:
        if self.kwargs.get("generation_config") != "auto":
            return SimpleNamespace(repetition_penalty=1.0, temperature=1.0)
        return SimpleNamespace(repetition_penalty=1.05, temperature=0.01, top_p=0.001)


def engine(generation_config: str) -> LocalEngine:
    return LocalEngine(
        {"model": "m", "generation_config": generation_config},
        llm_factory=f"{__name__}:CheckpointLLM",
        sampling_factory=FAKE_SAMPLING,
    )


def test_the_checkpoints_repetition_penalty_reaches_every_greedy_request() -> None:
    from harness.api import GenerationSettings

    greedy = sampling_kwargs(GenerationSettings(max_gen_toks=8), 0)
    payload = {"prompt": "hi", "messages": [], "prefix": "", "sampling": greedy, "cost": 1}
    kept = engine("auto")
    assert kept.sampling_defaults == {"repetition_penalty": 1.05}  # sampling settings stay the task's (greedy)
    kept.run([payload], {"use_tqdm": False})
    kept.close()
    (params,) = _last_sampling()
    assert param(params, "repetition_penalty") == 1.05 and param(params, "temperature") == 0.0
    neutral = engine("vllm")
    neutral.close()
    assert neutral.sampling_defaults == {}


def _last_sampling() -> list[Any]:
    from tests.support import fake_vllm

    return fake_vllm.CALLS[-1]["sampling"]


def test_the_aliases_load_the_checkpoints_generation_config_on_vllm() -> None:
    assert resolve_model("phi3.5-vision", {}).args["generation_config"] == "auto"
    assert resolve_model("qwen2.5-vl", {"backend": "vllm"}).args["generation_config"] == "auto"
    assert resolve_model("vllm", {"pretrained": "x"}).args == {"pretrained": "x"}  # a plain run: vLLM's neutral one


class TokenizerLLM(FakeLLM):
    """An engine whose tokenizer is a real one holding InternVL's separator."""

    def get_tokenizer(self) -> Any:
        from tests.support.family_processors import tokenizer

        return tokenizer(("<|im_start|>", "<|im_end|>"), bos=None)


def test_eos_tokens_stop_generation_on_those_tokens_alone_as_internvl_s_model_chat() -> None:
    """Issue 51, item 2: InternVL's `model.chat` sets `eos_token_id` to its template's separator, in place of the
    checkpoint's; vLLM's own SamplingParams then stop on it and no longer on the checkpoint's eos ids."""
    from vllm import SamplingParams

    from tests.support.family_processors import tokenizer

    made = LocalEngine(
        {"model": "m", "generation_config": "auto"},
        llm_factory=f"{__name__}:TokenizerLLM",
        sampling_factory="vllm:SamplingParams",
        eos_tokens=("<|im_end|>",),
    )
    made.close()
    separator = tokenizer(("<|im_start|>", "<|im_end|>"), bos=None).convert_tokens_to_ids("<|im_end|>")
    assert made.sampling_defaults == {"stop_token_ids": [separator], "ignore_eos": True}
    params = SamplingParams(**{**made.sampling_defaults, "max_tokens": 8, "temperature": 0.0})
    params.update_from_generation_config({"eos_token_id": [2, 92542]}, eos_token_id=2)  # what the engine does
    assert params.stop_token_ids == [separator] and params.ignore_eos


def test_an_eos_token_the_tokenizer_does_not_hold_is_refused_in_one_line(tmp_path, monkeypatch) -> None:
    """...once the engine has started (its tokenizer says), which the refusal closes: its log goes with it."""
    import tempfile

    import pytest

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the engine's temporary log goes
    with pytest.raises(ValueError, match="'<\\|end\\|>' is not one token"):
        LocalEngine({"model": "m"}, llm_factory=f"{__name__}:TokenizerLLM", eos_tokens=("<|end|>",))
    assert not list(tmp_path.iterdir())
