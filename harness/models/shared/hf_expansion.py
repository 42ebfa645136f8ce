"""What a transformers processor puts in a prompt for its images besides the tokens `_get_num_multimodal_tokens`
counts, so that the `hf` backend's count before sending (`harness.models.shared.hf_counting`) is the input ids it sends.
Each is the processor's own step, called as the processor calls it when it is given the pixels
(`ProcessorMixin.__call__`: `prepare_inputs_layout`, then each placeholder replaced by `replace_image_token`):

- `laid_out`: the prompt as the processor lays it out before it expands its images (`prepare_inputs_layout`:
  PaliGemma's puts a BOS after the last image and a newline after the text). It reads how many images there are,
  never their pixels, so stand-ins of one pixel take their place.
- `framed`: the text each placeholder becomes around its image tokens (Gemma 3's replaces `<start_of_image>` by
  `full_image_sequence`: a blank line, the image's begin marker, 256 image tokens, its end marker, a blank line; its
  `_get_num_multimodal_tokens` counts the 256; Gemma 3n's replaces its image token by the same, and has no size count:
  an image is measured, its framing taken out), with the image tokens as one, tokenized in place so that the blank
  lines merge with the text beside them as the processor's tokenizer merges them (measured alone, a blank line after
  the template's newline was a token an image over).
  Gemma 4's (and Gemma 4 Unified's) replaces each image token by `replace_image_token`: its begin marker, the soft tokens its
  `_get_num_multimodal_tokens` counts, its end marker (found on a GPU machine, where its processor runs: the count
  was 2 tokens short an image).
- `several_images`: the tokens of each image of a several-image prompt where the processor sends them otherwise than
  one image alone (LLaVA-OneVision sends each as its base features and a newline, `replace_image_token`, where
  `_get_num_multimodal_tokens` counts every image as a single one, as AnyRes tiles).
- `count_misses`: where the processor's size count misses what its call adds under a setting (Gemma 3's
  pan-and-scan crops): each image is measured instead.
- `size_count`: `_get_num_multimodal_tokens`'s count, the class defaults it writes a call's settings into restored.
- `own_size`: the settings that make the processor's count see an image at the size its pixels keep (Idefics3's
  with `do_resize` off, the official wrapper's setting, splits each image at its own size, where its
  `get_number_of_image_patches` still scales it to its longest edge first, 1,456 px: 16 tiles counted for a 112-px
  image sent as one).
- `placeholder`: the text the processor expands into an image's tokens, as its `get_text_with_replacements` finds it
  (Aya Vision's `<image>`, whose `image_token_id` is the patch token the features fill; Qianfan-OCR's `<image>`, whose
  `image_token` is that patch token): counted as its own token, or an image counts as one patch.
- `added_by_call`: what the processor's call puts in a prompt besides its images (Molmo2's puts its BOS before a
  prompt that does not start with it): counted with the prompt, and left out of a measured image (one token an image
  over, else).
- `ahead_of_text`: the image tokens a processor's call writes ahead of an unmarked prompt once, whatever its images
  (BLIP-2's queries): the prompt's images' tokens, and the one image a prompt its model takes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence

from harness.models.facts.bounded_render import BoundedRender

# A processor's call and a tokenizer's, as counting reads them: the input ids they make.
ProcessorCall = Callable[..., Mapping[str, Sequence[Sequence[int]]]]
TokenizerCall = Callable[..., Mapping[str, Sequence[int]]]


def _is(processor: object, name: str) -> bool:
    return any(kind.__name__ == name for kind in type(processor).__mro__)


def laid_out(processor: object, prompt: str, images: int) -> str:
    """`prompt` as `processor` lays it out for `images` images before it expands them (the prompt itself where the
    processor has no such step or has no images to lay out)."""
    layout = getattr(processor, "prepare_inputs_layout", None)
    if not images or not callable(layout):
        return prompt
    from PIL import Image

    stand_ins = [Image.new("RGB", (1, 1)) for _ in range(images)]
    # the images as a flat list, else as the backend gives a prompt's: one list (PaliGemma's layout of an unmarked
    # prompt takes a flat list as an image a prompt: "Received 3 images for 1 prompts")
    for given in (stand_ins, [stand_ins]):
        try:
            _, text, *_ = layout(images=given, text=[prompt])
        except Exception:  # a layout that needs its own call's merged settings (GOT-OCR2's): the count's probe then
            continue  # finds whether the prompt as it is counts as sent (`ProcessorCount._counts_as_sent`)
        return str(text[0] if isinstance(text, list | tuple) else text)
    return prompt


def framed(processor: object, text: str) -> tuple[str, int | None]:
    """`text` with each image placeholder as the processor frames its image tokens, those tokens as one, and the id
    of that one token; `(text, None)` where the processor puts an image's tokens alone in its placeholder's place."""
    sequence = getattr(processor, "full_image_sequence", None)
    tokenizer = getattr(processor, "tokenizer", None)
    image_token = getattr(tokenizer, "image_token", None)
    # Gemma 3's call expands its begin marker, Gemma 3n's its image token
    placeholder = image_token if _is(processor, "Gemma3nProcessor") else getattr(processor, "boi_token", None)
    length = getattr(processor, "image_seq_length", None)
    if not isinstance(image_token, str):
        return text, None
    to_id: Callable[[str], object] = getattr(tokenizer, "convert_tokens_to_ids")  # noqa: B009 - a tokenizer's
    token_id = to_id(image_token)
    if (_is(processor, "Gemma4Processor") or _is(processor, "Gemma4UnifiedProcessor")) and isinstance(token_id, int):
        replace: Callable[[dict[str, object], int], str] = getattr(processor, "replace_image_token")  # noqa: B009
        return text.replace(image_token, replace({"num_soft_tokens_per_image": [1]}, 0)), token_id
    if not (isinstance(sequence, str) and isinstance(placeholder, str)):
        return text, None
    if not isinstance(length, int) or image_token * length not in sequence or not isinstance(token_id, int):
        return text, None
    return text.replace(placeholder, sequence.replace(image_token * length, image_token)), token_id


def framing_tokens(processor: object, tokenizer: TokenizerCall, text: str) -> int:
    """The tokens `framed` puts around the image tokens of one placeholder, `text` (0 where it frames none)."""
    laid, token_id = framed(processor, text)
    return len(tokenizer(laid)["input_ids"]) - len(tokenizer(text)["input_ids"]) if token_id is not None else 0


def several_images(processor: object, count: int) -> list[int] | None:
    """The image tokens of each image of a `count`-image prompt, where the processor sends a several-image prompt's
    images otherwise than each alone; None where it does not (or `count` is one)."""
    if count < 2 or not _is(processor, "LlavaOnevisionProcessor"):
        return None
    token = str(getattr(processor, "image_token"))  # noqa: B009 - the class's own attribute
    replace: Callable[[dict[str, object], int], str] = getattr(processor, "replace_image_token")  # noqa: B009
    return [replace({"batch_num_images": [count]}, i).count(token) for i in range(count)]


def count_misses(processor: object, call: Mapping[str, object]) -> bool:
    """Whether the processor's size count (`_get_num_multimodal_tokens`) misses tokens its call puts in for an image
    under the call's settings `call` (else its image processor's own): Gemma 3's with `do_pan_and_scan` counts an
    image as one ("no image cropping supported yet"), where its call, and vLLM's Gemma 3, add its crops and a sentence
    around them (843 tokens for a 1000 x 700 image, 1,365 for a 1920 x 300 one, each counted 256). A measured image
    holds the framing `framed` counts with the prompt (`framing_tokens`)."""
    if not _is(processor, "Gemma3Processor"):
        return False
    held = getattr(getattr(processor, "image_processor", None), "do_pan_and_scan", None)
    return bool(call.get("do_pan_and_scan", held))


def size_count(processor: object, sizes: Sequence[tuple[int, int]], call: Mapping[str, object]) -> list[int]:
    """The image tokens the processor's `_get_num_multimodal_tokens` counts for images of these (width, height) sizes
    under the call's settings, its class's default settings as they were before: transformers' (5.19, 5.20) writes a
    call's settings into its kwargs class's `_defaults` (`images_kwargs.update(kwargs)`: Idefics3's, InternVL's,
    LLaVA's, Qwen3-VL's, ...), so that every later count in the process, by any processor of that class, took them
    (InternVL after one request of max_patches=2: 258 tokens for a 1000 x 700 image of a request without it, 1,794)."""
    defaults = getattr(getattr(type(processor), "valid_processor_kwargs", None), "_defaults", None)
    kept = copy.deepcopy(defaults) if isinstance(defaults, dict) else None
    counter: Callable[..., object] = getattr(processor, "_get_num_multimodal_tokens")  # noqa: B009 - a processor's
    try:
        counted = counter(image_sizes=[(h, w) for w, h in sizes], **call)
    finally:
        if isinstance(defaults, dict) and kept is not None:
            defaults.clear()
            defaults.update(kept)
    return [int(n) for n in getattr(counted, "num_image_tokens")]  # noqa: B009 - MultiModalData's


def own_size(processor: object, held: Mapping[str, object], width: int, height: int) -> dict[str, object]:
    """The count's settings for an image of `width` x `height` where the processor's count would scale it otherwise
    than its pixels are scaled (`held`: the settings its image processor holds); none elsewhere."""
    if _is(processor, "Idefics3Processor") and held.get("do_resize") is False:
        return {"size": {"longest_edge": max(width, height)}}
    return {}


def measured(
    processor: ProcessorCall,
    tokenizer: TokenizerCall,
    token_id: int,
    text: str,
    size: tuple[int, int],
    call: Mapping[str, object],
) -> int:
    """The tokens one image placeholder (`token_id`, in `text`: what the chat template writes for an image,
    `image_text`) becomes when the processor is given a blank image of `size` with the settings `call`: what a
    processor without a size counter (SmolVLM's, LFM2-VL's, Llama 4's) makes of an image of that size, read off its
    own output rather than restated. BOS and other specials cancel out."""
    from PIL import Image

    to_token: Callable[[int], str] = getattr(tokenizer, "convert_ids_to_tokens")  # noqa: B009 - a tokenizer's
    alone = list(tokenizer(text)["input_ids"])
    ids = processor(text=[text], images=[[Image.new("RGB", size)]], **call)["input_ids"][0]
    return (
        len(ids)
        - len(alone)
        - added_by_call(processor, tokenizer, text, str(to_token(token_id)))
        + alone.count(token_id)
    )


def ahead_of_text(processor: ProcessorCall, tokenizer: TokenizerCall) -> int | None:
    """The image tokens a processor's call writes ahead of a prompt's text whatever its images, where the prompt holds
    no mark for them (BLIP-2's: its Q-Former's `num_query_tokens` queries, before the BOS, one image's whether it is
    given one image or several, so that the model takes one a prompt, as vLLM's BLIP-2 says: "At most 1 image(s)"):
    what its call adds to a text with one blank image, where it adds the same with two; None elsewhere (a processor
    that expands a mark, or lays out one an image: PaliGemma's)."""
    from PIL import Image

    text = "Look: what?"
    try:
        alone = list(tokenizer(text)["input_ids"])
        one, two = (list(processor(text=[text], images=[[Image.new("RGB", PROBE_SIZE)] * n])["input_ids"][0])
                    for n in (1, 2))  # fmt: skip
    except Exception:  # a processor that wants a mark for each image
        return None
    added = len(one) - len(alone)
    return added if added > 0 and one == two and one[added:] == alone else None


def image_text(probe: str, tokenizer: object, token_id: int | None) -> str:
    """What the chat template writes for an image in `probe` (its prompt of "Look:", an image, "What?"): the
    placeholder (`token_id`'s) with the tokens the template puts around it (HunYuan-VL's `<|image_start|>` and
    `<|image_end|>`, without which its processor refuses the placeholder); the placeholder alone where the probe does
    not show it; "" without a placeholder."""
    if token_id is None:
        return ""
    marker = str(getattr(tokenizer, "convert_ids_to_tokens")(token_id))  # noqa: B009 - a tokenizer's
    written = probe.partition("Look:")[2].partition("What?")[0].strip()
    return written if marker in written else marker


def probe_prompt(processor: object, chat_template: str, name: str, bounded: BoundedRender) -> str:
    """A prompt of "Look:", an image, "What?" as the chat template renders it, which a count is probed with when a
    processor is loaded (`sent_as_counted`, `placeholder`, `image_text`); "" where the template cannot render it,
    within `bounded`'s bounds (a checkpoint's template is untrusted): past them, a request's render says which,
    naming its task and document."""
    parts = [{"type": "text", "text": "Look:"}, {"type": "image"}, {"type": "text", "text": "What?"}]
    chat = [{"role": "user", "content": parts}]
    apply: Callable[..., object] = getattr(processor, "apply_chat_template")  # noqa: B009 - a processor's

    def render() -> object:
        return apply(chat, chat_template=chat_template, add_generation_prompt=True, tokenize=False)

    try:
        return bounded(render, chat, f"{name}: the chat template's probe prompt")
    except Exception:
        return ""


# The size of the image a count is probed with when a processor is loaded (`sent_as_counted`).
PROBE_SIZE = (300, 200)


def sent_as_counted(
    processor: ProcessorCall,
    tokenizer: TokenizerCall,
    text: str,
    image_token_id: int | None,
    tokens: int,
    call: Mapping[str, object],
) -> bool:
    """Whether `text` holding one image placeholder, counted as `ProcessorCount.prompt_tokens` counts it (laid out,
    framed, the placeholder as `tokens`), is the input ids the processor builds with a blank `PROBE_SIZE` image:
    MiniMax-M3-VL's and Molmo2's size counts miss tokens they put around an image, and Idefics2's image merges with
    the text beside it."""
    from PIL import Image

    laid, token_id = framed(processor, laid_out(processor, text, 1))
    ids = list(tokenizer(laid)["input_ids"])
    sent = processor(text=[text], images=[[Image.new("RGB", PROBE_SIZE)]], **call)
    counted = image_token_id if token_id is None else token_id
    placeholders = ids.count(counted) if counted is not None else 0
    to_token: Callable[[object], object] = getattr(tokenizer, "convert_ids_to_tokens")  # noqa: B009 - a tokenizer's
    added = (
        added_by_call(processor, tokenizer, text, str(to_token(image_token_id))) if image_token_id is not None else 0
    )
    return bool(len(ids) - placeholders + tokens + added == len(sent["input_ids"][0]))


def placeholder(processor: object, rendered: str) -> str | None:
    """The text of `rendered` (a prompt of one image, as the chat template renders it) that the processor replaces by
    the image's tokens: what its `get_text_with_replacements` (transformers' step before tokenizing) matches; None
    where it has no such step or matches no single placeholder."""
    replace = getattr(processor, "get_text_with_replacements", None)
    if not callable(replace):
        return None
    try:
        _, offsets = replace([rendered], ["\0"])
    except Exception:  # a processor whose step needs more than a prompt
        return None
    found = offsets[0] if offsets and isinstance(offsets[0], list) else []
    return str(found[0]["text"]) if len(found) == 1 and isinstance(found[0], dict) else None


def image_counting(processor: object, tokenizer: object, marker: str | None) -> tuple[int | None, bool]:
    """(the id of the placeholder an image is expanded from: `marker` where it is one token, else the processor's
    image token; whether the processor tells an image's tokens from its size without its pixels: transformers'
    `_get_num_multimodal_tokens`, as vLLM uses it)."""
    token = getattr(processor, "image_token", None)
    token_id = getattr(processor, "image_token_id", None)
    encode: TokenizerCall = tokenizer  # type: ignore[assignment]
    own = list(encode(marker, add_special_tokens=False)["input_ids"]) if marker else []
    if len(own) == 1:
        token_id = own[0]
    elif token_id is None and isinstance(token, str):
        token_id = getattr(tokenizer, "convert_tokens_to_ids")(token)  # noqa: B009 - a tokenizer's
    counter = getattr(processor, "_get_num_multimodal_tokens", None)
    if token_id is None or not callable(counter):
        return token_id, False
    try:
        counts = counter(image_sizes=[(56, 56)]).num_image_tokens
    except Exception:  # a processor that needs more than sizes: its family's estimate instead
        return token_id, False
    return token_id, isinstance(counts, list) and len(counts) == 1 and isinstance(counts[0], int)


# A prompt's start, as far as `added_by_call` gives it to the processor: what a call puts before a prompt is decided
# by how it starts.
_START = 256


def added_by_call(processor: object, tokenizer: object, text: str, marker: str) -> int:
    """The tokens the processor's call adds to `text` beyond those its tokenizer makes of it, its images aside: its
    call on the text's start before its first image (`marker`), where there is no image to expand; 0 where the
    processor cannot be called on text alone (PaliGemma's, GOT-OCR2's)."""
    start = (text.split(marker, 1)[0] if marker else text)[:_START].strip()  # IDEFICS' call strips its text
    call: ProcessorCall = processor  # type: ignore[assignment]
    encode: TokenizerCall = tokenizer  # type: ignore[assignment]
    try:
        return len(call(text=[start])["input_ids"][0]) - len(encode(start)["input_ids"])
    except Exception:  # a processor that takes no prompt without its images
        return 0
