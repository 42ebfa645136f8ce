"""The families the papers never ran (issue 51, item 6), for the offline rendering test: each one's processor as its
checkpoints publish it around a tiny tokenizer (`family_processors`' way), its published template
(`family_templates`), and, there being no official wrapper, the construction its model card or `model.chat` makes of
the same row, which the harness's render must equal (text, input ids, BOS, image tokens).

- An Instruct model: MMLongBench's generic `format_chat` (`official_wrappers.chat_template`: typed parts, the answer
  prefix continued), what a paper's harness does for a model it has no wrapper of.
- A thinking model: the model card's call, typed parts and the generation prompt, no answer prefix (`card`).
- MiniCPM-V 4.5: `model.chat`'s one string, each image `(<image>./</image>)`, the pieces joined by newlines (`minicpm`).
- Kimi-VL and MiniCPM-V load in vLLM alone: their tokenizer alone is built (the text, markers and BOS are compared).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from tests.support import family_templates as templates
from tests.support import official_wrappers
from tests.support import tiny_vlm_processors as processors
from tests.support.family_processors import Family, internvl3, tokenizer


def _with_template(make: Any, template: str) -> Any:
    def made() -> Any:
        processor = make()
        processor.chat_template = template
        return processor

    return made


def gemma3n() -> Any:
    """Gemma 3n as transformers' conversion script writes it: SigLIP at 768 x 768, 256 soft tokens an image, a BOS
    the tokenizer adds (`convert_gemma3n_weights.py`)."""
    from transformers import Gemma3nAudioFeatureExtractor, Gemma3nProcessor, SiglipImageProcessorPil

    marks = {
        "image_token": "<image_soft_token>",
        "boi_token": "<start_of_image>",
        "eoi_token": "<end_of_image>",
        "audio_token": "<audio_soft_token>",
        "boa_token": "<start_of_audio>",
        "eoa_token": "<end_of_audio>",
    }
    text = tokenizer(("<start_of_turn>", "<end_of_turn>"), bos="<bos>", adds_bos=True, **marks)
    images = SiglipImageProcessorPil(size={"height": 768, "width": 768}, image_mean=(0.5,) * 3, image_std=(0.5,) * 3)
    return Gemma3nProcessor(Gemma3nAudioFeatureExtractor(), images, text, chat_template=templates.GEMMA3N)


def kimi_vl() -> Any:
    specials = ("<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>")
    media = ("<|media_start|>", "<|media_content|>", "<|media_pad|>", "<|media_end|>")
    made = tokenizer((*specials, *media), bos=None)
    made.chat_template = templates.KIMI_VL
    return made


def minicpm_v() -> Any:
    made = tokenizer(("<|im_start|>", "<|im_end|>", "<image>", "</image>", "<slice>", "</slice>"), bos=None)
    made.chat_template = templates.minicpm_v_4_5()
    return made


def _messages(text: str, images: list[Any], prefix: str, system: str | None) -> list[dict[str, Any]]:
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages.append({"role": "user", "content": official_wrappers._parts(text, images)})
    if prefix:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": prefix}]})
    return messages


def card(processor: Any, text: str, images: list[Any], prefix: str, system: str | None = None) -> tuple[str, list[int]]:
    """A thinking model as its model card calls it: typed parts, the generation prompt, no answer prefix."""
    prompt = processor.apply_chat_template(
        _messages(text, images, "", system), add_generation_prompt=True, tokenize=False
    )
    if hasattr(processor, "image_processor"):
        return prompt, official_wrappers._ids(processor, prompt, images)
    return prompt, processor(prompt).input_ids


def text_chat(tokenizer: Any, text: str, images: list[Any], prefix: str) -> tuple[str, list[int]]:
    """MMLongBench's generic `format_chat` for a model whose tokenizer alone is at hand (vLLM's processor expands)."""
    messages = _messages(text, images, prefix, None)
    prompt = official_wrappers._render(tokenizer, messages, bool(prefix), tokenize=False)
    return prompt, tokenizer(prompt).input_ids


def minicpm(tokenizer: Any, text: str, images: list[Any], prefix: str, thinking: bool = False) -> tuple[str, list[int]]:
    """MiniCPM-V's `model.chat`: each image `(<image>./</image>)`, the pieces joined by newlines, one user string; the
    answer prefix continued as the assistant's string (none for the thinking mode, given `enable_thinking`)."""
    pieces = [p for p in official_wrappers._pieces(text) if p]
    user = "\n".join("(<image>./</image>)" if p == "<image>" else p for p in pieces)
    messages = [{"role": "user", "content": user}]
    prefixed = bool(prefix) and not thinking
    if prefixed:
        messages.append({"role": "assistant", "content": prefix})
    kwargs = {"enable_thinking": True} if thinking else {}
    prompt = official_wrappers._render(tokenizer, messages, prefixed, tokenize=False, **kwargs)
    return prompt, tokenizer(prompt).input_ids


