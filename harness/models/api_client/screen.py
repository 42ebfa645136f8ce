"""The `--screen_only` stand-in of an API backend: the API model's family rule, an estimate (the server counts for
itself)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from harness.api import Request
from harness.models.families import family_of_api_name
from harness.models.screen_model import OutputCap, ScreenModel, by_family
from harness.sent import Sent

if TYPE_CHECKING:  # reading a backend's declaration imports no HTTP stack
    from harness.models.api_client.calls import ApiCallSettings


def api_screen_model(
    backend: str,
    model: str,
    settings: ApiCallSettings,
    counted_with: Mapping[str, object] | None = None,
    *,
    render: Callable[[Request], Sent] | None = None,
    output_cap: OutputCap | None = None,
) -> ScreenModel:
    """`model`'s prompts counted by its family's rule (`counted_with`: the settings the rule reads, e.g. the image
    detail), screened against the limits `settings` give; `render`: the request as the backend would send it
    (`harness.sent`), what `--screen_only --write_out` prints; `output_cap`: what bounds an answer's billed output,
    where the backend does not send the request's `max_gen_toks` as its cap."""
    return by_family(
        backend,
        model,
        family_of_api_name(model),
        f"{model} is an API model: its server counts the prompt",
        settings=counted_with or {},
        context_length=settings.context_length,
        context_note="" if settings.context_length else "pass context_length=N to screen against one",
        max_images=settings.max_images,
        max_pixels=settings.max_pixels,
        render=render,
        output_cap=output_cap,
    )
