"""`anthropic`: the Anthropic Messages API through Anthropic's SDK (`model.AnthropicModel`; the request and answer in
`wire`, the HTTP machinery shared with every API backend in `harness.models.shared.api_client`)."""

from __future__ import annotations

from harness.models.backend_spec import api_backend
from harness.models.shared.api_client.screen import api_screen_model
from harness.models.shared.screen_model import OutputCap, ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.backends.anthropic_messages.model import AnthropicSettings
    from harness.models.backends.anthropic_messages.wire import sent_messages

    settings = AnthropicSettings.from_args(args)
    budget = settings.thinking_budget
    cap = OutputCap(extra=budget, note=f"thinking_budget={budget:,} is sent on top of max_gen_toks") if budget else None
    return api_screen_model(settings.model, settings, render=sent_messages, output_cap=cap)


BACKEND = api_backend("anthropic", __name__, ("anthropic",), "Anthropic's servers, which schedule them", screen_model)
