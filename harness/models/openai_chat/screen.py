"""The `openai` backend's `--screen_only` stand-in: the API model's family rule, an estimate (the server counts for
itself)."""

from __future__ import annotations

from harness.api import Request
from harness.models.api_client.screen import api_screen_model, output_cap
from harness.models.args import settings_from_args
from harness.models.screen_model import ScreenModel
from harness.sent import Sent


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.openai_chat.model import OpenAIChatSettings, cache_rule
    from harness.models.openai_chat.wire import rendered

    settings = settings_from_args(OpenAIChatSettings, args, "openai", aliases={"pretrained": "model"})
    detail = {"image_detail": settings.image_detail} if settings.image_detail else {}

    def render(request: Request) -> Sent:  # as the backend's `render`
        return rendered(request, settings)

    cap = output_cap(settings.model, "token_cap", settings.token_cap, settings.output_limit)
    return api_screen_model(
        "openai",
        settings.model,
        settings,
        detail,
        render=render,
        output_cap=cap,
        prompt_cache=cache_rule(settings, settings.batch_size(1)),
    )
