"""An image scaled, before the processor, to the size the processor's image processor would scale it to first.

The `hf` backend decodes a batch's images on threads (`HFModel._batch_images`); scaling them there too, with PIL's own
resize (which releases the GIL), spares the processor its per-image round trips through numpy at the full size
(~0.9 ms of ~2.5 ms per 512 x 512 image for a CLIP processor), and the processor, given an image already at its
size, leaves it as it is. Only where that changes nothing the model is given: for each input size (and request's
processor arguments), the processor's whole output for one image given as it is and scaled first is compared once,
tensor by tensor; where the two differ, images are never scaled first again (the rule is not this processor's).

The rule is the one transformers' PIL image processors follow (`size` as `shortest_edge`, or `height` and
`width`; `resample`); a processor with another `size` (Qwen2-VL's pixel bounds, LLaVA-NeXT's tiles), a torchvision
image processor, or none at all is given its images untouched, at no cost.
"""

from __future__ import annotations

import threading
from typing import Any

from PIL import Image

_OTHER_SIZE_FIELDS = ("longest_edge", "max_height", "max_width", "min_pixels", "max_pixels")


def _size_field(size: object, name: str) -> Any:
    return size.get(name) if isinstance(size, dict) else getattr(size, name, None)


def scale_rule(image_processor: object) -> tuple[int | None, tuple[int, int] | None, int] | None:
    """(shortest edge, (height, width), resample) of an image processor that scales each image that way first;
    None for one that does not (or not in a way this module knows)."""
    if image_processor is None or not getattr(image_processor, "do_resize", False):
        return None
    if "Pil" not in type(image_processor).__name__:  # transformers' PIL backend: its resize is PIL's
        return None
    size, resample = getattr(image_processor, "size", None), getattr(image_processor, "resample", None)
    if size is None or not isinstance(resample, int) or any(_size_field(size, f) for f in _OTHER_SIZE_FIELDS):
        return None
    shortest, height, width = (_size_field(size, f) for f in ("shortest_edge", "height", "width"))
    if isinstance(shortest, int) and shortest > 0 and height is None and width is None:
        return shortest, None, int(resample)
    if shortest is None and isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0:
        return None, (height, width), int(resample)
    return None


def target_size(rule: tuple[int | None, tuple[int, int] | None, int], width: int, height: int) -> tuple[int, int]:
    """(width, height) an image of `width` x `height` is scaled to by `rule` (transformers'
    `get_resize_output_image_size` without `default_to_square`, for a shortest edge)."""
    shortest, fixed, _ = rule
    if fixed is not None:
        return fixed[1], fixed[0]
    assert shortest is not None
    short, long = (width, height) if width <= height else (height, width)
    new_long = int(shortest * long / short)
    return (shortest, new_long) if width <= height else (new_long, shortest)


class ProcessorScale:
    """Scales images as `processor`'s image processor first would, where that is proven not to change its output.

    Called from several threads at once (the batch's image threads); a proof runs the processor under a lock, while
    the batch's own processor call waits for the threads."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        token = getattr(processor, "image_token", None)
        self.rule = scale_rule(getattr(processor, "image_processor", None)) if isinstance(token, str) else None
        self._token = token
        self._proven: dict[tuple[Any, ...], bool] = {}
        self._lock = threading.Lock()
        self.proofs = 0  # processor comparisons run (each input size and processor arguments once)

    def __call__(self, image: Image.Image, processor_kwargs: tuple[tuple[str, object], ...] = ()) -> Image.Image:
        rule = self.rule
        if rule is None or image.mode != "RGB":
            return image
        size = target_size(rule, image.width, image.height)
        if size == image.size or size[0] > image.width or size[1] > image.height:
            return image  # only ever scaled down: an upscale is left to the processor
        key = (image.size, processor_kwargs)
        proven = self._proven.get(key)
        if proven is None:
            with self._lock:
                proven = self._proven.get(key)
                if proven is None:
                    proven = self._proven[key] = self._same_output(image, size, rule[2], dict(processor_kwargs))
                    if not proven:
                        self.rule = None  # not this processor's rule: stop scaling (and proving) for good
        return image.resize(size, Image.Resampling(rule[2])) if proven else image

    def _same_output(self, image: Image.Image, size: tuple[int, int], resample: int, kwargs: dict[str, Any]) -> bool:
        """Whether the processor's whole output is the same for `image` as given and scaled to `size` first."""
        import torch

        self.proofs += 1
        scaled = image.resize(size, Image.Resampling(resample))

        def output(img: Image.Image) -> Any:
            return self.processor(text=[self._token], images=[[img]], padding=True, return_tensors="pt", **kwargs)

        try:
            given, first = output(image), output(scaled)
        except Exception:  # the processor cannot take one image alone this way: leave its images to it
            return False
        if given.keys() != first.keys():
            return False
        for name in given:
            a, b = given[name], first[name]
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
                if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
                    return False
            elif type(a) is not type(b) or not isinstance(a, str | int | float | list | tuple) or a != b:
                return False  # anything else (an array, an object): not proven the same
        return True
