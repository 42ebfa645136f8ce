"""`hf`: a transformers vision-language model in this process (`model.HFModel`; its `--model_args` in `settings`,
images scaled to the processor's size first in `presize`, its `--screen_only` stand-in in `screen`). It counts a
prompt with the checkpoint's own processor (`harness.models.hf_counting`, which `vllm` counts with too). With
`text_only=true`, a text LLM (`text_only.TextOnlyModel`, counted and fitted by `text_only.TextOnlyCount`); the two share their
batching, decoding and identity (`generation`)."""

from __future__ import annotations

from typing import Any

from harness.models.backend_spec import BackendSpec, Extra, Replicas
from harness.models.hf.foreign import FOREIGN_ARGS, KNOWN_AS
from harness.models.hf.screen import screen_model


def _gpus(settings: Any) -> float:
    return 0.0 if settings.device == "cpu" else 1.0  # one GPU a replica, unless told to run on the CPU


def _cpus(settings: Any) -> float:
    return float(settings.threads or 1)  # its torch threads, on a cluster without GPUs


BACKEND = BackendSpec(
    module="harness.models.hf.model",
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
