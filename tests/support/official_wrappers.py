"""The official wrappers' own message construction, reimplemented from their code for the rendering tests: how
MMLongBench's `vlm_model/*.py` (26197d2) turn a sample's text (`<image>` where each image goes) and its answer prefix
into the chat and the processor's input, how InternVL's `model.chat` and Ovis2's conversation formatter build their
prompt strings, and how MileBench's LLaVA worker does with LLaVA's `llava_llama_2` conversation. Where a paper ran
no code of its own for a family on a benchmark (MileBench and MMNeedle for the MMLongBench families), the family's
MMLongBench wrapper builds the chat, without an assistant turn where the task has no prefix.

Each returns (the prompt text the processor or tokenizer is given, the input ids it makes).
"""

from __future__ import annotations

import re
from typing import Any

from harness.models.families.internvl import INTERNVL2_5_SYSTEM
from harness.models.families.llava import LLAVA_LLAMA_2_SYSTEM


def _pieces(text: str) -> list[str]:
    return re.split(r"(<image>)", text)  # the wrappers' own split: images and the text around them, empty text kept


def _parts(text: str, images: list[Any], text_key: str = "text", with_pixels: bool = False) -> list[dict[str, Any]]:
    out, seen = [], 0
    for piece in _pieces(text):
        if piece == "<image>":
            out.append({"type": "image", "image": images[seen]} if with_pixels else {"type": "image"})
            seen += 1
        else:
            out.append({"type": "text", text_key: piece})
    assert seen == len(images)
    return out


def _render(processor: Any, messages: list[dict[str, Any]], prefixed: bool, **kwargs: Any) -> Any:
    return processor.apply_chat_template(
        messages, add_generation_prompt=not prefixed, continue_final_message=prefixed, **kwargs
    )


def _ids(processor: Any, text: str, images: list[Any], **kwargs: Any) -> list[int]:
    return list(processor(text=[text], images=images, return_tensors="pt", **kwargs)["input_ids"][0].tolist())


