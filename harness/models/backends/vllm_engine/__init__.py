"""`vllm` backend: offline `vllm.LLM` (vLLM 0.33), all of a task's requests in few large calls.

    harness --model vllm --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_model_len=32768,kv_cache_dtype=fp8

* Any field of the installed vLLM's `EngineArgs` is an argument, typed by that field (`settings`); the backend's own
  are the checkpoint, the image cap, chunking, order, prompt style and counting.
* The engine is built on the first `generate`, with `limit_mm_per_prompt={"image": {"count": N, "width": W,
  "height": H}, "video": 0}`: the largest image count and the largest width and height among the requests it will
  send (it reads every request before its first batch; `prepare` tells it the rows' count before), N capped by
  `max_images`. The limit sizes vLLM's memory profiling, so it is set from the data (`image_limit`); a
  `limit_mm_per_prompt` JSON object given is sent as it is.
* `--gen_kwargs` keys beyond the generation settings are `SamplingParams` fields, typed by it and given to every
  request (`sampling_params`, a JSON object, in `--model_args` holds them).
* Requests go to `LLM.chat` in chunks (`chunk_size` requests and `chunk_tokens` prompt tokens at most,
  which bounds the decoded images held at once; the runner saves after each chunk), as OpenAI-style
  conversations with `{"type": "image_pil", "image_pil": PIL, "uuid": sha256}` parts in prompt order,
  and explicit `SamplingParams` per request (vLLM's default is `max_tokens=16` plus the model's
  generation_config; `generation_config="vllm"` is also set so nothing model-specific leaks in).
* A prompt longer than the context aborts vLLM's whole batch, so every request is screened first
  (`screen_request`) and recorded as `over_length` without reaching the engine, as is one with an image of more
  tokens than the built engine's encoder cache holds, which vLLM refuses (vLLM #34040). It is counted as vLLM
  counts it, by the checkpoint's own hf processor, loaded without weights (`harness.models.shared.engine_count.EngineCount`), or, where that
  cannot be loaded, estimated by the model family's rule, and `token_rule` says which. If the engine still
  rejects a chunk for a request-level reason, the chunk is bisected so only the culprits fail.
* `data_parallel_size=D` runs D replicas of this backend as Ray actors, on one node or many, each on its own
  `tensor_parallel_size * pipeline_parallel_size` GPUs, each chunk divided between them
  (`harness.models.backends.replicas`; vLLM's own `LLM(data_parallel_size>1)` refuses single-process use). One engine
  spanning nodes: `distributed_executor_backend=ray`; without Ray: one harness process per node with
  `--shard i/n`, then `harness merge` (docs/scaling.md).

vLLM is imported when the arguments are read (its `EngineArgs` types them), so this package imports without it. Its
modules: `settings` (the `--model_args` and the engine's arguments), `image_limit` (the images the engine is sized
for, and what its encoder holds), `requests` (screening, payloads, sampling, output mapping: pure functions),
`engines` (one `vllm.LLM` in this process), `start` (how its engine starts, the same way everywhere: by spawn,
bounded, watched), `start_checks` (what is refused before a start, and the CPU build's KV cache), `engine_log` (the
engine's processes' output and vLLM's reason in it), `backend` (the registered `VLLMModel` and its count of a
prompt); here, its `--screen_only` stand-in and its declaration (`BACKEND`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from harness.api import OVER_LENGTH, Request, Status
from harness.models.backend_spec import EngineSampling, engine_backend
from harness.models.backends.vllm_engine.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.shared.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    """The `--screen_only` stand-in: the backend's own count (`VLLMModel.prompt_tokens`, the same function the run
    screens with): the checkpoint's hf processor as vLLM counts, loaded offline like `hf`'s (exact); where it cannot
    be loaded offline, the family's rule plus `length_margin` (an estimate). No engine is built: each image is checked
    against the least its encoder cache will hold (`image_limit`), where the limit given makes that less than the
    run's largest image."""
    from harness.models.backends.vllm_engine.backend import VLLMModel
    from harness.models.backends.vllm_engine.image_limit import encoder_refusal, image_count, least_encoder_cache
    from harness.models.backends.vllm_engine.settings import LIMIT, vllm_settings

    settings = vllm_settings(args)
    # The backend's own count, the run's code path; its engine is built on the first generate, never here.
    backend = VLLMModel(settings, count_online=False)
    count = backend.count
    backend.windowed()  # the context within the checkpoint's window, as the run builds its engine
    limit = settings.engine.get(LIMIT)
    cache = least_encoder_cache(
        limit if isinstance(limit, dict) else None, settings.engine, settings.gpus, count.size_tokens
    )

    def refusal(request: Request) -> tuple[Status, str] | None:
        reason = encoder_refusal(count.image_tokens(request), cache.tokens, cache.where) if cache else None
        return (OVER_LENGTH, reason.removeprefix("over_length: ")) if reason else None

    return backend.screen(
        # a limit given is the engine's image count (the run records a row over it too_many_images)
        max_images=image_count(limit, settings.max_images) if isinstance(limit, dict) else settings.max_images,
        refusal=refusal if cache is not None else None,
        chat_template=backend.facts.chat_template or (count.processor.chat_template if count.processor else None),
    )


def _sampling(given: Mapping[str, object]) -> None:
    """`--gen_kwargs` keys beyond the generation settings: SamplingParams fields, checked by its declaration."""
    from harness.models.backends.vllm_engine.settings import sampling_fields

    sampling_fields(given)


def _from_hf_alias(args: dict[str, str]) -> dict[str, str]:
    """An `hf` alias run with `backend=vllm`: an engine allocates for a length (the official vllm serve line's where
    hf had none), and applies the checkpoint's generation_config, as the hf run's `generate` does."""
    from harness.models.facts.alias import switched_from_hf

    unlimited = args.get("no_context_limit") == "true"
    args = switched_from_hf(args, "max_model_len")
    if unlimited:  # past the window, as the hf run passed it (the official line's VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)
        args.setdefault("past_window", "true")
    args.setdefault("generation_config", "auto")
    return args


BACKEND = replace(
    engine_backend("vllm", screen_model, _from_hf_alias),
    known_as=KNOWN_AS,
    foreign_args=FOREIGN_ARGS,
    engine_sampling=EngineSampling("sampling_params", _sampling),
    engine_log_arg="engine_log",
    progress_arg="use_tqdm",
)
