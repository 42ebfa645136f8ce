"""InternVL2, InternVL2.5 and InternVL3: dynamic 448-px tiling, 256 tokens a tile (at most `max_patches`, vLLM's
`max_dynamic_patch`) plus a thumbnail; the official wrapper's (MMLongBench's `vlm_model/internvl.py`) 4 tiles at
most; the prompt as `model.chat` builds it: the conversation template of the checkpoint's config (`internvl2_5` for
2.5 and 3, `Hermes-2` / `internlm2-chat` / `phi3-chat` for InternVL2-1B / 2B, 8B / 4B; bundled here as `.jinja`,
transcriptions of the conversation class's `get_prompt`) with its system message, each `<image>` replaced in place,
and no prefill (`model.chat` sends the user turn; the paper's eval.py adds the prefix to the answer). Generation
stops where `model.chat` stopped it: on the template's separator alone (`SEPARATORS`).

InternVL3 runs on `hf` through the transformers-native `-hf` conversions (the same weights; its processor tiles as
the original `dynamic_preprocess`, `max_patches`); InternVL2 and 2.5 have no such conversion of the checkpoints the
paper ran and run on `vllm` with their remote code, which tiles by `max_dynamic_patch`.

InternVL3.5, which the papers never ran, runs on `hf` through OpenGVLab's own `-HF` conversions (`InternVL3_5-*-HF`,
model_type `internvl`, Qwen3 language models): no official wrapper set its tiles, so the checkpoint's own processor
tiles them (up to 12, with a thumbnail: a public qualification record of InternVL3_5-8B-HF under transformers 4.55
shows 9 tiles of 448 px for one image) and its own chat template is rendered (the checkpoints' processor files are in
no stored public source; the tests render the InternVL3 `-hf` conversion's template, transformers'
`convert_internvl_weights_to_hf.py`, as the stand-in that places each image as `<IMG_CONTEXT>`). Its thinking mode is
a system prompt, not a checkpoint: VLMEvalKit's `InternVL3_5-*-Thinking` runs send `R1_SYSTEM_PROMPT`
(`vlmeval/vlm/internvl/internvl_chat.py:25-38`, `cot_prompt_version="r1"`, `vlmeval/config.py`), which asks for the
thinking within `<think>` and `</think>`; the `-thinking` aliases send it, no answer prefix, and take the thinking out.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.inputs.input_policy import TaskRule
from harness.models.facts.alias import Alias, hf, thinking, vllm, wrapper
from harness.models.facts.family import ImageTokens, ModelFamily, template, tiles
from harness.models.facts.prompt_style import PromptStyle

INTERNVL2_5_SYSTEM = (
    "你是书生·万象，英文名是InternVL，是由上海人工智能实验室、清华大学及多家合作单位联合开发的多模态大语言模型。"
)
INTERNVL2_SYSTEM = (
    "你是由上海人工智能实验室联合商汤科技开发的书生多模态大模型，英文名叫InternVL, 是一个有用无害的人工智能助手。"
)
# VLMEvalKit's R1_SYSTEM_PROMPT (vlmeval/vlm/internvl/internvl_chat.py:25-38), InternVL3.5's thinking mode
R1_SYSTEM_PROMPT = (
    "You are an AI assistant that rigorously follows this response protocol:\n\n"
    "1. First, conduct a detailed analysis of the question. Consider different angles, potential solutions, and "
    "reason through the problem step-by-step. Enclose this entire thinking process within <think> and </think> tags."
    "\n\n2. After the thinking section, provide a clear, concise, and direct answer to the user's question. Separate "
    "the answer from the think section with a newline.\n\nEnsure that the thinking process is thorough but remains "
    "focused on the query. The final answer should be standalone and not reference the thinking section."
)
HF_TILES: dict[str, object] = {"crop_to_patches": True, "max_patches": 4}
VLLM_TILES: dict[str, object] = {"max_dynamic_patch": 4}
# `model.chat` replaces the `eos_token_id` the official wrapper passes it (`vlm_model/internvl.py:379-383`) with its
# conversation template's separator, stripped (OpenGVLab/InternVL `modeling_internvl_chat.py:359,381`; the separators:
# `conversation.py:359,374,388,400`): the stop of the vLLM aliases (`eos_tokens`), not the checkpoint's eos ids. The
# InternVL3 `-hf` aliases keep their generation_config's: the `hf` backend has no such setting.
SEPARATORS = {"internvl2_5": "<|im_end|>", "internvl2_chatml": "<|im_end|>", "internvl2_phi3": "<|end|>"}


def _style(name: str, system: str) -> PromptStyle:
    """`model.chat` with a conversation template: the query string, its system message, no prefill."""
    return PromptStyle(
        name,
        content="string",
        prefill=False,
        system=system,
        chat_template=name,
        template_text=template(__file__, name),
    )


def _own(processor_kwargs: Mapping[str, object]) -> tuple[TaskRule, ...]:
    return (wrapper("official InternVL wrapper: dynamic tiling with max_num = 4 tiles", processor_kwargs),)


def _internvl3(size: str) -> Alias:
    return hf(
        f"OpenGVLab/InternVL3-{size}-hf",
        f"InternVL3 {size}, the transformers-native conversion of OpenGVLab/InternVL3-{size}",
        32768,
        _own(HF_TILES),
        prompt_style="internvl2_5",
    )


def _original(version: str, size: str, window: int, style: str) -> Alias:
    return vllm(
        f"OpenGVLab/{version}-{size}",
        f"{version.replace('_', '.')} {size} through vLLM (remote code, as the official wrapper loads it)",
        window,
        _own(VLLM_TILES),
        prompt_style=style,
        eos_tokens=SEPARATORS[style],
    )


def _internvl3_5(size: str, think: bool = False) -> Alias:
    checkpoint = f"OpenGVLab/InternVL3_5-{size}-HF"
    if not think:
        return hf(checkpoint, f"InternVL3.5 {size} (OpenGVLab's transformers-native conversion)", None)
    note = f"InternVL3.5 {size} in its thinking mode (VLMEvalKit's R1 system prompt)"
    return thinking(hf(checkpoint, note, None, prompt_style="internvl3_5_thinking"))


INTERNVL3_5 = ("1B", "2B", "4B", "8B", "14B", "38B", "30B-A3B")

FAMILY = ModelFamily(
    "InternVL",
    variants=(
        ImageTokens(
            "InternVL",
            tiles(448, 256, ("max_patches", "max_dynamic_patch"), 12, 2),
            "256 tokens per 448-px tile (at most max_patches, vLLM's max_dynamic_patch, default 12) + a thumbnail "
            "tile + markers",
            model_types=("internvl", "internvl_chat"),
            architectures=("InternVLForConditionalGeneration", "InternVLChatModel"),
            fragments=("internvl",),
        ),
    ),
    styles=(
        _style("internvl2_5", INTERNVL2_5_SYSTEM),
        _style("internvl2_chatml", INTERNVL2_SYSTEM),
        _style("internvl2_phi3", INTERNVL2_SYSTEM),
        PromptStyle("internvl3_5_thinking", prefill=False, system=R1_SYSTEM_PROMPT),
    ),
    aliases={
        "internvl3-1b": _internvl3("1B"),
        "internvl3-2b": _internvl3("2B"),
        "internvl": _internvl3("8B"),
        "internvl3-14b": _internvl3("14B"),
        "internvl3-38b": _internvl3("38B"),
        "internvl2.5-1b": _original("InternVL2_5", "1B", 16384, "internvl2_5"),
        "internvl2.5-2b": _original("InternVL2_5", "2B", 16384, "internvl2_5"),
        "internvl2.5-4b": _original("InternVL2_5", "4B", 16384, "internvl2_5"),
        "internvl2.5-8b": _original("InternVL2_5", "8B", 16384, "internvl2_5"),
        "internvl2.5-26b": _original("InternVL2_5", "26B", 16384, "internvl2_5"),
        "internvl2-1b": _original("InternVL2", "1B", 8192, "internvl2_chatml"),
        "internvl2-2b": _original("InternVL2", "2B", 8192, "internvl2_chatml"),
        "internvl2-4b": _original("InternVL2", "4B", 8192, "internvl2_phi3"),
        "internvl2-8b": _original("InternVL2", "8B", 8192, "internvl2_chatml"),
        **{f"internvl3.5-{size.lower()}": _internvl3_5(size) for size in INTERNVL3_5},
        **{f"internvl3.5-{size.lower()}-thinking": _internvl3_5(size, think=True) for size in INTERNVL3_5},
    },
)