def qwen2_vl(processor: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """qwen2_vl.py: typed parts, the prefix the assistant's content string, rendered, then the processor."""
    messages = [{"role": "user", "content": _parts(text, images)}]
    if prefix:
        messages.append({"role": "assistant", "content": prefix})
    prompt = _render(processor, messages, bool(prefix), tokenize=False)
    return prompt, _ids(processor, prompt, images)


def gemma3(processor: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """gemma3.py: typed parts (images with their pixels), tokenized inside apply_chat_template."""
    messages = [{"role": "user", "content": _parts(text, images, with_pixels=True)}]
    if prefix:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": prefix}]})
    prompt = _render(processor, messages, bool(prefix), tokenize=False)
    inputs = _render(processor, messages, bool(prefix), tokenize=True, return_dict=True)
    return prompt, list(inputs["input_ids"][0])


def idefics(processor: Any, text: str, images: list[Any], prefix: str, **image_kwargs: Any) -> tuple[str, list[int]]:
    """idefics.py: typed parts, the prefix a text part, rendered, then the processor (its own special tokens on)."""
    messages = [{"role": "user", "content": _parts(text, images)}]
    if prefix:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": prefix}]})
    prompt = _render(processor, messages, bool(prefix), tokenize=False)
    return prompt, _ids(processor, prompt, images, **image_kwargs)


def phi3_vision(tokenizer: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """phi3.py / phi4.py: one string, `<|image_N|>` in place of each image; trailing `<|endoftext|>` stripped."""
    numbered, seen = [], 0
    for piece in _pieces(text):
        if piece == "<image>":
            seen += 1
            numbered.append(f"<|image_{seen}|>")
        else:
            numbered.append(piece)
    messages = [{"role": "user", "content": "".join(numbered)}]
    if prefix:
        messages.append({"role": "assistant", "content": prefix})
    prompt = _render(tokenizer, messages, bool(prefix), tokenize=False)
    if prompt.endswith("<|endoftext|>"):
        prompt = prompt.rstrip("<|endoftext|>")  # noqa: B005 - the wrapper's own rstrip, a set of characters
    return prompt, tokenizer(prompt).input_ids


def pixtral(tokenizer: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """pixtral.py: typed parts with the text under "content", the prefix a string."""
    messages = [{"role": "user", "content": _parts(text, images, text_key="content")}]
    if prefix:
        messages.append({"role": "assistant", "content": prefix})
    prompt = _render(tokenizer, messages, bool(prefix), tokenize=False)
    return prompt, tokenizer(prompt).input_ids


def internvl_tiles(width: int, height: int, max_num: int = 4, size: int = 448) -> int:
    """InternVL's `dynamic_preprocess` tile count (with the thumbnail it adds to more than one tile)."""
    ratios = sorted(
        {(i, j) for n in range(1, max_num + 1) for i in range(1, n + 1) for j in range(1, n + 1) if i * j <= max_num},
        key=lambda r: r[0] * r[1],
    )
    aspect, best, best_diff = width / height, (1, 1), float("inf")
    for ratio in ratios:
        diff = abs(aspect - ratio[0] / ratio[1])
        if diff < best_diff:
            best, best_diff = ratio, diff
        elif diff == best_diff and width * height > 0.5 * size * size * ratio[0] * ratio[1]:
            best = ratio
    blocks = best[0] * best[1]
    return blocks + (blocks > 1)


def internvl3(processor: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """internvl.py's model.chat: the internvl2_5 conversation (its system message, "<|im_end|>\\n" separators), the
    question as is, the assistant's role to generate (the prefix is not sent), each `<image>` replaced in place by
    `<img>` + 256 `<IMG_CONTEXT>` per tile + `</img>`, tokenized with the tokenizer's defaults."""
    question = text if "<image>" in text or not images else "<image>\n" + text
    query = (
        f"<|im_start|>system\n{INTERNVL2_5_SYSTEM}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    prompt = query.replace("<image>", "<IMG_CONTEXT>")  # the text before expansion, as the -hf processor reads it
    for image in images:
        query = query.replace("<image>", "<img>" + "<IMG_CONTEXT>" * 256 * internvl_tiles(*image.size) + "</img>", 1)
    return prompt, processor.tokenizer(query).input_ids


def ovis2(processor: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """ovis2.py's preprocess_inputs: Ovis2's Qwen conversation formatter, its default system prompt, the query with
    `<image>` in place, generation_preface '' (no prefill). The visual tokens its remote code expands are the
    transformers processor's here (`max_partition` 4)."""
    prompt = (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        f"{text}<|im_end|>\n<|im_start|>assistant\n"
    )
    return prompt, _ids(processor, prompt, images, crop_to_patches=True, max_patches=4)


def llava_llama_2(processor: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """MileBench's LLaVA worker: `conv_templates["llava_llama_2"]` with the question and an empty assistant turn
    (`get_prompt`, its leading "<s>" stripped), `<image>` in place; `tokenizer_image_token` puts one BOS first."""
    prompt = f"[INST] <<SYS>>\n{LLAVA_LLAMA_2_SYSTEM}\n<</SYS>>\n\n{text} [/INST]"
    return prompt, _ids(processor, prompt, images)


def chat_template(processor: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """A family with no official wrapper on a benchmark: MMLongBench's generic `format_chat` (typed parts, the prefix
    the assistant's text part), rendered by the checkpoint's template, then the processor."""
    return idefics(processor, text, images, prefix)


WRAPPERS = {
    "qwen2-vl": qwen2_vl,
    "gemma3": gemma3,
    "idefics2": idefics,
    "idefics3": idefics,
    "internvl3": internvl3,
    "ovis2": ovis2,
    "llava-1.5": chat_template,
    "phi3-vision": phi3_vision,
    "pixtral": pixtral,
}
