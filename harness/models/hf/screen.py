"""The `hf` backend's `--screen_only` stand-in: the checkpoint's processor and config, from a local folder or the
local Hub cache, offline, never the weights; counted by `ProcessorCount`, the very code the backend counts with when
it runs (exact); with `text_only=true`, the tokenizer and config, counted by `TextOnlyCount` after the fit, as the
text-only path sends it. A checkpoint whose processor does not load offline is counted by its family's rule, the
family its config on this machine names, or the alias that names it (`harness.models.families.checkpoint_family`; a
text LLM by the rows' figures): an estimate, labelled with why and with how its family is known, or that none is."""

from __future__ import annotations

from typing import TypedDict

from harness.models.args import settings_from_args
from harness.models.families import checkpoint_family
from harness.models.remote_code import RemoteCodeRefused
from harness.models.screen_model import ScreenModel, by_family


class _Limits(TypedDict):
    max_images: int | None
    max_pixels: int | None


def screen_model(args: dict[str, str]) -> ScreenModel:
    from harness.models.families import style_named
    from harness.models.hf.settings import HFSettings, context_limit
    from harness.models.hf.text_only import TextOnlyCount
    from harness.models.hf_counting import ProcessorCount, load_failure

    # Unlike the run, a screen may name no checkpoint: it is then counted by the rows' rule, and says so.
    settings = settings_from_args(HFSettings, {"pretrained": "", **args}, "hf")
    limits = _Limits(max_images=settings.max_images, max_pixels=settings.max_pixels)
    unlimited = "no_context_limit: every prompt is sent, however long" if settings.no_context_limit else ""
    default = "" if settings.context_length else "the run takes the checkpoint's max_position_embeddings"
    unknown_context = unlimited or default
    if not settings.pretrained:
        return by_family(
            "hf",
            None,
            None,
            "no checkpoint is named (pretrained=...)",
            context_length=context_limit(settings, None),
            context_note=unknown_context,
            **limits,
        )
    count: ProcessorCount | TextOnlyCount
    try:
        if settings.text_only:  # a text LLM's tokenizer and config: what the run sends, after the fit
            count = TextOnlyCount.load(
                settings.pretrained,
                revision=settings.revision,
                trust_remote_code=settings.trust_remote_code,
                offline=True,
                yarn_factor=settings.yarn_factor,
            )
        else:
            count = ProcessorCount.load(
                settings.pretrained,
                revision=settings.revision,
                trust_remote_code=settings.trust_remote_code,
                max_pixels=settings.max_pixels,
                offline=True,
                image_only=settings.processor == "image_only",
                style=style_named(settings.prompt_style),
                settings_at_load=True,  # as the backend applies a request's settings
                max_grid_tiles=settings.max_grid_tiles,
            )
    except RemoteCodeRefused:
        raise  # the checkpoint's code is refused, not estimated around
    except Exception as err:  # whatever keeps the processor from loading offline: the family's estimate, and why
        why = load_failure(settings.pretrained, err, offline=True)
        # its family by its config on this machine, or the alias that names it (a text LLM: the rows' figures)
        family, known = (None, "") if settings.text_only else checkpoint_family(settings.pretrained, settings.revision)
        return by_family(
            "hf",
            settings.pretrained,
            family,
            why,
            known=known,
            settings={"max_grid_tiles": settings.max_grid_tiles} if settings.max_grid_tiles else None,
            context_length=context_limit(settings, None),
            context_note=unknown_context,
            **limits,
        )
    return ScreenModel(
        "hf",
        settings.pretrained,
        count=count.prompt_tokens,
        exact=count.exact,
        rule=count.token_rule,
        estimate=count.estimated,
        context_length=context_limit(settings, count.context_length),
        context_note=unlimited or ("" if settings.context_length else "the checkpoint's max_position_embeddings"),
        **limits,
        render=count.sent,
        chat_template=count.chat_template,
    )