# VLMEvalKit's R1_SYSTEM_PROMPT, as `vlmeval/vlm/internvl/internvl_chat.py:25-38` writes it: InternVL3.5's thinking.
R1_SYSTEM_PROMPT = """
You are an AI assistant that rigorously follows this response protocol:

1. First, conduct a detailed analysis of the question. Consider different \
angles, potential solutions, and reason through the problem step-by-step. \
Enclose this entire thinking process within <think> and </think> tags.

2. After the thinking section, provide a clear, concise, and direct answer to \
the user's question. Separate the answer from the think section with a newline.

Ensure that the thinking process is thorough but remains focused on the \
query. The final answer should be standalone and not reference the thinking \
section.
""".strip()


def _internvl3_5() -> Any:
    return internvl3()  # the InternVL3 -hf conversion's template stands in (`family_templates.INTERNVL_HF`)


FAMILIES = (
    Family("qwen3-vl", "qwen3-vl", processors.qwen3_vl, "<|image_pad|>", reference=official_wrappers.chat_template),
    Family(
        "qwen3-vl-thinking",
        "qwen3-vl-thinking",
        partial(processors.qwen3_vl, templates.QWEN3_VL_THINKING),
        "<|image_pad|>",
        reference=card,
    ),
    Family("internvl3.5", "internvl3.5-8b", _internvl3_5, "<IMG_CONTEXT>", reference=official_wrappers.chat_template),
    Family(
        "internvl3.5-thinking",
        "internvl3.5-8b-thinking",
        _internvl3_5,
        "<IMG_CONTEXT>",
        reference=partial(card, system=R1_SYSTEM_PROMPT),
    ),
    Family("gemma3n", "gemma3n-e4b", gemma3n, "<image_soft_token>", reference=official_wrappers.gemma3),
    Family("glm-4.1v-thinking", "glm-4.1v-thinking", processors.glm4v, "<|begin_of_image|>", reference=card),
    Family(
        "glm-4.5v",
        "glm-4.5v",
        _with_template(processors.glm4v, templates.GLM4_5V),
        "<|begin_of_image|>",
        reference=card,
    ),
    Family("kimi-vl", "kimi-vl-a3b", kimi_vl, "<|media_pad|>", expands_images=False, reference=text_chat),
    Family("kimi-vl-thinking", "kimi-vl-a3b-thinking", kimi_vl, "<|media_pad|>", expands_images=False, reference=card),
    Family("minicpm-v-4.5", "minicpm-v-4.5", minicpm_v, "(<image>./</image>)", expands_images=False, reference=minicpm),
    Family(
        "minicpm-v-4.5-thinking",
        "minicpm-v-4.5-thinking",
        minicpm_v,
        "(<image>./</image>)",
        expands_images=False,
        reference=partial(minicpm, thinking=True),
    ),
)
