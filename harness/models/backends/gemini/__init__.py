"""`gemini`: Google's Gemini API through google-genai (`model.GeminiModel`; the request and answer in `wire`, the
HTTP machinery shared with every API backend in `harness.models.shared.api_client`)."""

from __future__ import annotations

from harness.models.backend_spec import api_backend
from harness.models.shared.api_client.screen import api_screen_model, output_cap
from harness.models.shared.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.backends.gemini.model import GeminiSettings

    settings = GeminiSettings.from_args(args)
    return api_screen_model(
        settings.model,
        settings,
        render=settings.rendered,  # as the backend's `render`
        output_cap=output_cap(settings.model, "max_output_tokens", settings.max_output_tokens, settings.output_limit),
    )


BACKEND = api_backend("gemini", __name__, ("google.genai",), "Google's servers, which schedule them", screen_model)
