"""The `vllm` backend's count of a prompt before it is sent (its screen, `--screen_only`'s) against the prompt vLLM
builds of it (issue 96, item 1), on vLLM's CPU build and without an engine.

For every family of `tests.support.forward_families` with a tiny checkpoint whose architecture vLLM's registry holds,
requests of 1, 2 and 5 images of two sizes are counted by `VLLMModel.prompt_tokens` and given to vLLM's own input
processing as the backend's `LLM.generate` call gives them (`engine_prompt`: the prompt the backend rendered, its
images): `LLM.generate` hands a prompt to its renderer's `render_cmpl`, which tokenizes it and applies the model's
multimodal processor, whose `prompt_token_ids` are what the engine core runs (`tests.support.engine_runs.VLLMInput`:
the renderer built as `LLM` builds it, with the arguments the backend starts its engine with); no engine core
starts.

A family that cannot be given to vLLM here is skipped with its reason: its row's (a checkpoint's remote code not on
this machine), no vLLM architecture (transformers' Idefics2 and Ovis2 formats), a processor that takes fewer images.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.api import Request
from harness.models.aliases import ALIASES
from harness.models.backends.vllm_engine.requests import engine_prompt, request_payload
from harness.models.backends.vllm_engine.settings import vllm_settings
from harness.models.families import style_named
from tests.harness.models.vllm_cpu.test_vllm_cpu_engine import _cpu_build
from tests.support.engine_checkpoints import engine_checkpoint, prompt_style
from tests.support.engine_runs import VLLMInput
from tests.support.forward_families import BY_NAME, FAMILIES
from tests.support.forward_pass import tiny_checkpoint
from tests.support.model_requests import encode_image, make_request
from tests.support.processor_counts import SIZES

pytestmark = [
    pytest.mark.skipif(not _cpu_build(), reason="vLLM's CPU build: `make test` runs this folder in .venv-vllm-cpu"),
    pytest.mark.slow,
]

IMAGES = (1, 2, 5)
# Two sizes, one of them narrow: (640, 480) and (50, 800), alternating in a request
IMAGE_SIZES = (SIZES[2], SIZES[6])
# Families whose screen is not vLLM's count yet, and why (a strict xfail: the day it is, the mark must go)
NOT_YET = {
    "idefics3-engine-do_resize=false": "vLLM's Idefics3 writes each image's tiles as `get_number_of_image_patches` "
    "counts them, which scales every image to its longest edge (1,456 px) whatever do_resize says; the screen, where "
    "the engine's own settings hold do_resize false, counts the processor's split at the image's own size "
    "(`hf_expansion.own_size`): 196 tokens for a 256-px image where vLLM writes 2,937 (a request's own do_resize is "
    "counted as vLLM counts it, the case above)",
}
# vLLM's Gemma 3 and PaliGemma processing read "\n" (Gemma 3: up to "\n\n\n\n") from the vocabulary, as Gemma's
# SentencePiece vocabulary spells them; the tiny byte-level tokenizer holds newlines as bytes (KeyError: '\n').
NEWLINE_RUNS = ("gemma3", "paligemma")


def with_newlines(folder: Path, out: Path) -> Path:
    """A copy of `folder` whose tokenizer holds runs of 1 to 31 newlines as tokens, as Gemma's does."""
    from tokenizers import AddedToken
    from transformers import AutoTokenizer

    copy = out / folder.name
    shutil.copytree(folder, copy)
    tokenizer = AutoTokenizer.from_pretrained(copy)
    tokenizer.add_tokens([AddedToken("\n" * n, normalized=False) for n in range(31, 0, -1)])
    tokenizer.save_pretrained(copy)
    return copy


