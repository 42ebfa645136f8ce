"""Tiny checkpoints vLLM's CPU build runs (issue 86): a family's tiny checkpoint (`tests.support.forward_pass`) with its
language model's attention in heads of 64 (the CPU attention takes common head sizes only: 16-dim heads stop the
engine with `Unsupported CPU attention configuration: head_dim=16`), and, for a family whose tiny processor is built
without its video part, the family's default video processor beside it: vLLM loads the whole processor
(`AutoProcessor`), which insists on one (torchvision, which the CPU engine's environment has).

    from tests.support.engine_checkpoints import ENGINE_FAMILIES, engine_checkpoint
    folder = engine_checkpoint("qwen2.5-vl")
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.models.aliases import ALIASES
from tests.support.forward_families import BY_NAME
from tests.support.forward_pass import tiny_checkpoint

CPU_HEAD_DIM = 64
# The families the CPU engine runs end to end in `make test` (tests/harness/models/vllm_cpu), each a vLLM architecture
# of its own. Not here: Gemma 3 (its tiny tokenizer has no "\n" token, which vLLM's Gemma 3 processing looks up:
# KeyError) and LLaVA-OneVision (its tiny SigLIP tower is saved as `vision_tower.vision_model.*`, which vLLM's loader
# does not map: "no module or parameter named 'vision_tower.embeddings'").
ENGINE_FAMILIES = ("qwen2.5-vl", "qwen3-vl", "idefics3", "internvl3", "pixtral")


def engine_checkpoint(name: str, heads: int = 1) -> Path:
    """`name`'s tiny checkpoint with a whole processor, its attention in `heads` heads of 64 dims together (an engine
    over N processes, `tensor_parallel_size=N`, splits the heads: N of them, of 64 / N dims each, since vLLM's Qwen2
    takes a head's size as hidden_size / heads), written once per process."""
    folder = tiny_checkpoint(name, head_dim=CPU_HEAD_DIM // heads, heads=heads)
    if (
        BY_NAME[name].model_args.get("processor") == "image_only"
        and not (folder / "video_preprocessor_config.json").exists()
    ):
        import transformers
        from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

        model_type = json.loads((folder / "config.json").read_text())["model_type"]
        video = VIDEO_PROCESSOR_MAPPING_NAMES[model_type]["torchvision"]
        getattr(transformers, video)().save_pretrained(folder)
    return folder


def prompt_style(name: str) -> dict[str, str]:
    """The prompt style the family's alias runs with (both backends render the prompt with it), where it has one."""
    alias = ALIASES.get(BY_NAME[name].aliases[0])
    style = alias.args.get("prompt_style") if alias is not None else None
    return {"prompt_style": style} if style else {}
