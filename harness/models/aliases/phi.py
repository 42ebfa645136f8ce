"""Phi-3-vision, Phi-3.5-vision and Phi-4-multimodal, as MMLongBench's `vlm_model/phi3.py` and `phi4.py` run them:
the processor at `num_crops = 4` (Phi-3/3.5) or `dynamic_hd = 4` (Phi-4); where `run_eval.sh` takes one crop per
image and the last 300-400 images is MMLongBench's. The prompt is one string with each image as `<|image_N|>` in
place (their chat templates concatenate string content), the answer prefix continued. They load only as remote code
for causal LMs, which vLLM serves natively."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import vllm, wrapper

PHI3_RULES = (wrapper("official Phi-3/3.5-vision wrapper: num_crops = 4", processor_kwargs={"num_crops": 4}),)
PHI4_RULES = (wrapper("official Phi-4-multimodal wrapper: dynamic_hd = 4", processor_kwargs={"dynamic_hd": 4}),)

ALIASES: dict[str, Alias] = {
    "phi3-vision": vllm(
        "microsoft/Phi-3-vision-128k-instruct",
        "Phi-3-vision 4.2B (128K) through vLLM",
        131072,
        PHI3_RULES,
        prompt_style="phi",
    ),
    "phi3.5-vision": vllm(
        "microsoft/Phi-3.5-vision-instruct", "Phi-3.5-vision 4.2B through vLLM", 131072, PHI3_RULES, prompt_style="phi"
    ),
    "phi4-multimodal": vllm(
        "microsoft/Phi-4-multimodal-instruct",
        "Phi-4-multimodal 5.6B through vLLM (vision only)",
        131072,
        PHI4_RULES,
        prompt_style="phi",
    ),
}
