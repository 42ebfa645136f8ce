"""`hf`: a transformers vision-language model in this process (`model.HFModel`; its `--model_args` in `settings`,
images scaled to the processor's size first in `presize`). It counts a prompt with the checkpoint's own processor
(`harness.models.shared.hf_counting`, which `vllm` counts with too). With `text_only=true`, a text LLM
(`text_only.TextOnlyModel`, counted and fitted by `text_only.TextOnlyCount`); the two share their batching, decoding
and identity (`generation`). Here, its `--screen_only` stand-in (`screen_model`) and its declaration (`BACKEND`)."""

from __future__ import annotations

from typing import Any

from harness.models.backend_spec import BackendSpec, Extra, Replicas
from harness.models.backends.hf.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.facts.args import settings_from_args
from harness.models.facts.remote_code import RemoteCodeRefused
from harness.models.families import checkpoint_family
from harness.models.shared.screen_model import ScreenModel, StandIn, by_family


def screen_model(args: dict[str, str]) -> ScreenModel:
    """The `--screen_only` stand-in: the checkpoint's processor and config, from a local folder or the
    local Hub cache, offline, never the weights; counted by `ProcessorCount`, the very code the backend counts with when
    it runs (exact); with `text_only=true`, the tokenizer and config, counted by `TextOnlyCount` after the fit, as the
    text-only path sends it. A checkpoint whose processor does not load offline is counted by its family's rule, the
    family its config on this machine names, or the alias that names it (`harness.models.families.checkpoint_family`; a
    text LLM by the rows' figures): an estimate, labelled with why and with how its family is known, or that none is. A
    checkpoint the run refuses (code it would run in transformers' place, no chat template) is refused here alike."""
    from harness.models.backends.hf.settings import HFSettings, context_limit, images_taken, processor_count
    from harness.models.backends.hf.text_only import TextOnlyCount
    from harness.models.facts.checkpoint import load_failure
    from harness.models.shared.hf_counting import NoChatTemplate

    # Unlike the run, a screen may name no checkpoint: it is then counted by the rows' rule, and says so.
    settings = settings_from_args(HFSettings, {"pretrained": "", **args}, "hf")
    unlimited = "no_context_limit: every prompt is sent, however long" if settings.no_context_limit else ""
    default = "" if settings.context_length else "the run takes the checkpoint's max_position_embeddings"
    # the checkpoint's context unread: the family's estimate, or the rows' rule
    unread = StandIn(
        context_length=context_limit(settings, None),
        context_note=unlimited or default,
        max_images=settings.max_images,
        max_pixels=settings.max_pixels,
    )
    if not settings.pretrained:
        return by_family("hf", None, None, "no checkpoint is named (pretrained=...)", **unread)
    try:
        # a text LLM's tokenizer and config: what the run sends, after the fit
        count = (
            TextOnlyCount.load(settings, offline=True)
            if settings.text_only
            else processor_count(settings, offline=True)
        )
    except (RemoteCodeRefused, NoChatTemplate):
        raise  # the run refuses the checkpoint (its code, or no template to place images with): so does the screen
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
            **unread,
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
        max_images=images_taken(settings, count),
        max_pixels=settings.max_pixels,
        render=count.sent,
        chat_template=count.chat_template,
    )


def _gpus(settings: Any) -> float:
    return 0.0 if settings.device == "cpu" else 1.0  # one GPU a replica, unless told to run on the CPU


def _cpus(settings: Any) -> float:
    return float(settings.threads or 1)  # its torch threads, on a cluster without GPUs


BACKEND = BackendSpec(
    module="harness.models.backends.hf.model",
    extra=Extra("hf", ("torch", "transformers")),
    takes_device=True,
    runs_remote_code=True,
    token_budget=True,
    replicas=Replicas(gpus=_gpus, cpus=_cpus),
    screen=screen_model,
    folder_label=False,
    plain=True,
    known_as=KNOWN_AS,
    foreign_args=FOREIGN_ARGS,
)
