"""Model aliases: one table mapping a short name to a backend, a checkpoint and its settings.

`--model qwen2.5-vl` resolves here; `--model_args` given on the command line override the alias's
arguments (e.g. `--model qwen2.5-vl --model_args max_pixels=401408`), and `backend=vllm` switches
the backend while keeping the checkpoint and limits. Context lengths are the text model's usable
window as its model card states; pixel caps follow the settings each paper or model card uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from builders.core.contract import QWEN_DEFAULT_MAX_PIXELS
from harness.errors import UserError


@dataclass(frozen=True)
class Alias:
    backend: str
    args: dict[str, str] = field(default_factory=dict)
    note: str = ""


QWEN_MAX_PIXELS = str(QWEN_DEFAULT_MAX_PIXELS)  # 1,003,520: 1,280 vision tokens per image

ALIASES: dict[str, Alias] = {
    "qwen2.5-vl": Alias("hf", {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct", "context_length": "32768",
                               "max_pixels": QWEN_MAX_PIXELS}, "Qwen2.5-VL 7B; 32K without YaRN"),
    "qwen2.5-vl-3b": Alias("hf", {"pretrained": "Qwen/Qwen2.5-VL-3B-Instruct", "context_length": "32768",
                                  "max_pixels": QWEN_MAX_PIXELS}, "Qwen2.5-VL 3B"),
    "qwen2-vl": Alias("hf", {"pretrained": "Qwen/Qwen2-VL-7B-Instruct", "context_length": "32768",
                             "max_pixels": QWEN_MAX_PIXELS}, "Qwen2-VL 7B"),
    "llava-onevision": Alias("hf", {"pretrained": "llava-hf/llava-onevision-qwen2-7b-ov-hf", "context_length": "32768"},
                             "LLaVA-OneVision 7B (Qwen2 LM); AnyRes tiling per image"),
    "llava-next-llama3": Alias("hf", {"pretrained": "llava-hf/llama3-llava-next-8b-hf", "context_length": "8192"},
                               "LLaVA-NeXT Llama-3 8B (the paper's LLaVA-Llama-3)"),
    "idefics2": Alias("hf", {"pretrained": "HuggingFaceM4/idefics2-8b", "context_length": "8192"},
                      "IDEFICS2-8B (evaluated in the MMNeedle paper)"),
    "idefics3": Alias("hf", {"pretrained": "HuggingFaceM4/Idefics3-8B-Llama3", "context_length": "8192"},
                      "Idefics3 8B"),
    "internvl": Alias("hf", {"pretrained": "OpenGVLab/InternVL3-8B-hf", "context_length": "32768"},
                      "InternVL3 8B, transformers-native checkpoint"),
    "gemma3": Alias("hf", {"pretrained": "google/gemma-3-12b-it", "context_length": "131072"},
                    "Gemma 3 12B instruction-tuned"),
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
