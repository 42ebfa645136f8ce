"""`gemini`: Google's Gemini API through google-genai (`model.GeminiModel`; the request and answer in `wire`, the
HTTP machinery shared with every API backend in `harness.models.api_client`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.api import Request
from harness.models.api_client.screen import api_screen_model
from harness.models.backend_spec import BackendSpec, Extra, Replicas
from harness.models.screen_model import OutputCap, ScreenModel
from harness.sent import Sent

if TYPE_CHECKING:  # reading a backend's declaration imports no SDK
    from harness.models.gemini.model import GeminiSettings


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.args import settings_from_args
    from harness.models.gemini.model import GeminiSettings, cache_rule
    from harness.models.gemini.wire import sent_contents

    settings = settings_from_args(GeminiSettings, args, "gemini", aliases={"pretrained": "model"})

    def render(request: Request) -> Sent:  # as the backend's `render`
        return sent_contents(
            request,
            images=settings.images,
            image_format=settings.image_format,
            empty_text_parts=settings.empty_text_parts,
        )

    return api_screen_model(
        "gemini",
        settings.model,
        settings,
        render=render,
        output_cap=output_cap(settings),
        prompt_cache=cache_rule(settings, settings.batch_size(1)),
    )


def output_cap(settings: GeminiSettings) -> OutputCap:
    """What bounds an answer's billed output: the cap sent (`max_output_tokens`: the request's max_gen_toks, or a
    number), else the model's own output limit (`output_limit`), else nothing."""
    limit = settings.max_output_tokens
    if limit == "task":
        return OutputCap()
    if limit != "none":
        return OutputCap(int(limit), note=f"max_output_tokens={limit} is sent as each answer's cap")
    uncapped = f"{settings.model} is sent no output cap (max_output_tokens=none; its thinking bills as output)"
    if settings.output_limit is None:
        return OutputCap(
            bounded=False,
            note=f"{uncapped}: nothing bounds an answer's output (give output_limit=N, the model's own output limit, "
            "in --model_args to price it)",
        )
    return OutputCap(
        settings.output_limit,
        note=f"{uncapped}: each answer is priced at output_limit={settings.output_limit:,} tokens, the most it can "
        "be billed for where that is the model's own output limit (an alias's is; answers are mostly far shorter)",
    )


BACKEND = BackendSpec(
    module="harness.models.gemini.model",
    extra=Extra("gemini", ("google.genai",)),
    # Google's servers schedule the requests: replicas of a client would only multiply the load on them.
    replicas=Replicas(refused="the gemini backend sends requests to Google's servers, which schedule them"),
    screen=screen_model,
    batch_arg="batch_journal",
    priced=True,
)
