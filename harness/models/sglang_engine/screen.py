"""The `sglang` backend's `--screen_only` stand-in: the backend's own count (`SGLangModel.prompt_tokens`, the same
function the run screens with): the checkpoint's hf processor, as SGLang's processor expands it, loaded offline like
`hf`'s (exact); where it cannot be loaded offline, the family's rule plus the backend's `length_margin` (an estimate).
Its engine is never built."""

from __future__ import annotations

from harness.models.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.sglang_engine.backend import SGLangModel
    from harness.models.sglang_engine.settings import model_settings

    settings = model_settings(args)
    backend = SGLangModel(settings, count_online=False)  # the run's code path; its engine is built by generate only
    count = backend.count
    return backend.screen(
        settings.pretrained,
        estimate=count.unavailable if count.processor is None else count.processor.estimated,
        context_length=settings.context_length,
        max_images=backend.facts.max_images,
        max_pixels=settings.max_pixels,
    )
