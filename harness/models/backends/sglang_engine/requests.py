"""Pure parts of the sglang backend: the `sampling_params` a request is given, the `Engine.generate` batch built from
rendered prompts, SGLang's outputs as result dicts, and the size of the engine's image-embedding cache from the run's
images."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.api import GenerationSettings, ImageRef, Request
from harness.models.shared.engine_calls import greedy_or_sampled

# SGLang's default image-embedding cache (`SGLANG_VLM_CACHE_SIZE_MB`, sglang/srt/environ.py), in MB.
DEFAULT_CACHE_MB = 100
CACHE_SIZE_ENV = "SGLANG_VLM_CACHE_SIZE_MB"


def image_cap(max_images: int | None, server_args: Mapping[str, object]) -> tuple[int | None, str]:
    """The most images a prompt may hold, and what sets it: the model's `max_images`, or SGLang's own
    `limit_mm_data_per_request` where it is given (its "image" entry), whichever is lower."""
    limits = server_args.get("limit_mm_data_per_request")
    engine = limits.get("image") if isinstance(limits, dict) else None
    caps = [(cap, f"the model's cap max_images={cap}") for cap in (max_images,) if cap is not None]
    caps += [(cap, f"SGLang's limit_mm_data_per_request image={cap}") for cap in (engine,) if isinstance(cap, int)]
    return min(caps) if caps else (None, "")


def sampling_params(gen: GenerationSettings, given: Mapping[str, object]) -> dict[str, object]:
    """A request's `sampling_params` (SGLang's `SamplingParams` fields): the run's own (`given`: `top_k=20`,
    `repetition_penalty=1.05`) under the task's generation settings; greedy unless the task samples (SGLang's
    temperature 0 is greedy, its top_k set to 1), always an explicit `max_new_tokens` (SGLang's default is 128)."""
    params = {
        **given,
        "max_new_tokens": gen.max_gen_toks,
        **greedy_or_sampled(gen),
        "stop": list(gen.until),
        "n": 1,
    }
    if gen.seed is not None:  # SGLang reads it under deterministic inference (`enable_deterministic_inference`)
        params["sampling_seed"] = gen.seed
    return params


@dataclass(frozen=True)
class EngineItem:
    """One request as the engine takes it: the prompt the checkpoint's chat template rendered, its images in the order
    their placeholders appear in it (read and decoded by the engine's worker threads), and its `sampling_params`."""

    prompt: str
    images: tuple[ImageRef, ...]
    sampling: dict[str, object]


def generate_batch(items: Sequence[EngineItem], decoded: Sequence[Sequence[object]]) -> dict[str, list[Any]]:
    """`Engine.generate`'s keyword arguments for a batch: a list of prompts, a list of image lists (one list a prompt,
    empty for a prompt without images: SGLang reads the batch as lists of lists by its first entry,
    `GenerateReqInput._normalize_image_data`) and a list of `sampling_params`."""
    return {
        "prompt": [item.prompt for item in items],
        "image_data": [list(images) for images in decoded],
        "sampling_params": [item.sampling for item in items],
    }


def output_result(output: object) -> dict[str, object]:
    """One of `Engine.generate`'s outputs (`{"text", "meta_info": {"finish_reason", "prompt_tokens", ...}}`) as a
    plain result dict."""
    if not isinstance(output, dict) or not isinstance(output.get("text"), str):
        return {"error": "engine_error: the engine returned no text"}
    meta = output.get("meta_info") or {}
    finish = meta.get("finish_reason")
    kind = finish.get("type") if isinstance(finish, dict) else finish
    result: dict[str, object] = {
        "text": output["text"],
        "finish_reason": str(kind) if kind is not None else None,
        **{key: meta[key] for key in ("prompt_tokens", "completion_tokens", "cached_tokens") if key in meta},
    }
    if kind == "abort":
        message = finish.get("message") if isinstance(finish, dict) else None
        result["error"] = f"engine_error: generation aborted: {message or 'no reason given'}"
    return result


@dataclass(frozen=True)
class ImageCache:
    """The engine's image-embedding cache sized from the run's images: it holds each image's vision embeddings
    (its vision tokens x the model's hidden size x the bytes of its dtype), so that the rows run one after another in
    the cache order (a haystack at each depth) encode no image twice. Sized to the largest prompt's distinct images,
    never below SGLang's default."""

    megabytes: int
    vision_tokens: int  # of the largest prompt's distinct images, by the rows' token figures
    hidden_size: int
    element_bytes: int

    @classmethod
    def of(cls, requests: Sequence[Request], hidden_size: int, element_bytes: int) -> ImageCache:
        tokens = max((_distinct_tokens(request) for request in requests), default=0)
        needed = math.ceil(tokens * hidden_size * element_bytes / 2**20)
        return cls(max(DEFAULT_CACHE_MB, needed), tokens, hidden_size, element_bytes)

    def line(self, given: str | None) -> str:
        """What the run's log says of it, in one line."""
        if given is not None:
            return f"harness: sglang image-embedding cache {CACHE_SIZE_ENV}={given} MB, as the environment gives it"
        return (
            f"harness: sglang image-embedding cache {CACHE_SIZE_ENV}={self.megabytes} MB: the largest prompt's "
            f"distinct images, {self.vision_tokens} vision tokens x hidden size {self.hidden_size} x "
            f"{self.element_bytes} bytes (SGLang's default: {DEFAULT_CACHE_MB} MB)"
        )


def _distinct_tokens(request: Request) -> int:
    seen: dict[str, int] = {}
    for image, tokens in zip(request.images, request.image_tokens, strict=False):
        seen.setdefault(image.sha256, tokens)
    return sum(seen.values())
