"""NVILA and NVILA-Lite (NVIDIA's Efficient-Large-Model checkpoints), MMLongBench's last paper family without an alias:
identified and estimated, with no alias, for the reason `UNAVAILABLE` gives (MMLongBench's own NVILA-Lite rows say
theirs: `tasks/mmlongbench/paper_models.py`).

The rule is MMLongBench's description of its NVILA-Lite run (448 x 448 with 3 x 3 token compression: 32 x 32 SigLIP
patches of 14 px, padded to 33 x 33 and pooled 3 x 3, as SGLang 0.5.23's `NVILALiteMultiModalProjectorDownsampleBlock`
pads and pools them, `srt/models/nvila_lite.py`): 121 tokens a 448-px tile; NVILA's dynamic tiling, which adds tiles
for a large image, is not counted (no stored source gives its tile limit), so the estimate is a floor.
"""

from __future__ import annotations

from harness.models.facts.family import ImageTokens, ModelFamily, fixed

UNAVAILABLE = (
    "no alias: SGLang 0.5.23 loads NVILAForConditionalGeneration (model_type nvila) and "
    "NVILALiteForConditionalGeneration (nvila_lite), so such a checkpoint runs as `--model sglang --model_args "
    "pretrained=PATH`, known by its config and estimated by this rule, but no stored source names one to alias; the "
    "paper's checkpoints (Efficient-Large-Model/NVILA-Lite-{2B,8B}-hf-preview) are model_type vila, VILAForCausalLM, "
    "which no backend here loads (transformers 5.20.2 has no vila model, vLLM 0.33.0 registers no VILA architecture, "
    "SGLang 0.5.23 loads nvila and nvila_lite only)"
)

FAMILY = ModelFamily(
    "NVILA",
    variants=(
        ImageTokens(
            "NVILA",
            fixed(11 * 11),
            "121 tokens per 448-px tile (32 x 32 patches padded to 33 x 33, pooled 3 x 3); tiles past the first not "
            "counted",
            model_types=("nvila", "nvila_lite", "vila"),
            architectures=("NVILAForConditionalGeneration", "NVILALiteForConditionalGeneration", "VILAForCausalLM"),
            fragments=("nvila",),
        ),
    ),
    unavailable=UNAVAILABLE,
)
