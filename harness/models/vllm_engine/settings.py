"""The vllm backend's `--model_args` (`VLLMSettings`) and the `vllm.LLM(...)` arguments made from them."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from harness.models.args import MINIMUM, at_least, check_minimum
from harness.models.families import style_named
from harness.models.scheduling.prefix_order import check_order


@dataclass(frozen=True)
class VLLMSettings:
    pretrained: str
    revision: str | None = None
    tokenizer: str | None = None
    max_model_len: int | None = at_least(1)  # default: what vLLM derives from the model config
    max_images: int | None = at_least(1)  # the model's image cap per prompt; limit_mm_per_prompt never exceeds it
    max_pixels: int | None = at_least(1)  # mm_processor_kwargs (Qwen-VL style pixel limits)
    min_pixels: int | None = at_least(1)
    mm_processor_kwargs: str | None = None  # extra processor kwargs as a JSON object
    tensor_parallel_size: int = at_least(1, 1)
    pipeline_parallel_size: int = at_least(1, 1)
    distributed_executor_backend: str | None = None  # "ray" for an engine spanning nodes; "mp"
    gpu_memory_utilization: float = 0.9
    enable_prefix_caching: bool | None = None  # None: vLLM's default (on)
    # KV-cache blocks, overriding what vLLM sizes from free memory: a small model given a larger model's cache size.
    num_gpu_blocks_override: int | None = at_least(1)
    seed: int = 0
    dtype: str = "auto"
    trust_remote_code: bool = False
    chat_template: str | None = None  # a Jinja file or string; default: the model's own
    chat_template_content_format: str = "auto"
    # "vllm": neutral defaults; "auto": the model's generation_config.json (its eos tokens, and the decoding greedy
    # keeps, a repetition penalty, as transformers' generate applies them: `engines.checkpoint_decoding`)
    generation_config: str = "vllm"
    # The special tokens generation stops on, in place of the checkpoint's eos ids (space-separated: "<|im_end|>"):
    # vLLM's `stop_token_ids` with `ignore_eos`, as InternVL's `model.chat` sets `eos_token_id` to its conversation
    # template's separator alone (`modeling_internvl_chat.py`'s `chat`). Resolved with the engine's own tokenizer.
    eos_tokens: str | None = None
    max_num_seqs: int | None = at_least(1)
    max_num_batched_tokens: int | None = at_least(1)
    mm_processor_cache_gb: float | None = None
    enforce_eager: bool = False
    hf_overrides: str | None = None  # JSON object, e.g. YaRN rope scaling for long contexts
    chunk_size: int = at_least(1, 1024)  # requests per engine call (the runner saves after each)
    chunk_tokens: int = at_least(1, 2_000_000)  # prompt tokens per engine call (~1.5 GP of decoded images)
    # Tokens the chat template may add, counted only where the processor cannot be loaded (`counting`).
    length_margin: int = 64
    decode_workers: int = at_least(1, 4)  # threads decoding images before an engine call
    use_tqdm: bool = True
    # Requests sharing a prompt prefix run together so vLLM's prefix cache serves their prefill; "length": long first.
    request_order: str = "cache"
    # How the chat is built from a request, as a model's official wrapper built it (`harness.models.prompt_style`).
    prompt_style: str = "default"

    def __post_init__(self) -> None:
        check_order(self.request_order, "vllm")
        style_named(self.prompt_style)
        for f in dataclasses.fields(self):  # settings made in code get the checks `--model_args` get
            if MINIMUM in f.metadata:
                check_minimum(getattr(self, f.name), f.metadata[MINIMUM], f.name, "vllm")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(
                f"vllm backend: gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}"
            )
        if self.eos_tokens is not None and not self.eos_tokens.split():
            raise ValueError("vllm backend: eos_tokens names no token (space-separated special tokens: <|im_end|>)")
        for name in ("mm_processor_kwargs", "hf_overrides"):
            value = getattr(self, name)
            if value is not None:
                try:
                    parsed = json.loads(value)
                except json.JSONDecodeError as err:
                    raise ValueError(f"vllm backend: {name} must be a JSON object: {err}") from None
                if not isinstance(parsed, dict):
                    raise ValueError(f"vllm backend: {name} must be a JSON object, got {value!r}")

    def processor_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = json.loads(self.mm_processor_kwargs) if self.mm_processor_kwargs else {}
        if self.min_pixels is not None:
            kwargs["min_pixels"] = self.min_pixels
        if self.max_pixels is not None:
            kwargs["max_pixels"] = self.max_pixels
        return kwargs


ARG_ALIASES = {
    "model": "pretrained",
    "context_length": "max_model_len",
    "limit_mm_per_prompt": "max_images",
    "tp": "tensor_parallel_size",
}  # dp: data_parallel_size, the replicas' (`harness.models.replicas`)


def engine_kwargs(settings: VLLMSettings, image_limit: int) -> dict[str, Any]:
    """Keyword arguments for `vllm.LLM(...)` (one replica; data parallelism is the Ray pool's, see module doc)."""
    s = settings
    kwargs: dict[str, Any] = {
        "model": s.pretrained,
        "limit_mm_per_prompt": {"image": max(1, image_limit), "video": 0},
        "tensor_parallel_size": s.tensor_parallel_size,
        "pipeline_parallel_size": s.pipeline_parallel_size,
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "seed": s.seed,
        "dtype": s.dtype,
        "trust_remote_code": s.trust_remote_code,
        "generation_config": s.generation_config,
        "enforce_eager": s.enforce_eager,
    }
    optional = {
        "revision": s.revision,
        "tokenizer": s.tokenizer,
        "max_model_len": s.max_model_len,
        "distributed_executor_backend": s.distributed_executor_backend,
        "enable_prefix_caching": s.enable_prefix_caching,
        "num_gpu_blocks_override": s.num_gpu_blocks_override,
        "chat_template": s.chat_template,
        "max_num_seqs": s.max_num_seqs,
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "mm_processor_cache_gb": s.mm_processor_cache_gb,
        "hf_overrides": json.loads(s.hf_overrides) if s.hf_overrides else None,
        "mm_processor_kwargs": s.processor_kwargs() or None,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    return kwargs
