"""`openai`: any OpenAI-compatible chat-completions server (`model.OpenAIChatModel`; the wire format in `wire`, the
bound on one HTTP request's time and bytes in `deadline`; its `--screen_only` stand-in here).

A model whose name is a checkpoint on this machine (`vllm serve FOLDER`, a Hub id in the local Hub cache) is counted
as its server counts it, by the checkpoint's processor, in the run and on the screen alike (`served_count`). Else the
screen counts a prompt's text with OpenAI's own tokenizer, tiktoken (issue 63, item 6: the rows' `text_tokens`,
the build's tokenizer, read 10-12 % above o200k on text-heavy rows). tiktoken downloads its encodings on first use, so
it counts only where it is installed and its encoding loads (cached, or the network reachable); else the rows' count
stays, and the screen's rule says which counter was used."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from harness.api import Request, TextPart
from harness.models.backend_spec import api_backend
from harness.models.backends.openai_chat.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.shared.api_client.screen import api_screen_model, output_cap
from harness.models.shared.screen_model import ScreenModel

FALLBACK_ENCODING = "o200k_base"  # GPT-4o's and later models' encoding, for a name tiktoken does not know


class Encoding(Protocol):
    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


def openai_encoding(model: str) -> tuple[Encoding | None, str]:
    """tiktoken's encoding for `model` (its own table, else o200k_base), or None and why it could not be had."""
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]  # the openai extra
    except ImportError:
        return None, "tiktoken is not installed (pip install tiktoken counts OpenAI's text exactly)"
    try:
        try:
            return tiktoken.encoding_for_model(model), ""
        except KeyError:
            return tiktoken.get_encoding(FALLBACK_ENCODING), ""
    except Exception as err:  # a download refused offline, a damaged cache: the rows' count stays
        return None, f"tiktoken's encoding for {model} did not load ({type(err).__name__})"


def text_counter(encoding: Encoding) -> Callable[[Request], int]:
    """Each request's text as sent (every text part, images left to the family's rule) in `encoding`'s tokens."""

    def count(request: Request) -> int:
        parts = (p.text for m in request.as_sent for p in m.content if isinstance(p, TextPart))
        return sum(len(encoding.encode_ordinary(text)) for text in parts) + (
            len(encoding.encode_ordinary(request.assistant_prefix)) if request.assistant_prefix else 0
        )

    return count


def screen_model(args: dict[str, str]) -> ScreenModel:
    """The `--screen_only` stand-in: the API model's family rule, an estimate (the server counts for itself); its text
    by tiktoken where it loads, the rule saying which."""
    from harness.models.backends.openai_chat.model import OpenAIChatSettings

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
    served, not_loaded = settings.served_count()
    if served is not None:  # a checkpoint on this machine: counted as its server counts it
        screen.count_by(served.prompt_tokens, served.exact, served.served_rule, served.estimated)
        return screen
    encoding, why_not = openai_encoding(settings.model)
    if not_loaded:
        screen.rule = f"{screen.rule} ({not_loaded})"
    if encoding is not None:
        screen.count_text_by(text_counter(encoding), f"tiktoken's {encoding.name}")
    else:  # the rows' count stays, said with why
        screen.rule = f"text by the rows' text_tokens, approximate ({why_not}); {screen.rule}"
    return screen


def _from_hf_alias(args: dict[str, str]) -> dict[str, str]:
    """An `hf` alias served by `vllm serve` (`backend=openai`): screened against the serve line's length where hf had
    none; the server renders the chat with its own template, so no prompt style."""
    from harness.models.facts.alias import switched_from_hf

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
