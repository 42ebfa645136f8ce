"""The `openai` backend's `--screen_only` stand-in: the API model's family rule, an estimate (the server counts for
itself)."""

from __future__ import annotations

from harness.api import Request
from harness.models.api_client.screen import api_screen_model
from harness.models.args import settings_from_args
from harness.models.screen_model import ScreenModel
from harness.sent import Sent


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.openai_chat.model import OpenAIChatSettings
    from harness.models.openai_chat.wire import request_image_settings, sent_messages

    settings = settings_from_args(OpenAIChatSettings, args, "openai", aliases={"pretrained": "model"})
    detail = {"image_detail": settings.image_detail} if settings.image_detail else {}

    def render(request: Request) -> Sent:  # as the backend's `render`: the request's image settings over the model's
        try:
            given, image_format = request_image_settings(request, settings.image_detail, settings.image_format)
        except ValueError:  # a setting the backend refuses (the request is invalid_input there, never sent)
            given, image_format = None, settings.image_format
        s = settings
        return sent_messages(request, given, s.continue_final_message, image_format, s.empty_text_parts)

    return api_screen_model("openai", settings.model, settings, detail, render=render)
