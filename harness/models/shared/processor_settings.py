"""A request's processor settings applied as the official wrappers applied them: when the processor is loaded.

transformers' processors do not all read a setting from the same place. `Idefics2Processor` writes each image's
tokens into the text from its image processor's own `do_image_splitting`, and `LlavaNextProcessor` /
`LlavaOnevisionProcessor` from its `image_grid_pinpoints`, while the pixels follow a setting given with the call:
where the two differ the text holds other image tokens than the pixels make features, and the model raises
(Idefics2 at 64K/128K: 640 tokens for 128 features over two images). The official wrappers set them when they loaded
the processor: MMLongBench's `vlm_model/idefics.py:155-159` (`AutoProcessor.from_pretrained(..., do_image_splitting=
...)`, Idefics3's `do_resize=False` with it), `llava_onevision.py:44-49` (its pinpoints) and `phi4.py:46` (its
`dynamic_hd`) set the image processor's attributes, `phi3.py:56-59` loads with `num_crops`.

So every setting an image processor holds (a key of its `valid_kwargs`, or an attribute it has) is applied at load:
the processor is copied with its image processor rebuilt by `from_dict` with the setting, the step `from_pretrained`
ends with, and text and pixels then read the same value. What no image processor holds stays an argument of the call.
One processor per distinct setting, made once and kept: a run whose tasks ask for different settings (Idefics2 splits
images at 8K-32K and not on VH at 64K/128K) holds a processor for each, and each request is processed, counted and
scaled with the one for its settings.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def held_by(image_processor: object, key: str) -> bool:
    """Whether `image_processor` holds setting `key` (and so reads it at load as well as at a call)."""
    declared = getattr(getattr(type(image_processor), "valid_kwargs", None), "__annotations__", {})
    return key in declared or key in getattr(image_processor, "__dict__", {}) or hasattr(type(image_processor), key)


def split_settings(processor: object, settings: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """(the settings applied at load, those left for the call)."""
    image_processor = getattr(processor, "image_processor", None)
    at_load = {k: v for k, v in settings.items() if image_processor is not None and held_by(image_processor, k)}
    return at_load, {k: v for k, v in settings.items() if k not in at_load}


def frozen_settings(value: object) -> object:
    """Settings (or one setting) as a hashable key: pinpoints are lists of lists."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), frozen_settings(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(frozen_settings(v) for v in value)
    return value


@dataclass(frozen=True)
class Settled:
    """A processor with a request's load-time settings applied, and the settings left for the call."""

    processor: Any  # a transformers processor, called as the backend calls it
    call: dict[str, object]
    at_load: dict[str, object]


@dataclass
class SettledProcessors:
    """`base` and its copies with settings applied at load, one per distinct setting (thread-safe: the hf backend
    scales a batch's images on threads)."""

    base: object
    _made: dict[object, object] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, settings: Mapping[str, object] | None) -> Settled:
        at_load, call = split_settings(self.base, settings or {})
        if not at_load:
            return Settled(self.base, call, at_load)
        key = frozen_settings(at_load)
        with self._lock:
            made = self._made.get(key)
            if made is None:
                made = self._made[key] = with_image_settings(self.base, at_load)
        return Settled(made, call, at_load)

    @property
    def made(self) -> int:
        """Processors made besides the base."""
        return len(self._made)


def with_image_settings(processor: object, settings: Mapping[str, object]) -> object:
    """A copy of `processor` (its tokenizer and other parts shared) whose image processor was built with `settings`,
    as `from_pretrained(..., **settings)` builds it."""
    image_processor = getattr(processor, "image_processor")  # noqa: B009 - a processor without one has no settings
    made = copy.copy(processor)
    # from_dict applies keys its valid_kwargs declare through the constructor and sets held attributes after
    rebuilt = type(image_processor).from_dict(image_processor.to_dict(), **settings)
    made.image_processor = rebuilt  # type: ignore[attr-defined]
    return made


def grid_side(image_processor: object) -> int:
    """The side of one AnyRes tile, in pixels: the crop (LLaVA-NeXT) or the size (LLaVA-OneVision) each tile is."""
    for name in ("crop_size", "size"):
        size = getattr(image_processor, name, None)
        side = size.get("height") or size.get("shortest_edge") if isinstance(size, Mapping) else None
        if side is None and size is not None:
            side = getattr(size, "height", None) or getattr(size, "shortest_edge", None)
        if isinstance(side, int) and side > 0:
            return side
    raise ValueError(f"max_grid_tiles: {type(image_processor).__name__} has no tile size")


def grid_within(processor: object, max_tiles: int) -> object:
    """`processor` with its AnyRes grid pinpoints kept to those of at most `max_tiles` tiles, as MMLongBench's
    LLaVA-OneVision wrapper keeps them (`vlm_model/llava_onevision.py:44-49`: `(w // 384) * (h // 384) <= 4`)."""
    image_processor = getattr(processor, "image_processor", None)
    pinpoints = getattr(image_processor, "image_grid_pinpoints", None)
    if not pinpoints:
        raise ValueError(f"max_grid_tiles: {type(image_processor).__name__} has no AnyRes grid pinpoints")
    side = grid_side(image_processor)
    kept = [[h, w] for h, w in pinpoints if (h // side) * (w // side) <= max_tiles]
    if not kept:
        raise ValueError(f"max_grid_tiles={max_tiles}: none of the processor's grid pinpoints is that small")
    return with_image_settings(processor, {"image_grid_pinpoints": kept})
