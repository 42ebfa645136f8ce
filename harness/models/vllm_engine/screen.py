"""The `vllm` backend's `--screen_only` stand-in: the backend's own count (`VLLMModel.prompt_tokens`, the same
function the run screens with): the checkpoint's hf processor, as vLLM counts, loaded offline like `hf`'s (exact);
where it cannot be loaded offline, the family's rule plus the backend's `length_margin` (an estimate). Its engine is
never built: each image is checked against the least its encoder cache will hold (`image_limit`), where the limit
given makes that less than the run's largest image."""

from __future__ import annotations

from harness.api import OVER_LENGTH, Request, Status
from harness.models.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.vllm_engine.backend import VLLMModel
    from harness.models.vllm_engine.image_limit import encoder_refusal, image_count, least_encoder_cache
    from harness.models.vllm_engine.settings import LIMIT, vllm_settings

    settings = vllm_settings(args)
    # The backend's own count, the run's code path; its engine is built on the first generate, never here.
    backend = VLLMModel(settings, count_online=False)
    count = backend.count
    if count.processor is None:
        estimate = count.unavailable
    elif settings.tokenizer is not None:
        estimate = f"the engine tokenizes with tokenizer={settings.tokenizer}, counted with the checkpoint's own"
    else:
        estimate = count.processor.estimated
    limit = settings.engine.get(LIMIT)
    cache = least_encoder_cache(
        limit if isinstance(limit, dict) else None, settings.engine, settings.gpus, count.size_tokens
    )

    def refusal(request: Request) -> tuple[Status, str] | None:
        reason = encoder_refusal(count.image_tokens(request), cache.tokens, cache.where) if cache else None
        return (OVER_LENGTH, reason.removeprefix("over_length: ")) if reason else None

    return backend.screen(
        settings.pretrained,
        estimate=estimate,
        context_length=settings.max_model_len,
        # a limit given is the engine's image count (the run records a row over it too_many_images)
        max_images=image_count(limit, settings.max_images) if isinstance(limit, dict) else settings.max_images,
        max_pixels=settings.max_pixels,
        refusal=refusal if cache is not None else None,
        chat_template=backend.facts.chat_template or (count.processor.chat_template if count.processor else None),
    )
