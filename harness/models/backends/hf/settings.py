"""The `hf` backend's settings (`--model_args` of `--model hf`, checked as they are read) and the `from_pretrained`
arguments they give the model's weights."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.models.facts.args import at_least
from harness.models.facts.prompt_style import TEXT_ONLY
from harness.models.families import style_named
from harness.models.shared.scheduling.prefix_order import check_order

if TYPE_CHECKING:
    from harness.models.shared.hf_counting import ProcessorCount


@dataclass(frozen=True)
class HFSettings:
    pretrained: str  # hub name or local folder
    revision: str | None = None
    dtype: str = "auto"
    device: str | None = None  # default: cuda when available, else cpu
    device_map: str | None = None
    max_pixels: int | None = at_least(1)  # images larger than this area are scaled down first
    trust_remote_code: bool = False
    threads: int | None = at_least(1)  # torch CPU threads
    # Threads decoding and scaling a batch's images (PIL releases the GIL for both); default: the process's cores, at
    # most 4. The batch's images are ready before the model runs, so they never compete with torch's own threads; on
    # a quiet 2-core machine 2 threads take ~1 s off a 100-row MMNeedle run (bench/RESULTS.md, issue 33).
    image_threads: int | None = at_least(1)
    context_length: int | None = at_least(1)  # default: the text model's max_position_embeddings
    # No context limit at all: every prompt is sent, however long, as the papers' official wrappers sent theirs (a
    # checkpoint runs past its training window as it is, MMLongBench App. D). The aliases set it; context_length is
    # then ignored.
    no_context_limit: bool = False
    # A context_length past the checkpoint's window (its max_position_embeddings) is run as given, each row longer
    # than the window recorded `past_window`; without it the window caps the context (and no_context_limit passes it).
    past_window: bool = False
    max_images: int | None = at_least(1)
    attn_implementation: str | None = None
    request_order: str = (
        "length"  # "cache": requests sharing a prompt prefix together (`harness.models.shared.scheduling.prefix_order`)
    )
    # "auto": transformers' choice (its torchvision image processors where torchvision is installed); "pil": its PIL
    # ones, as transformers 4's default slow processors, the papers' era's, ran; "image_only": built without a video
    # processor, no torchvision (`harness.models.shared.hf_image_only`)
    processor: str = "auto"
    # How the chat is built from a request, as a model's official wrapper built it (`harness.models.facts.prompt_style`).
    prompt_style: str = "default"
    # AnyRes (LLaVA-NeXT, LLaVA-OneVision): the grid pinpoints kept to those of at most N tiles, as MMLongBench's
    # LLaVA-OneVision wrapper keeps its processor's (vlm_model/llava_onevision.py:44-49); the model's config gets the
    # same list, which the wrapper left whole (a single image's features then follow another grid than its tokens).
    max_grid_tiles: int | None = at_least(1)
    # A text LLM (AutoModelForCausalLM and its tokenizer), images dropped and a row's context cut at its end to fit,
    # as the official text-only wrapper ran its LLMs (`harness.models.backends.hf.text_only`).
    text_only: bool = False
    # YaRN over the checkpoint's max_position_embeddings by this factor (text_only), as the wrapper's --use_yarn.
    yarn_factor: float | None = at_least(1)

    def __post_init__(self) -> None:
        check_order(self.request_order, "hf")
        style_named(self.prompt_style)
        if self.processor not in ("auto", "pil", "image_only"):
            raise ValueError(f"--model_args processor={self.processor!r}: expected auto, pil or image_only")
        if self.yarn_factor is not None and not self.text_only:
            raise ValueError("--model_args yarn_factor: a setting of the text-only path (text_only=true) alone")
        if self.text_only and (
            self.prompt_style not in ("default", TEXT_ONLY.name) or self.processor != "auto" or self.max_grid_tiles
        ):
            raise ValueError(
                "--model_args text_only=true builds the chat as the official text-only wrapper did (prompt_style "
                "text_only) and loads no processor: another prompt_style, processor and max_grid_tiles do not apply"
            )
        if self.prompt_style == TEXT_ONLY.name and not self.text_only:
            raise ValueError("--model_args prompt_style=text_only: a text LLM's chat, for text_only=true alone")


def images_taken(settings: HFSettings, count: object) -> int | None:
    """The images a prompt may hold: `max_images`, and at most the one image a prompt of a model whose processor writes
    one image's tokens whatever its images (`ProcessorCount.max_images`: BLIP-2's); None: any number."""
    caps = [n for n in (settings.max_images, getattr(count, "max_images", None)) if isinstance(n, int)]
    return min(caps) if caps else None


def context_limit(settings: HFSettings, checkpoint_context: int | None) -> int | None:
    """The prompt length a run screens against: none with `no_context_limit`, else `context_length` (within the
    checkpoint's window unless `past_window`), else the checkpoint's own."""
    if settings.no_context_limit:
        return None
    if settings.context_length and checkpoint_context and not settings.past_window:
        return min(settings.context_length, checkpoint_context)
    return settings.context_length or checkpoint_context


def window_passed(settings: HFSettings, checkpoint_context: int | None) -> int | None:
    """The checkpoint's window where the run may pass it (`no_context_limit`, `past_window`), so its rows past it are
    recorded so; else None."""
    return checkpoint_context if settings.no_context_limit or settings.past_window else None


def processor_count(settings: HFSettings, *, offline: bool = False) -> ProcessorCount:
    """The checkpoint's processor and config as the backend counts with them, for the run (`model.HFModel`) and its
    `--screen_only` stand-in (`offline`: from a local folder or the local Hub cache only) alike; a request's processor
    settings applied at load, as the backend applies them."""
    from harness.models.shared.hf_counting import ProcessorCount

    return ProcessorCount.load(
        settings.pretrained,
        revision=settings.revision,
        trust_remote_code=settings.trust_remote_code,
        max_pixels=settings.max_pixels,
        offline=offline,
        image_only=settings.processor == "image_only",
        pil=settings.processor == "pil",
        style=style_named(settings.prompt_style),
        settings_at_load=True,
        max_grid_tiles=settings.max_grid_tiles,
    )


def default_image_threads() -> int:
    """`image_threads` where the model arguments do not set it: the cores this process may run on, at most 4."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cores))


def load_kwargs(settings: HFSettings, torch: Any, processor: object = None) -> dict[str, Any]:
    """`from_pretrained` arguments for the model weights (`processor`: the one loaded, whose kept grid pinpoints the
    model's config is given under `max_grid_tiles`)."""
    kwargs: dict[str, Any] = {
        "revision": settings.revision,
        "trust_remote_code": settings.trust_remote_code,
        "dtype": "auto",
    }
    if settings.dtype != "auto":
        if not isinstance(getattr(torch, settings.dtype, None), torch.dtype):
            raise ValueError(
                f"--model_args dtype={settings.dtype!r}: not a torch dtype (try bfloat16, float16, float32, auto)"
            )
        kwargs["dtype"] = getattr(torch, settings.dtype)
    if settings.device_map:
        kwargs["device_map"] = settings.device_map
    if settings.attn_implementation:
        kwargs["attn_implementation"] = settings.attn_implementation
    if settings.max_grid_tiles is not None and processor is not None:
        image_processor = getattr(processor, "image_processor", None)
        kwargs["image_grid_pinpoints"] = getattr(image_processor, "image_grid_pinpoints", None)
    return kwargs
