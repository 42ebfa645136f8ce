"""The `vllm` backend's `--screen_only` stand-in: the backend's own count (`VLLMModel.prompt_tokens`, the same
function the run screens with): the checkpoint's hf processor, as vLLM counts, loaded offline like `hf`'s (exact);
where it cannot be loaded offline, the family's rule plus the backend's `length_margin` (an estimate). Its engine is
never built."""

from __future__ import annotations

from harness.models.args import settings_from_args
from harness.models.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.vllm_engine.backend import VLLMModel
    from harness.models.vllm_engine.settings import ARG_ALIASES, VLLMSettings

    settings = settings_from_args(VLLMSettings, args, "vllm", aliases=ARG_ALIASES)
    # The backend's own count, the run's code path; its engine is built on the first generate, never here.
    backend = VLLMModel(settings, count_online=False)
    count = backend.count
    if count.processor is None:
        estimate = count.unavailable
    elif settings.tokenizer is not None:
        estimate = f"the engine tokenizes with tokenizer={settings.tokenizer}, counted with the checkpoint's own"
    else:
        estimate = count.processor.estimated
    return ScreenModel(
        "vllm",
        settings.pretrained,
        count=backend.prompt_tokens,
        exact=backend.exact,
        rule=backend.token_rule,
        estimate=estimate,
        context_length=settings.max_model_len,
        context_note="" if settings.max_model_len else "vLLM derives one from the model config",
        max_images=settings.max_images,
        max_pixels=settings.max_pixels,
        render=backend.render,
        chat_template=backend.facts.chat_template or (count.processor.chat_template if count.processor else None),
    )