def gemma4_checkpoint() -> Path:
    """Gemma 4's tiny checkpoint as a count reads it: its attention heads as made (transformers 5.19 holds Gemma 4's
    head size per layer, which `engine_checkpoint` cannot set), and the config's `default_output_length` (the soft
    tokens of an image, which vLLM's Gemma 4 reads from the config as published and 5.19's config class has not)
    from its image processor's `max_soft_tokens`."""
    folder = tiny_checkpoint("gemma4")
    config = json.loads((folder / "config.json").read_text())
    images = json.loads((folder / "processor_config.json").read_text())["image_processor"]
    config["vision_config"]["default_output_length"] = images["max_soft_tokens"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def checkpoint(name: str, out: Path) -> Path:
    folder = gemma4_checkpoint() if name == "gemma4" else engine_checkpoint(name)
    return with_newlines(folder, out) if name in NEWLINE_RUNS else folder


def requests() -> list[Request]:
    """Requests of 1, 2 and 5 images, each after its own line of text, the two sizes alternating."""
    images = [encode_image((40 * i, 90, 160), size, "PNG") for i, size in enumerate(IMAGE_SIZES)]
    made = []
    for count in IMAGES:
        parts: list[str | bytes] = ["Look at these pictures."]
        for i in range(count):
            parts += [f"Picture {i + 1}:", images[i % 2]]
        made.append(make_request(f"images-{count}", [*parts, "Which colour is the last?"], doc_id=count))
    return made


Settings = tuple[tuple[str, object], ...]


def _case(family: Any, model_args: dict[str, str], request_settings: Settings, name: str) -> Any:
    """A family counted with these engine arguments and requests carrying these processor settings."""
    marks = [pytest.mark.xfail(raises=AssertionError, strict=True, reason=NOT_YET[name])] if name in NOT_YET else []
    return pytest.param(family, model_args, request_settings, marks=marks, id=name)


def _alias_settings(family: Any) -> list[Settings]:
    """The processor settings the rules of the family's alias give its requests (InternVL's 4 tiles, Idefics3's
    unresized images), which the backend sends with each call (`mm_processor_kwargs`)."""
    alias = ALIASES.get(family.aliases[0])
    return sorted(
        {rule.policy.processor_kwargs for rule in alias.rules if rule.policy.processor_kwargs} if alias else ()
    )


CASES = [
    *(_case(family, {}, (), family.name) for family in FAMILIES),
    *(
        _case(family, {}, settings, f"{family.name}-" + "-".join(f"{k}={v}" for k, v in settings))
        for family in FAMILIES
        for settings in (_alias_settings(family) if family.runs else ())
    ),
    # engine settings: Gemma 3's crops, which its size count misses (`hf_expansion.count_misses`); Idefics3's own size
    _case(BY_NAME["gemma3"], {"mm_processor_kwargs": '{"do_pan_and_scan": true}'}, (), "gemma3-pan-and-scan"),
    _case(BY_NAME["idefics3"], {"mm_processor_kwargs": '{"do_resize": false}'}, (), "idefics3-engine-do_resize=false"),
]


@pytest.fixture(autouse=True)
def environment_kept() -> Any:
    """The process's environment as it was: vLLM's CPU platform sets VLLM_WORKER_MULTIPROC_METHOD=spawn in it when a
    config is made, which every later harness run of this pytest process would inherit (and record as the user's)."""
    import os

    kept = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(kept)


@pytest.mark.parametrize(("family", "model_args", "request_settings"), CASES)
def test_the_screen_counts_each_prompt_as_vllm_builds_it(
    family: Any, model_args: dict[str, str], request_settings: Settings, tmp_path: Path
) -> None:
    from vllm.model_executor.models.registry import ModelRegistry

    from harness.models.backends.vllm_engine.backend import VLLMModel

    if not family.runs:
        pytest.skip(family.reason)
    folder = checkpoint(family.name, tmp_path)
    architecture = json.loads((folder / "config.json").read_text())["architectures"][0]
    if architecture not in ModelRegistry.get_supported_archs():
        pytest.skip(f"vLLM has no {architecture}")
    settings = vllm_settings({"pretrained": str(folder), **prompt_style(family.name), **model_args})
    model = VLLMModel(settings, count_online=False)  # the screen's own count, as `--screen_only` loads it
    made = [replace(request, processor_kwargs=request_settings) for request in requests()]
    given = {**settings.processor_kwargs(), **dict(request_settings)} if request_settings else None  # `generate`'s
    vllm = VLLMInput(settings, made)
    style = style_named(settings.prompt_style)
    counts = []
    for request in made:
        if vllm.max_images is not None and len(request.images) > vllm.max_images:
            continue  # vLLM refuses it (the run records it too_many_images)
        prompt = engine_prompt(request_payload(request, settings.seed, model.count.render(request), style), given)
        counted = (len(request.images), model.prompt_tokens(request), model.exact(request))
        counts.append((*counted, len(vllm.prompt_token_ids(prompt))))
    assert counts, f"vLLM takes {vllm.max_images} images a prompt"
    differ = [f"{n} images: screen {screen} (exact {exact}), vLLM {ids}" for n, screen, exact, ids in counts
              if screen != ids]  # fmt: skip
    assert not differ, "; ".join(differ)
