"""Phi-3-vision, Phi-3.5-vision and Phi-4-multimodal, as MMLongBench's `vlm_model/phi3.py` and `phi4.py` run them:
the processor at `num_crops = 4` (Phi-3/3.5) or `dynamic_hd = 4` (Phi-4), and where `run_eval.sh` passes
`--image_resize 0.5` with `--max_image_num` (the natural-image tasks at 64K/128K) one crop per image (the wrappers'
only use of image_resize: max(int(4 * 0.5 ** 2), 1); no pixel is resized) and the last 400 (Phi-3/3.5) or 300
(Phi-4) images. The prompt is one string with each image as `<|image_N|>` in place (their chat templates concatenate
string content), the answer prefix continued. They load only as remote code for causal LMs, which vLLM serves
natively."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import mmlb, vllm
from harness.models.aliases.rules import LONG, NATURAL, rule, tasks, wrapper


def _rules(setting: str, model: str, keep: int) -> tuple:
    return (
        wrapper(f"official {model} wrapper: {setting} = 4", processor_kwargs={setting: 4}),
        rule(
            tasks(NATURAL, LONG),
            f"run_eval.sh: --image_resize 0.5 (whose only effect is {setting} = 1) --max_image_num {keep} on natural "
            "images at 64K/128K",
            keep_last_images=keep,
            processor_kwargs={setting: 1},
        ),
    )


PHI3_RULES = _rules("num_crops", "Phi-3/3.5-vision", 400)
PHI4_RULES = _rules("dynamic_hd", "Phi-4-multimodal", 300)

ALIASES: dict[str, Alias] = {
    "phi3-vision": vllm(
        "microsoft/Phi-3-vision-128k-instruct",
        "Phi-3-vision 4.2B (128K) through vLLM",
        131072,
        mmlb("Phi-3-Vision", "microsoft/Phi-3-vision-128k-instruct"),
        rules=PHI3_RULES,
        prompt_style="phi",
    ),
    "phi3.5-vision": vllm(
        "microsoft/Phi-3.5-vision-instruct",
        "Phi-3.5-vision 4.2B through vLLM",
        131072,
        mmlb("Phi-3.5-Vision", "microsoft/Phi-3.5-vision-instruct"),
        rules=PHI3_RULES,
        prompt_style="phi",
    ),
    "phi4-multimodal": vllm(
        "microsoft/Phi-4-multimodal-instruct",
        "Phi-4-multimodal 5.6B through vLLM (vision only)",
        131072,
        mmlb("Phi-4-Multimodal", "microsoft/Phi-4-multimodal-instruct"),
        rules=PHI4_RULES,
        prompt_style="phi",
    ),
}
