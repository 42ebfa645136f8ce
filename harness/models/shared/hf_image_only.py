"""A checkpoint's processor built from its parts without the video processor: the `hf` backend's
`processor=image_only`, for machines without torchvision.

transformers 5 builds Qwen2-VL-family processors (Qwen2-VL, Qwen2.5-VL) only with a video processor, and
every video processor needs torchvision, whose only x86_64 CPU-usable wheels here are multi-GB CUDA builds
(bench/RESULTS.md, section "The hf backend on 128K rows on a CPU"). The images need none of it: the image
processor has a PIL/numpy backend (`backend="pil"`), and the processor's own class places and expands the image
tokens. So the same processor class is built with its video attribute left out, from the checkpoint's
tokenizer (with its chat template) and its image processor on the PIL backend. Requests with videos cannot be
sent through it; this harness sends none.
"""

from __future__ import annotations

import inspect
from typing import Any

# The leading parameters a processor class must take for its video processor to be left out (Qwen2-VL's layout).
_PARTS = ("image_processor", "tokenizer", "video_processor")


def without_video(processor_class: type[Any]) -> type:
    """A subclass of `processor_class` whose constructor takes no video processor (transformers reads a
    processor's parts from its constructor's parameters, so the video part is then neither required nor checked)."""
    params = [p for p in inspect.signature(processor_class.__init__).parameters if p != "self"]
    if tuple(params[:3]) != _PARTS:
        raise ValueError(
            f"processor=image_only: {processor_class.__name__} takes {params[:3]}, not {list(_PARTS)} "
            "first; only a Qwen2-VL-style processor can be built without its video processor"
        )

    def __init__(
        self: object,
        image_processor: object = None,
        tokenizer: object = None,
        chat_template: object = None,
        **kwargs: Any,
    ) -> None:
        processor_class.__init__(self, image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    return type(f"{processor_class.__name__}ImageOnly", (processor_class,), {"__init__": __init__})


def load_image_only_processor(pretrained: str, config: Any, **kwargs: Any) -> object:
    """`pretrained`'s processor (the class its config maps to) with its tokenizer and its PIL image processor,
    without a video processor; `kwargs`: `from_pretrained` arguments (revision, local_files_only, ...)."""
    from transformers import AutoImageProcessor, AutoTokenizer
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING

    if type(config) not in PROCESSOR_MAPPING:
        raise ValueError(f"processor=image_only: transformers maps no processor class to {type(config).__name__}")
    # transformers types the mapping's values as (slow, fast) pairs, as its tokenizer mapping's; a processor's is a class
    processor_class: type = PROCESSOR_MAPPING[type(config)]  # type: ignore[assignment]
    image_only = without_video(processor_class)
    tokenizer = AutoTokenizer.from_pretrained(pretrained, **kwargs)
    image_processor = AutoImageProcessor.from_pretrained(pretrained, backend="pil", **kwargs)
    return image_only(
        image_processor=image_processor,
        tokenizer=tokenizer,
        chat_template=tokenizer.chat_template,
        **own_arguments(processor_class, pretrained, **kwargs),
    )


def own_arguments(processor_class: type, pretrained: str, **kwargs: object) -> dict[str, object]:
    """The processor's own constructor arguments its checkpoint records (`processor_config.json`: LLaVA-OneVision's
    `num_image_tokens` and `vision_feature_select_strategy`, InternVL's `image_seq_length`), which `from_pretrained`
    would give it; none where the checkpoint records none."""
    try:
        recorded, _ = getattr(processor_class, "get_processor_dict")(pretrained, **kwargs)  # noqa: B009
    except (OSError, ValueError):  # no processor_config.json: the class's defaults, as from_pretrained would
        return {}
    own = inspect.signature(processor_class).parameters  # its constructor's, as without_video reads them
    takes = set(own) - {"chat_template", "kwargs", *_PARTS}
    return {name: value for name, value in recorded.items() if name in takes}
