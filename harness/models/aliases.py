"""Model aliases: one table mapping a short name to a backend, a checkpoint and its settings.

`--model qwen2.5-vl` resolves here; `--model_args` given on the command line override the alias's
arguments (e.g. `--model qwen2.5-vl --model_args max_pixels=401408`), and `backend=vllm` switches
the backend while keeping the checkpoint and limits.

No alias caps a prompt's length where the official code did not: the official wrappers run every length
untruncated (MMLongBench App. D: inputs past the training window run "as they are"; the paper reports InternVL3-8B
at 128K and Idefics at every length), so every `hf` alias sets `no_context_limit=true` and no prompt is screened
`over_length`. `trained_context` is the window the model was trained on, as its model card or MMLongBench's Table 10
states: recorded in the results, never enforced. A vLLM engine needs a length to allocate for: the `vllm` aliases
give it the official `vllm serve` line's 139264 (`LONG_CONTEXT`), the one limit a run may meet that the official
HF runs did not. Pixel caps are left at each processor's default unless the paper that evaluated the model changed
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.errors import UserError
from harness.inputs.input_policy import InputPolicy, TaskRule


@dataclass(frozen=True)
class Alias:
    backend: str
    args: dict[str, str] = field(default_factory=dict)
    note: str = ""
    trained_context: int | None = None  # informational: the training window (Table 10 of MMLongBench)
    paper_name: str | None = None  # the model's name in the MMLongBench tables
    rules: tuple[TaskRule, ...] = ()  # input policies on some tasks, as the papers ran this model

    def policy_for(self, task: str) -> InputPolicy:
        from harness.inputs.input_policy import policy_for

        return policy_for(task, self.rules)

    def describe(self) -> dict[str, object]:
        """What the results record about the alias, beside the arguments it resolved to."""
        return {
            "trained_context": self.trained_context,
            "paper_name": self.paper_name,
            "note": self.note,
            "rules": [{"tasks": list(r.tasks), **r.policy.describe(), "why": r.why} for r in self.rules],
        }


# Every prompt is sent, however long, as the official wrappers sent theirs (see the module docstring).
NO_LIMIT = {"no_context_limit": "true"}

# MMLongBench's 128K inputs (131,072 counted tokens, plus the chat template and up to 384 new tokens) fit
# in the limit the official `vllm serve` line uses (--max-model-len 139264, with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1).
LONG_CONTEXT = "139264"


# MMLongBench §6.3 (its run scripts at 26197d2): what the official evaluation changed for some model families
# on the natural-image tasks (VRAG, NIAH, ICL), mostly at 64K and 128K.
MMLB_NATURAL = ("mmlongbench_vrag_*", "mmlongbench_niah_*", "mmlongbench_icl_*")
MMLB_DOCUMENTS = ("mmlongbench_summ_*", "mmlongbench_docvqa_*")


def _at(patterns: tuple[str, ...], *lengths: str) -> tuple[str, ...]:
    return tuple(f"{p}_{length}" for p in patterns for length in lengths)


def _rule(tasks: tuple[str, ...], why: str, **policy: Any) -> TaskRule:  # policy: InputPolicy.of's keywords
    return TaskRule(tasks, InputPolicy.of(**policy), why)


INTERNVL_RULES = (
    _rule(
        ("mmlongbench_*",),
        "official InternVL wrapper: dynamic tiling with max_num = 4 tiles",
        processor_kwargs={"max_patches": 4},
    ),
    _rule(
        _at(MMLB_NATURAL, "64k", "128k"),
        "run_eval.sh: image_resize 0.5 (one tile per image) and the last 400 images at 64K/128K",
        keep_last_images=400,
        processor_kwargs={"max_patches": 1},
    ),
)
GEMMA3_RULES = (
    _rule(
        ("mmlongbench_niah_vh_*_128k", "mmlongbench_icl_*_128k"),
        "run_eval.sh: max_image_num 400 on VH and ICL at 128K",
        keep_last_images=400,
    ),
)
IDEFICS2_RULES = (
    _rule(
        MMLB_NATURAL,
        "run_eval.sh: do_image_splitting False on natural images",
        processor_kwargs={"do_image_splitting": False},
    ),
)
IDEFICS3_RULES = (
    _rule(
        ("mmlongbench_*",),
        "official Idefics3 wrapper: processor do_resize=False (no upscaling to 1456 px)",
        processor_kwargs={"do_resize": False},
    ),
    _rule(
        MMLB_NATURAL,
        "run_eval.sh: do_image_splitting False on natural images",
        processor_kwargs={"do_image_splitting": False},
    ),
    _rule(MMLB_DOCUMENTS, "run_eval.sh: image_resize 0.5 on document pages", image_scale=0.5),
)


OVIS2_RULES = (
    _rule(
        ("mmlongbench_*",),
        "official Ovis2 wrapper: max_partition = 4 (transformers' Ovis2 processor: "
        "crop_to_patches with max_patches = 4)",
        processor_kwargs={"crop_to_patches": True, "max_patches": 4},
    ),
    _rule(
        _at(MMLB_NATURAL, "64k", "128k"),
        "run_eval.sh: image_resize 0.5 (a real LANCZOS resize) and the last 400 images at 64K/128K",
        image_scale=0.5,
        keep_last_images=400,
    ),
)
PHI3_RULES = (
    _rule(("mmlongbench_*",), "official Phi-3/3.5-vision wrapper: num_crops = 4", processor_kwargs={"num_crops": 4}),
    _rule(
        _at(MMLB_NATURAL, "64k", "128k"),
        "run_eval.sh: image_resize 0.5 (whose only effect is num_crops = 1) and the last 400 images at 64K/128K",
        keep_last_images=400,
        processor_kwargs={"num_crops": 1},
    ),
)
PHI4_RULES = (
    _rule(("mmlongbench_*",), "official Phi-4-multimodal wrapper: dynamic_hd = 4", processor_kwargs={"dynamic_hd": 4}),
    _rule(
        _at(MMLB_NATURAL, "64k", "128k"),
        "run_eval.sh: image_resize 0.5 (whose only effect is dynamic_hd = 1) and the last 300 images at 64K/128K",
        keep_last_images=300,
        processor_kwargs={"dynamic_hd": 1},
    ),
)
PIXTRAL_RULES = (
    _rule(
        ("mmlongbench_*",),
        "paper and run_eval.sh: every image resized to 0.5x per side (LANCZOS), all tasks",
        image_scale=0.5,
    ),
)
GPT4O_RULES = (
    _rule(MMLB_NATURAL, "run_eval.sh: image_detail low on natural images", processor_kwargs={"image_detail": "low"}),
)


def _qwen(checkpoint: str, note: str, paper_name: str) -> Alias:
    # MMLongBench §6.3: Qwen's processor defaults (no max_pixels override: native resolution, the benchmark's
    # own token counting), no truncation at any length, no YaRN.
    return Alias("hf", {"pretrained": checkpoint, **NO_LIMIT}, note, 32768, paper_name)


ALIASES: dict[str, Alias] = {
    "qwen2.5-vl": _qwen(
        "Qwen/Qwen2.5-VL-7B-Instruct",
        "Qwen2.5-VL 7B; trained on 32K, run to 128K as in MMLongBench (no YaRN, default pixel limits)",
        "Qwen2.5-VL-7B",
    ),
    "qwen2.5-vl-3b": _qwen("Qwen/Qwen2.5-VL-3B-Instruct", "Qwen2.5-VL 3B", "Qwen2.5-VL-3B"),
    "qwen2-vl": _qwen("Qwen/Qwen2-VL-7B-Instruct", "Qwen2-VL 7B", "Qwen2-VL-7B"),
    "llava-onevision": Alias(
        "hf",
        {"pretrained": "llava-hf/llava-onevision-qwen2-7b-ov-hf", **NO_LIMIT},
        "LLaVA-OneVision 7B (Qwen2 LM); AnyRes tiling per image (not evaluated by MMLongBench: "
        "its 64K/128K inputs exceed 500K tokens)",
        32768,
    ),
    "llava-next-llama3": Alias(
        "hf",
        {"pretrained": "llava-hf/llama3-llava-next-8b-hf", **NO_LIMIT},
        "LLaVA-NeXT Llama-3 8B (the paper's LLaVA-Llama-3)",
        8192,
    ),
    "idefics2": Alias(
        "hf",
        {"pretrained": "HuggingFaceM4/idefics2-8b", **NO_LIMIT},
        "IDEFICS2-8B (evaluated in the MMNeedle paper)",
        8192,
        "Idefics2-8B",
        IDEFICS2_RULES,
    ),
    "idefics3": Alias(
        "hf",
        {"pretrained": "HuggingFaceM4/Idefics3-8B-Llama3", **NO_LIMIT},
        "Idefics3 8B",
        10240,
        "Idefics3-8B",
        IDEFICS3_RULES,
    ),
    "internvl": Alias(
        "hf",
        {"pretrained": "OpenGVLab/InternVL3-8B-hf", **NO_LIMIT},
        "InternVL3 8B, transformers-native checkpoint",
        32768,
        "InternVL3-8B",
        INTERNVL_RULES,
    ),
    "gemma3": Alias(
        "hf",
        {"pretrained": "google/gemma-3-12b-it", **NO_LIMIT},
        "Gemma 3 12B instruction-tuned",
        131072,
        "Gemma3-12B",
        GEMMA3_RULES,
    ),
    # Ovis2 through transformers' own Ovis2 classes (the authors' AIDC-AI checkpoints need remote code that
    # registers no image-text-to-text model; vLLM's Ovis fixes max_partition at 9, not the official 4).
    "ovis2": Alias(
        "hf",
        {"pretrained": "thisisiron/Ovis2-2B-hf", **NO_LIMIT},
        "Ovis2 2B, the transformers-native conversion; trained on 32K, run to 128K as in MMLongBench",
        32768,
        "Ovis2-2B",
        OVIS2_RULES,
    ),
    # Phi-3.5-vision and Phi-4-multimodal load only as remote code for causal LMs, which vLLM serves natively.
    "phi3.5-vision": Alias(
        "vllm",
        {"pretrained": "microsoft/Phi-3.5-vision-instruct", "trust_remote_code": "true", "max_model_len": LONG_CONTEXT},
        "Phi-3.5-vision 4.2B through vLLM",
        131072,
        "Phi-3.5-Vision",
        PHI3_RULES,
    ),
    "phi4-multimodal": Alias(
        "vllm",
        {
            "pretrained": "microsoft/Phi-4-multimodal-instruct",
            "trust_remote_code": "true",
            "max_model_len": LONG_CONTEXT,
        },
        "Phi-4-multimodal 5.6B through vLLM (vision only)",
        131072,
        "Phi-4-Multimodal",
        PHI4_RULES,
    ),
    "pixtral": Alias(
        "hf",
        {"pretrained": "mistral-community/pixtral-12b", **NO_LIMIT},
        "Pixtral 12B (transformers' LLaVA conversion); images at half size on every MMLongBench task",
        131072,
        "Pixtral-12B",
        PIXTRAL_RULES,
    ),
    "gpt-4o": Alias(
        "openai",
        {"model": "gpt-4o-2024-11-20"},
        "GPT-4o as MMLongBench ran it (detail low on natural images); key from OPENAI_API_KEY",
        128000,
        "GPT-4o",
        GPT4O_RULES,
    ),
}


def resolve(name: str, cli_args: dict[str, str]) -> tuple[str, dict[str, str], str | None]:
    """(backend, merged model args, alias name or None) for `--model NAME --model_args ...`."""
    if name not in ALIASES:
        return name, dict(cli_args), None
    alias = ALIASES[name]
    merged = {**alias.args, **cli_args}
    backend = merged.pop("backend", alias.backend)
    if not backend:
        raise UserError(f"alias {name!r}: empty backend")
    return backend, merged, name
