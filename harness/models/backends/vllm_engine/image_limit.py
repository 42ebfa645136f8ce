"""What the vllm backend tells the engine of the images a run sends (`limit_mm_per_prompt`), and what the engine's
encoder then holds of one image.

vLLM 0.33 reads `limit_mm_per_prompt` per modality as a count or as `{"count": N, "width": W, "height": H}`
(`vllm/config/multimodal.py`: `MultiModalConfig.limit_per_prompt`, `ImageDummyOptions`). Memory profiling builds N
dummy images of W x H, each side at most the model's largest (`vllm/multimodal/processing/dummy_inputs.py`), in place
of N of the model's largest (16,384 tokens each for Qwen2.5-VL: vLLM #18550, #20123). By default the backend gives
the largest image count and the largest width and height among the requests it will send (the runner's screened
requests, read without decoding an image), fitted under the processor's `max_pixels`, so profiling reserves what is
sent; a dict given in `--model_args` is sent as it is.

The encoder cache then holds `max(max_num_batched_tokens, the profiled image's tokens)` of one image
(`vllm/v1/core/encoder_cache_manager.py`: `compute_mm_encoder_budget`); a model that declares its own largest image
(`get_mm_max_tokens_per_item`: Qwen2-VL and its successors) is profiled at that, whatever the limit says (vLLM
#38459). A request with an image of more tokens is refused whole ("exceeds the pre-allocated encoder cache size",
`vllm/v1/engine/input_processor.py`; vLLM #34040): the backend reads the built engine's own figure and records such
a row `over_length` instead of sending it, and `--screen_only`, which builds no engine, checks against the least the
engine will hold (`least_encoder_cache`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.api import Request
from harness.row_tokens import fit_within_pixels

# vLLM's limit for a modality its `limit_mm_per_prompt` leaves out (`MultiModalConfig.limit_per_prompt`'s doc).
VLLM_DEFAULT_COUNT = 999


@dataclass(frozen=True)
class ImageProfile:
    """The largest image count of a request, and the largest width and height of an image, among requests seen."""

    count: int = 0
    width: int = 0
    height: int = 0

    def covering(self, requests: Iterable[Request]) -> ImageProfile:
        """This profile grown to cover `requests` (an image of unknown size adds its count only)."""
        count, width, height = self.count, self.width, self.height
        for request in requests:
            count = max(count, request.num_images)
            for image in request.images:
                width, height = max(width, image.width or 0), max(height, image.height or 0)
        return ImageProfile(count, width, height)

    def __or__(self, other: ImageProfile) -> ImageProfile:
        return ImageProfile(max(self.count, other.count), max(self.width, other.width), max(self.height, other.height))


def engine_limit(
    profile: ImageProfile, cap: int | None, max_pixels: object, given: Mapping[str, object] | None
) -> dict[str, object]:
    """`limit_mm_per_prompt` for the engine: `given` (the user's, as it is), else the profile's count (at least 1, at
    most `cap`) and its width and height fitted under the processor's `max_pixels`, and no video."""
    if given is not None:
        return dict(given)
    count = max(1, profile.count)
    image: dict[str, int] = {"count": min(count, cap) if cap is not None else count}
    if profile.width and profile.height:
        pixels = max_pixels if isinstance(max_pixels, int) and not isinstance(max_pixels, bool) else None
        width, height = fit_within_pixels(profile.width, profile.height, pixels)
        image.update(width=width, height=height)
    return {"image": image, "video": 0}


def image_count(limit: Mapping[str, object], cap: int | None) -> int:
    """The images a prompt may hold under `limit` (a count, or a dict's `count`), and the model's `cap`."""
    image = limit.get("image", VLLM_DEFAULT_COUNT)
    if isinstance(image, dict):
        image = image.get("count", VLLM_DEFAULT_COUNT)
    count = image if isinstance(image, int) else VLLM_DEFAULT_COUNT
    return min(count, cap) if cap is not None else count


def encoder_refusal(image_tokens: Sequence[int], holds: int, where: str) -> str | None:
    """Why vLLM refuses a request one of whose images is more tokens than its encoder cache `holds` (`where`: what
    says so), as an `over_length` error; None where every image fits."""
    over = [(tokens, number) for number, tokens in enumerate(image_tokens, start=1) if tokens > holds]
    if not over:
        return None
    tokens, number = max(over)
    return (
        f"over_length: image {number} is {tokens:,} tokens, more than the {holds:,} of vLLM's encoder cache "
        f"({where}), which refuses the whole request (vLLM #34040); give limit_mm_per_prompt a larger width and "
        "height, or a larger max_num_batched_tokens"
    )


@dataclass(frozen=True)
class EncoderCache:
    """The least the engine's encoder cache will hold of one image, and how that was found."""

    tokens: int
    where: str


def least_encoder_cache(
    limit: Mapping[str, object] | None,
    engine: Mapping[str, object],
    gpus: int,
    size_tokens: Callable[[int, int], int],
) -> EncoderCache | None:
    """Without an engine (`--screen_only`): the least the encoder cache will hold, where the limit given profiles
    images of a width and height of its own; None where profiling uses the model's largest image or the run's (every
    image then fits). `size_tokens(width, height)`: one image's tokens as the count makes them."""
    image = limit.get("image") if limit is not None else None
    width, height = (image.get("width"), image.get("height")) if isinstance(image, dict) else (None, None)
    if not (isinstance(width, int) and isinstance(height, int)):
        return None  # no width and height of its own to profile with
    batched = engine.get("max_num_batched_tokens")
    source = "given"
    if not isinstance(batched, int):
        batched, source = _default_batched_tokens(gpus), "vLLM's default for LLM on this machine's device"
        if batched is None:
            return None  # no vLLM here to say its default
        length = engine.get("max_model_len")
        if engine.get("enable_chunked_prefill") is False and isinstance(length, int):
            batched, source = max(batched, length), "max_model_len, chunked prefill off"
    profiled = size_tokens(width, height)
    return EncoderCache(
        max(batched, profiled),
        f"max_num_batched_tokens {batched:,} ({source}) or the profiled {width}x{height} image's {profiled:,}, "
        "whichever is larger, unless the model declares a larger image of its own",
    )


def _default_batched_tokens(gpus: int) -> int | None:
    """vLLM's own default `max_num_batched_tokens` for the `LLM` class on this machine's device
    (`EngineArgs.get_batch_defaults`: where it finds no GPU, a GPU's under 70 GiB, 8,192; an H100's is 16,384)."""
    try:
        from vllm.engine.arg_utils import EngineArgs
        from vllm.usage.usage_lib import UsageContext
    except ImportError:
        return None
    return int(EngineArgs.get_batch_defaults(gpus)[0][UsageContext.LLM_CLASS])
