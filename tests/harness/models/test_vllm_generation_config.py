"""vLLM keeps the checkpoint's generation_config where the official HF `generate` applied it (issue 42, finding 5): a
vllm alias, or an hf alias switched to vllm, loads it (`generation_config=auto`) and each request's explicit
`SamplingParams` keep the decoding greedy still applies (Qwen2-VL's repetition penalty 1.05); a plain vllm run stays
neutral."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from harness.models.vllm_engine.engines import LocalEngine
from harness.models.vllm_engine.requests import sampling_kwargs
from harness.run_plan import resolve_model
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
    (params,) = _last_sampling()
    assert param(params, "repetition_penalty") == 1.05 and param(params, "temperature") == 0.0
    neutral = engine("vllm")
    assert neutral.sampling_defaults == {}


def _last_sampling() -> list[Any]:
    from tests.support import fake_vllm

    return fake_vllm.CALLS[-1]["sampling"]


def test_the_aliases_load_the_checkpoints_generation_config_on_vllm() -> None:
    assert resolve_model("phi3.5-vision", {}).args["generation_config"] == "auto"
    assert resolve_model("qwen2.5-vl", {"backend": "vllm"}).args["generation_config"] == "auto"
    assert resolve_model("vllm", {"pretrained": "x"}).args == {"pretrained": "x"}  # a plain run: vLLM's neutral one
