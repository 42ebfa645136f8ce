"""The families the forward-pass check covers (`tests.support.forward_pass`), one table that the tests and
docs/backends.md share (`tests/harness/models/test_forward_pass.py` keeps the two in step): for each, its tiny
processor and config makers where transformers 5.20.2 runs it on this machine's CPU, or the exact reason it cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.models.aliases import ALIASES
from tests.support import family_processors as published
from tests.support import family_templates as templates
from tests.support import tiny_vlm_configs as configs
from tests.support import tiny_vlm_processors as processors

TORCHVISION = "needs torchvision, which this machine's CPU torch cannot have (docs/backends.md, `processor=image_only`)"


@dataclass(frozen=True)
class ForwardFamily:
    name: str
    classes: str  # the transformers classes it is checked with (or would be)
    aliases: tuple[str, ...]  # the aliases whose checkpoints are of this family (or, without one, the model's name)
    make_processor: Callable[[], Any] | None = None
    make_config: Callable[[Any], Any] | None = None
    # `--model_args` the hf backend needs for it here: the processor without its video part (no torchvision)
    model_args: dict[str, str] = field(default_factory=dict)
    # Settings of the checkpoint's own image processor (its preprocessor_config.json), over the family's
    checkpoint_settings: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # why it cannot run here; "" where it runs

    @property
    def runs(self) -> bool:
        return not self.reason


IMAGE_ONLY = {"processor": "image_only"}

FAMILIES: tuple[ForwardFamily, ...] = (
    ForwardFamily(
        "llava-1.5",
        "LlavaForConditionalGeneration, LlavaProcessor, CLIPImageProcessorPil",
        ("llava-1.5-7b", "llava-1.5-13b"),
        published.llava_1_5,
        configs.llava,
    ),
    ForwardFamily(
        "llava-next",
        "LlavaNextForConditionalGeneration, LlavaNextProcessor, LlavaNextImageProcessorPil",
        ("llava-1.6-7b", "llava-1.6-13b", "llava-1.6-mistral-7b", "llava-next-llama3"),
        processors.llava_next,
        lambda tokenizer: configs.llava_next(tokenizer, processors.LLAVA_NEXT_PINPOINTS),
    ),
    ForwardFamily(
        "llava-onevision",
        "LlavaOnevisionForConditionalGeneration, LlavaOnevisionProcessor (image only), LlavaOnevisionImageProcessorPil",
        ("llava-onevision",),
        processors.llava_onevision,
        lambda tokenizer: configs.llava_onevision(tokenizer, processors.ONEVISION_PINPOINTS),
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "idefics2",
        "Idefics2ForConditionalGeneration, Idefics2Processor, Idefics2ImageProcessorPil",
        ("idefics2", "idefics2-chatty"),
        published.idefics2,
        configs.idefics2,
    ),
    ForwardFamily(
        "mantis-idefics2",
        "Idefics2ForConditionalGeneration, Idefics2Processor (its checkpoint: do_image_splitting false)",
        ("mantis-idefics2",),
        published.idefics2,
        configs.idefics2,
        checkpoint_settings={"do_image_splitting": False},
    ),
    ForwardFamily(
        "idefics3",
        "Idefics3ForConditionalGeneration, Idefics3Processor, Idefics3ImageProcessorPil",
        ("idefics3",),
        published.idefics3,
        configs.idefics3,
    ),
    ForwardFamily(
        "gemma3",
        "Gemma3ForConditionalGeneration, Gemma3Processor, Gemma3ImageProcessorPil",
        ("gemma3-4b", "gemma3", "gemma3-27b"),
        published.gemma3,
        configs.gemma3,
    ),
    ForwardFamily(
        "paligemma",
        "PaliGemmaForConditionalGeneration, PaliGemmaProcessor, SiglipImageProcessorPil",
        ("paligemma (LoCoVQA)",),
        processors.paligemma,
        configs.paligemma,
    ),
    ForwardFamily(
        "qwen2-vl",
        "Qwen2VLForConditionalGeneration, Qwen2VLProcessor (image only), Qwen2VLImageProcessorPil",
        ("qwen2-vl-2b", "qwen2-vl", "qwen2-vl-72b-awq"),
        published.qwen2_vl,
        configs.qwen2_vl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen2.5-vl",
        "Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor (image only), Qwen2VLImageProcessorPil",
        ("qwen2.5-vl-3b", "qwen2.5-vl", "qwen2.5-vl-32b", "qwen2.5-vl-72b-awq"),
        processors.qwen2_5_vl,
        configs.qwen2_5_vl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen3-vl",
        "Qwen3VLForConditionalGeneration, Qwen3VLProcessor (image only), Qwen2VLImageProcessorPil",
        tuple(name for name in ALIASES if name.startswith("qwen3-vl")),
        processors.qwen3_vl,
        configs.qwen3_vl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "internvl3",
        "InternVLForConditionalGeneration (Qwen2 LM), InternVLProcessor (image only), GotOcr2ImageProcessorPil",
        ("internvl3-1b", "internvl3-2b", "internvl", "internvl3-14b", "internvl3-38b"),
        published.internvl3,
        configs.internvl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "internvl3.5",
        "InternVLForConditionalGeneration (Qwen3 LM), InternVLProcessor (image only), GotOcr2ImageProcessorPil",
        tuple(name for name in ALIASES if name.startswith("internvl3.5")),
        published.internvl3,
        lambda tokenizer: configs.internvl(tokenizer, "qwen3"),
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "ovis2",
        "Ovis2ForConditionalGeneration, Ovis2Processor, Ovis2ImageProcessorPil",
        ("ovis2-1b", "ovis2", "ovis2-4b", "ovis2-8b", "ovis2-16b", "ovis2-34b"),
        published.ovis2,
        configs.ovis2,
    ),
    ForwardFamily(
        "glm-4.1v",
        "Glm4vForConditionalGeneration, Glm4vProcessor (image only), Glm4vImageProcessorPil",
        ("glm-4.1v-thinking",),
        processors.glm4v,
        configs.glm4v,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "glm-4.5v",
        "Glm4vMoeForConditionalGeneration, Glm4vProcessor (image only), Glm4vImageProcessorPil",
        ("glm-4.5v",),
        lambda: processors.glm4v(templates.GLM4_5V),
        configs.glm4v_moe,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "pixtral",
        "LlavaForConditionalGeneration (Pixtral vision), Mistral3ForConditionalGeneration, PixtralProcessor",
        ("pixtral",),
        reason=f"PixtralProcessor {TORCHVISION}: transformers 5.20.2 declares it `@requires(backends=('torchvision', "
        "'torch'))` and its module imports image_processing_pixtral, which imports torchvision",
    ),
    ForwardFamily(
        "llama4",
        "Llama4ForConditionalGeneration, Llama4Processor, Llama4ImageProcessor",
        ("llama4 (new)",),
        reason=f"Llama4ImageProcessor {TORCHVISION}: transformers 5.20.2 has no PIL backend for it",
    ),
    ForwardFamily(
        "gemma3n",
        "Gemma3nForConditionalGeneration, Gemma3nProcessor",
        ("gemma3n-e2b", "gemma3n-e4b"),
        reason=f"its vision tower is timm's MobileNetV5 (TimmWrapperModel), which needs timm, and timm {TORCHVISION}",
    ),
    ForwardFamily(
        "phi4-multimodal",
        "Phi4MultimodalForCausalLM, Phi4MultimodalProcessor, Phi4MultimodalImageProcessor",
        ("phi4-multimodal",),
        reason=f"Phi4MultimodalImageProcessor {TORCHVISION} (no PIL backend), and the model is not an "
        "image-text-to-text class the hf backend loads; the alias runs on vllm",
    ),
    ForwardFamily(
        "phi3.5-vision",
        "the checkpoints' own Phi3VForCausalLM and Phi3VProcessor",
        ("phi3-vision", "phi3.5-vision"),
        reason="no transformers class: the checkpoints' own remote code (modeling_phi3_v.py, processing_phi3_v.py), "
        "which no test here has offline; the aliases run on vllm, which uses that remote processor",
    ),
    ForwardFamily(
        "kimi-vl",
        "moonshotai/Kimi-VL-A3B-*'s own KimiVLForConditionalGeneration",
        ("kimi-vl-a3b", "kimi-vl-a3b-thinking", "kimi-vl-a3b-thinking-2506"),
        reason="no transformers class in 5.20.2 (transformers' kimi_k25 is Kimi K2.5, another model); the aliases "
        "run on vllm, whose KimiVLForConditionalGeneration expands images with the checkpoint's own processor (remote "
        "code, KimiVLProcessor), which no test here has offline: neither pass is checked here",
    ),
    ForwardFamily(
        "minicpm-v-4.5",
        "openbmb/MiniCPM-V-4_5's own MiniCPMV",
        ("minicpm-v-4.5", "minicpm-v-4.5-thinking"),
        reason="no transformers class for MiniCPM-V 4.5 in 5.20.2 (it has MiniCPM-V 4.6 and 4.7, other checkpoints); "
        "the aliases run on vllm, whose MiniCPMV4_5 slices images with the checkpoint's own processor (remote code, "
        "transformers_utils/processors/minicpmv.py calls it), which no test here has offline: neither pass is checked "
        "here",
    ),
)
BY_NAME = {family.name: family for family in FAMILIES}
RUNNING = tuple(family for family in FAMILIES if family.runs)
