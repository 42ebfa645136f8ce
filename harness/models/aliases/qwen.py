"""Qwen2-VL and Qwen2.5-VL, as MMLongBench's `vlm_model/qwen2_vl.py` runs them: the processor's default pixel limits
(native resolution, the benchmark's own token counting), no truncation at any length, no YaRN (§6.3; the YaRN runs
are an ablation), the AWQ 72Bs in FP16 (`--no_bf16`)."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf

WINDOW = 32768  # Table 10: every Qwen2/2.5-VL size


def _qwen(checkpoint: str, note: str, **args: str) -> Alias:
    return hf(checkpoint, note, WINDOW, prompt_style="qwen", **args)


ALIASES: dict[str, Alias] = {
    "qwen2-vl-2b": _qwen("Qwen/Qwen2-VL-2B-Instruct", "Qwen2-VL 2B"),
    "qwen2-vl": _qwen("Qwen/Qwen2-VL-7B-Instruct", "Qwen2-VL 7B"),
    "qwen2-vl-72b-awq": _qwen(
        "Qwen/Qwen2-VL-72B-Instruct-AWQ", "Qwen2-VL 72B, AWQ, in FP16 as run_eval.sh", dtype="float16"
    ),
    "qwen2.5-vl-3b": _qwen("Qwen/Qwen2.5-VL-3B-Instruct", "Qwen2.5-VL 3B"),
    "qwen2.5-vl": _qwen(
        "Qwen/Qwen2.5-VL-7B-Instruct",
        "Qwen2.5-VL 7B; trained on 32K, run past it as the official wrapper ran it (no YaRN, default pixel limits)",
    ),
    "qwen2.5-vl-32b": _qwen("Qwen/Qwen2.5-VL-32B-Instruct", "Qwen2.5-VL 32B"),
    "qwen2.5-vl-72b-awq": _qwen(
        "Qwen/Qwen2.5-VL-72B-Instruct-AWQ", "Qwen2.5-VL 72B, AWQ, in FP16 as run_eval.sh", dtype="float16"
    ),
}
