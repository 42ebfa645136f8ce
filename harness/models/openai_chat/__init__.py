"""`openai`: any OpenAI-compatible chat-completions server (`model.OpenAIChatModel`; the wire format in `wire`, the
bound on one HTTP request's time and bytes in `deadline`; its `--screen_only` stand-in here)."""

from __future__ import annotations

from dataclasses import replace

from harness.models.api_client.screen import api_screen_model, output_cap
from harness.models.api_client.text_count import openai_encoding, text_counter
from harness.models.backend_spec import api_backend
from harness.models.openai_chat.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.screen_model import ScreenModel


def screen_model(args: dict[str, str]) -> ScreenModel:
    """The `--screen_only` stand-in: the API model's family rule, an estimate (the server counts for itself); its text
    by tiktoken where it loads (`harness.models.api_client.text_count`), the rule saying which."""
    from harness.models.openai_chat.model import OpenAIChatSettings

    settings = OpenAIChatSettings.from_args(args)
    detail = {"image_detail": settings.image_detail} if settings.image_detail else {}

    cap = output_cap(settings.model, "token_cap", settings.token_cap, settings.output_limit)
    screen = api_screen_model(
        settings.model,
        settings,
        detail,
        render=settings.rendered,  # as the backend's `render`
        output_cap=cap,
    )
    encoding, why_not = openai_encoding(settings.model)
    if encoding is not None:
        screen.count_text_by(text_counter(encoding), f"tiktoken's {encoding.name}")
    else:  # the rows' count stays, said with why
        screen.rule = f"text by the rows' text_tokens, approximate ({why_not}); {screen.rule}"
    return screen


def _from_hf_alias(args: dict[str, str]) -> dict[str, str]:
    """An `hf` alias served by `vllm serve` (`backend=openai`): screened against the serve line's length where hf had
    none; the server renders the chat with its own template, so no prompt style."""
    from harness.models.alias import switched_from_hf

    args = switched_from_hf(args, "context_length")
    args.pop("prompt_style", None)
    return args


BACKEND = replace(
    api_backend("openai", __name__, ("httpx",), "a server, which schedules them itself", screen_model),
    served_model_arg="model",
    adopts_alias={"hf": _from_hf_alias},
    known_as=KNOWN_AS,
    foreign_args=FOREIGN_ARGS,
)
