"""The families the forward-pass check covers (`tests.support.forward_pass`), one table that the tests and
docs/backends.md share (`tests/harness/models/test_forward_pass.py` keeps the two in step, and fails for an `hf` or
`vllm` alias no row names): for each, its tiny processor and config makers where transformers 5.20.2 runs it on this
machine's CPU, or the exact reason it cannot, with a probe that shows the reason still holds (`blocked`: true while it
does), so the row is revisited the day it stops holding. A row may have both: its makers then run where its probe
finds what it needs. A `vllm` alias is checked through vLLM 0.33.0's own processor where that runs without a GPU; none
is yet (a row says what is not checked and why). Pixtral's and Llama 4's rows are made by the generic factory
(`tests.support.checkpoint_factory`), which builds any image-text-to-text type of transformers.

Each kind of alias has its own row: its template (LLaVA-NeXT's Vicuna, Mistral and Llama 3 checkpoints, Qwen3-VL's
Instruct and Thinking), and its mixture-of-experts config where the alias is one (the `-a3b` aliases, GLM-4.5V).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.models.aliases import ALIASES
from tests.support import families_2026 as current
from tests.support import family_processors as published
from tests.support import family_templates as templates
from tests.support import tiny_vlm_configs as configs
from tests.support import tiny_vlm_processors as processors

# A row whose reason is a check not yet written rather than what this machine lacks: it has no probe to hold.
NOT_CHECKED_YET = "not checked yet:"


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
    backend: str = "hf"  # the backend its aliases run on, whose processor the check goes through
    # True while the reason holds (a `vllm` row's: the module that cannot be imported, the class nobody ships)
    blocked: Callable[[], bool] | None = None

    @property
    def runs(self) -> bool:
        """Runs on this machine; a row with makers whose reason is a module this machine cannot import runs where it
        can."""
        return not self.reason or (self.make_processor is not None and self.blocked is not None and not self.blocked())


IMAGE_ONLY = {"processor": "image_only"}


def _fails_on(module: str, *missing: str) -> Callable[[], bool]:
    """True while importing `module` fails for want of one of `missing`."""

    def blocked() -> bool:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            return err.name in missing
        return False

    return blocked


def _remote_processor(architecture: str, module: str, model_type: str, also_missing: str = "") -> Callable[[], bool]:
    """True while vLLM maps `architecture` to its `module` (whose processor is the checkpoint's own remote code,
    through AutoProcessor), transformers has no processor for `model_type`, and (`also_missing`) that module cannot
    be found here."""

    def blocked() -> bool:
        from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
        from vllm.model_executor.models.registry import _MULTIMODAL_MODELS

        return (
            _MULTIMODAL_MODELS.get(architecture, ("",))[0] == module
            and model_type not in PROCESSOR_MAPPING_NAMES
            and (not also_missing or importlib.util.find_spec(also_missing) is None)
        )

    return blocked


def _factory(model_type: str, part: int) -> Callable[..., Any]:
    """The generic factory's processor (0) or config (1) of `model_type` (`tests.support.checkpoint_factory`): its
    tiny tokenizer is built alike each time, so a config made beside another processor names the same ids."""

    def made(*_: Any) -> Any:
        from tests.support.checkpoint_factory import parts

        return parts(model_type)[part]

    return made


def _llava_next(tokenizer: Any) -> Any:
    return configs.llava_next(tokenizer, processors.LLAVA_NEXT_PINPOINTS)


def _named(prefix: str, *, moe: bool, thinking: bool | None = None) -> tuple[str, ...]:
    """The aliases of a family (their names' `prefix`) that are its mixture of experts (`-a3b`) or not, and (where
    `thinking` is given) its thinking models or not: each kind is forward-passed with its own config and template."""
    return tuple(
        name
        for name in ALIASES
        if name.startswith(prefix)
        and ("-a3b" in name) == moe
        and (thinking is None or name.endswith("-thinking") == thinking)
    )


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
        ("llava-1.6-7b", "llava-1.6-13b"),
        processors.llava_next,
        _llava_next,
    ),
    ForwardFamily(
        "llava-next-mistral",
        "LlavaNextForConditionalGeneration, LlavaNextProcessor, LlavaNextImageProcessorPil (Mistral's template)",
        ("llava-1.6-mistral-7b",),
        processors.llava_next_mistral,
        _llava_next,
    ),
    ForwardFamily(
        "llava-next-llama3",
        "LlavaNextForConditionalGeneration, LlavaNextProcessor, LlavaNextImageProcessorPil (Llama 3's template)",
        ("llava-next-llama3",),
        processors.llava_next_llama3,
        _llava_next,
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
        _named("qwen3-vl", moe=False, thinking=False),
        processors.qwen3_vl,
        configs.qwen3_vl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen3-vl-thinking",
        "Qwen3VLForConditionalGeneration, Qwen3VLProcessor (image only), Qwen2VLImageProcessorPil (Thinking's template)",
        _named("qwen3-vl", moe=False, thinking=True),
        lambda: processors.qwen3_vl(templates.QWEN3_VL_THINKING),
        configs.qwen3_vl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen3-vl-moe",
        "Qwen3VLMoeForConditionalGeneration, Qwen3VLProcessor (image only), Qwen2VLImageProcessorPil",
        _named("qwen3-vl", moe=True, thinking=False),
        processors.qwen3_vl,
        configs.qwen3_vl_moe,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen3-vl-moe-thinking",
        "Qwen3VLMoeForConditionalGeneration, Qwen3VLProcessor (image only), Qwen2VLImageProcessorPil (Thinking's "
        "template)",
        _named("qwen3-vl", moe=True, thinking=True),
        lambda: processors.qwen3_vl(templates.QWEN3_VL_THINKING),
        configs.qwen3_vl_moe,
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
        _named("internvl3.5", moe=False),
        published.internvl3,
        lambda tokenizer: configs.internvl(tokenizer, "qwen3"),
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "internvl3.5-moe",
        "InternVLForConditionalGeneration (Qwen3-MoE LM), InternVLProcessor (image only), GotOcr2ImageProcessorPil",
        _named("internvl3.5", moe=True),
        published.internvl3,
        lambda tokenizer: configs.internvl(tokenizer, "qwen3_moe", **configs.QWEN3_MOE),
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
        "qwen2.5 (text)",
        "Qwen2ForCausalLM (AutoModelForCausalLM) and its tokenizer, no processor (`text_only=true`)",
        ("qwen2.5-7b-instruct", "qwen2.5-32b-instruct"),
        reason="a text LLM (MMLongBench's ablation): its images are dropped before the prompt is rendered, so no "
        "image token meets an image feature; tests/harness/models/test_hf_text_only.py runs a tiny random Qwen2 through "
        "the backend and checks its count and its cut against the official wrapper's",
    ),
    ForwardFamily(
        "pixtral",
        "Mistral3ForConditionalGeneration (Pixtral vision), PixtralProcessor",
        ("pixtral",),
        make_processor=_factory("mistral3", 0),
        make_config=_factory("mistral3", 1),
    ),
    ForwardFamily(
        "llama4",
        "Llama4ForConditionalGeneration, Llama4Processor, Llama4ImageProcessor",
        ("llama4 (new)",),
        make_processor=_factory("llama4", 0),
        make_config=_factory("llama4", 1),
    ),
    ForwardFamily(
        "gemma3n",
        "Gemma3nForConditionalGeneration, Gemma3nProcessor",
        ("gemma3n-e2b", "gemma3n-e4b"),
        reason="its vision tower is timm's MobileNetV5 (TimmWrapperModel), which needs timm (1.0.16 or later), which no "
        "extra installs yet",
        blocked=_fails_on("timm", "timm"),
    ),
    ForwardFamily(
        "internvl2 (vllm)",
        "vLLM's InternVLChatModel (internvl.py) and its InternVLProcessor (vllm/transformers_utils/processors/internvl.py)",
        (
            "internvl2.5-1b",
            "internvl2.5-2b",
            "internvl2.5-4b",
            "internvl2.5-8b",
            "internvl2.5-26b",
            "internvl2-1b",
            "internvl2-2b",
            "internvl2-4b",
            "internvl2-8b",
        ),
        reason=f"{NOT_CHECKED_YET} the image tokens vLLM 0.33.0's InternVLChatProcessor writes for each image (its "
        "tiles under max_dynamic_patch, the InternVL2/2.5 aliases' 4 and the 64K/128K rules' 1); it imports here since "
        "torchvision is installed (issue 72), and no check drives it yet",
        backend="vllm",
    ),
    ForwardFamily(
        "phi4-multimodal",
        "vLLM's Phi4MMForCausalLM (phi4mm.py) with the checkpoint's own Phi4MMProcessor (processing_phi4mm.py)",
        ("phi4-multimodal",),
        reason="not checked here: the image tokens vLLM 0.33.0 writes for each image (dynamic_hd crops, the alias's "
        "4 and the 64K/128K rules' 1); vLLM's phi4mm takes its processor from the checkpoint's remote code "
        "(AutoProcessor; transformers has none for phi4mm, its phi4_multimodal is another checkpoint format), which is "
        "not on this machine offline",
        backend="vllm",
        blocked=_remote_processor("Phi4MMForCausalLM", "phi4mm", "phi4mm"),
    ),
    ForwardFamily(
        "phi3.5-vision",
        "vLLM's Phi3VForCausalLM (phi3v.py) with the checkpoints' own Phi3VProcessor (processing_phi3_v.py)",
        ("phi3-vision", "phi3.5-vision"),
        reason="not checked here: the image tokens vLLM 0.33.0 writes for each image (num_crops, the aliases' 4 and the "
        "64K/128K rules' 1); vLLM's phi3v takes its processor from the checkpoints' remote code (AutoProcessor, "
        "calc_num_image_tokens_from_image_size; transformers has none for phi3_v), which is not on this machine offline",
        backend="vllm",
        blocked=_remote_processor("Phi3VForCausalLM", "phi3v", "phi3_v"),
    ),
    ForwardFamily(
        "kimi-vl",
        "moonshotai/Kimi-VL-A3B-*'s own KimiVLForConditionalGeneration",
        ("kimi-vl-a3b", "kimi-vl-a3b-thinking", "kimi-vl-a3b-thinking-2506"),
        reason="no transformers class in 5.20.2 (transformers' kimi_k25 is Kimi K2.5, another model); the aliases "
        "run on vllm, whose KimiVLForConditionalGeneration expands images with the checkpoint's own processor (remote "
        "code, KimiVLProcessor), which no test here has offline: neither pass is checked here",
        backend="vllm",
        blocked=_remote_processor("KimiVLForConditionalGeneration", "kimi_vl", "kimi_vl"),
    ),
    ForwardFamily(
        "minicpm-v-4.5",
        "openbmb/MiniCPM-V-4_5's own MiniCPMV",
        ("minicpm-v-4.5", "minicpm-v-4.5-thinking"),
        reason="no transformers class for MiniCPM-V 4.5 in 5.20.2 (it has MiniCPM-V 4.6 and 4.7, other checkpoints); "
        "the aliases run on vllm, whose MiniCPMV4_5 slices images with the checkpoint's own processor (remote code, "
        "transformers_utils/processors/minicpmv.py calls it), which no test here has offline: neither pass is checked "
        "here",
        backend="vllm",
        blocked=_remote_processor("MiniCPMV", "minicpmv", "minicpmv"),
    ),
)
# The 2026 families (issue 61, item 2): `tests.support.families_2026`.
FAMILIES += (
    ForwardFamily(
        "glm-4.6v",
        "Glm4vMoeForConditionalGeneration, Glm46VProcessor (image only), Glm46VImageProcessorPil",
        ("glm-4.6v",),
        current.glm46v,
        configs.glm4v_moe,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "glm-4.6v-flash",
        "Glm4vForConditionalGeneration, Glm46VProcessor (image only), Glm46VImageProcessorPil",
        ("glm-4.6v-flash",),
        current.glm46v,
        configs.glm4v,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "mimo-vl",
        "Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor (image only), Qwen2VLImageProcessorPil",
        tuple(name for name in ALIASES if name.startswith("mimo-vl")),
        processors.qwen2_5_vl,
        configs.qwen2_5_vl,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen3.5",
        "Qwen3_5ForConditionalGeneration, Qwen3VLProcessor (image only), Qwen2VLImageProcessorPil",
        tuple(name for name in ALIASES if name.startswith(("qwen3.5", "qwen3.6")) and "-a" not in name),
        current.qwen3_5,
        current.qwen3_5_config,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "qwen3.5-moe",
        "Qwen3_5MoeForConditionalGeneration, Qwen3VLProcessor (image only), Qwen2VLImageProcessorPil",
        tuple(name for name in ALIASES if name.startswith(("qwen3.5", "qwen3.6")) and "-a" in name),
        lambda: current.qwen3_5(current.QWEN3_6),
        current.qwen3_5_moe_config,
        IMAGE_ONLY,
    ),
    ForwardFamily(
        "gemma4",
        "Gemma4ForConditionalGeneration / Gemma4UnifiedForConditionalGeneration, Gemma4Processor",
        tuple(name for name in ALIASES if name.startswith("gemma4-")),
        current.gemma4,
        current.gemma4_config,
    ),
    ForwardFamily(
        "llava-onevision-2",
        "vLLM's LlavaOnevision2ForConditionalGeneration (llava_onevision2.py) with the checkpoint's own "
        "LlavaOnevision2Processor (processing_llava_onevision2.py)",
        ("llava-onevision-2-8b",),
        reason="not checked here: the image tokens vLLM 0.33.0 writes for each image; vLLM loads the checkpoint's "
        "processor from its remote code (`_load_ov2_processor`: processing_llava_onevision2.LlavaOnevision2Processor; "
        "transformers has no llava_onevision2), which is not on this machine offline (the count it writes is "
        "`_get_vision_info`'s, which test_families_2026.py checks the family's rule against)",
        backend="vllm",
        blocked=_remote_processor("LlavaOnevision2ForConditionalGeneration", "llava_onevision2", "llava_onevision2"),
    ),
)
BY_NAME = {family.name: family for family in FAMILIES}
RUNNING = tuple(family for family in FAMILIES if family.runs)
