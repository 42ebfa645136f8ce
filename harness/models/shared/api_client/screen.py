"""The `--screen_only` stand-in of an API backend: the API model's family rule, an estimate (the server counts for
itself)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from harness.api import Request
from harness.models.families import family_of_api_name
from harness.models.shared.screen_model import OutputCap, ScreenModel, by_family
from harness.sent import Sent

if TYPE_CHECKING:  # reading a backend's declaration imports no HTTP stack
    from harness.models.shared.api_client.settings import ApiCallSettings


def api_screen_model(
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
    where the backend does not send the request's `max_gen_toks` as its cap. How the backend asks its provider to cache
    prompts (`settings.cache_rule`) is what the estimate prices (`harness.running.cost_estimate.cache_tallies`)."""
    return by_family(
        settings.backend,
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
        prompt_cache=settings.cache_rule(settings.batch_size(1)),
        request_order=settings.request_order,
    )


def output_cap(model: str, field: str, cap: str, output_limit: int | None) -> OutputCap:
    """What bounds an answer's billed output where a backend may send no cap: the cap sent (`field`, the setting named
    so: "task", the request's max_gen_toks, or a number), else the model's own output limit (`output_limit`, never
    sent), else nothing."""
    if cap == "task":
        return OutputCap()
    if cap != "none":
        return OutputCap(int(cap), note=f"{field}={cap} is sent as each answer's cap")
    uncapped = f"{model} is sent no output cap ({field}=none; its thinking bills as output)"
    if output_limit is None:
        return OutputCap(
            bounded=False,
            note=f"{uncapped}: nothing bounds an answer's output (give output_limit=N, the model's own output limit, "
            "in --model_args to price it)",
        )
    return OutputCap(
        output_limit,
        note=f"{uncapped}: each answer is priced at output_limit={output_limit:,} tokens, the most it can "
        "be billed for where that is the model's own output limit (an alias's is; answers are mostly far shorter)",
    )
