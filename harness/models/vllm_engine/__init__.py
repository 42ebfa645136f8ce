"""`vllm` backend: offline `vllm.LLM` (vLLM 0.33), all of a task's requests in few large calls.

    harness --model vllm --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_model_len=32768,tensor_parallel_size=2

* The engine is built on the first `generate`, with `limit_mm_per_prompt={"image": L, "video": 0}`
  where L is the largest image count among the requests seen so far (tell it the run's largest count
  with `observe_max_images(n)`, or `observe(requests)`, before the first `generate`, so that L
  covers every task of the run), capped by `max_images`. The limit also sizes vLLM's memory profiling, so it is set from the data, not 999.
* Requests go to `LLM.chat` in chunks (`chunk_size` requests and `chunk_tokens` prompt tokens at most,
  which bounds the decoded images held at once; the runner saves after each chunk), as OpenAI-style
  conversations with `{"type": "image_pil", "image_pil": PIL, "uuid": sha256}` parts in prompt order,
  and explicit `SamplingParams` per request (vLLM's default is `max_tokens=16` plus the model's
  generation_config; `generation_config="vllm"` is also set so nothing model-specific leaks in).
* A prompt longer than the context aborts vLLM's whole batch, so every request is screened first
  (`screen_request`) and recorded as `over_length` without reaching the engine. It is counted as vLLM
  counts it, by the checkpoint's own hf processor, loaded without weights (`counting`), or, where that
  cannot be loaded, estimated by the model family's rule, and `token_rule` says which. If the engine still
  rejects a chunk for a request-level reason, the chunk is bisected so only the culprits fail.
* `data_parallel_size=D` runs D replicas of this backend as Ray actors, on one node or many, each on its own
  `tensor_parallel_size * pipeline_parallel_size` GPUs, each chunk divided between them
  (`harness.models.replicas`; vLLM's own `LLM(data_parallel_size>1)` refuses single-process use). One engine
  spanning nodes: `distributed_executor_backend=ray`; without Ray: one harness process per node with
  `--shard i/n`, then `harness merge` (docs/scaling.md).

vLLM is imported only when an engine is built, so this package imports without it. Its modules:
`settings` (the `--model_args` and the engine's arguments), `counting` (the prompt as vLLM counts it),
`requests` (screening, payloads, sampling, output mapping: pure functions), `engines` (one `vllm.LLM` in this process),
`backend` (the registered `VLLMModel`) and `screen` (its `--screen_only` stand-in); here, its declaration (`BACKEND`).
"""

from __future__ import annotations

from typing import Any

from harness.models.backend_spec import BackendSpec, Extra, Replicas
from harness.models.vllm_engine.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.vllm_engine.screen import screen_model


def _gpus(settings: Any) -> float:
    return float(settings.tensor_parallel_size * settings.pipeline_parallel_size)  # one engine's GPUs a replica


def _from_hf_alias(args: dict[str, str]) -> dict[str, str]:
    """An `hf` alias run with `backend=vllm`: an engine allocates for a length (the official vllm serve line's where
    hf had none), and applies the checkpoint's generation_config, as the hf run's `generate` does."""
    from harness.models.alias import switched_from_hf

    args = switched_from_hf(args, "max_model_len")
    args.setdefault("generation_config", "auto")
    return args


BACKEND = BackendSpec(
    module="harness.models.vllm_engine.backend",
    extra=Extra("vllm", ("vllm",)),
    runs_remote_code=True,
    replicas=Replicas(gpus=_gpus),
    screen=screen_model,
    adopts_alias={"hf": _from_hf_alias},
    known_as=KNOWN_AS,
    foreign_args=FOREIGN_ARGS,
)
