"""`openai`: any OpenAI-compatible chat-completions server (`model.OpenAIChatModel`; the wire format in `wire`, the
bound on one HTTP request's time and bytes in `deadline`, its `--screen_only` stand-in in `screen`)."""

from __future__ import annotations

from dataclasses import replace

from harness.models.backend_spec import api_backend
from harness.models.openai_chat.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.openai_chat.screen import screen_model


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
