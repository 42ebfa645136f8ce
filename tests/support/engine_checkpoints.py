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
# KeyError).
ENGINE_FAMILIES = ("qwen2.5-vl", "qwen3-vl", "idefics3", "internvl3", "pixtral", "llava-onevision")
# Weights renamed as the published checkpoints name them, where vLLM's loader maps those names only: transformers saves
# a tiny LLaVA-OneVision's SigLIP tower as `vision_tower.*`, llava-hf's checkpoints hold `vision_tower.vision_model.*`
# (both load alike in transformers).
PUBLISHED_NAMES = {"llava-onevision": ("vision_tower.", "vision_tower.vision_model.")}


def engine_checkpoint(name: str) -> Path:
    """`name`'s tiny checkpoint with 64-dim heads and a whole processor, written once per process."""
    folder = tiny_checkpoint(name, head_dim=CPU_HEAD_DIM)
    if (
        BY_NAME[name].model_args.get("processor") == "image_only"
        and not (folder / "video_preprocessor_config.json").exists()
    ):
        import transformers

        getattr(transformers, _video_processor(folder))().save_pretrained(folder)
    if name in PUBLISHED_NAMES:
        _published_names(folder, *PUBLISHED_NAMES[name])
    return folder


def _published_names(folder: Path, saved: str, published: str) -> None:
    """Each weight named `saved...` renamed `published...`, in place (once: a renamed name starts with `published`)."""
    from safetensors.torch import load_file, save_file

    for path in folder.glob("*.safetensors"):
        weights = load_file(path)
        if any(name.startswith(saved) and not name.startswith(published) for name in weights):
            renamed = {published + n[len(saved) :] if n.startswith(saved) else n: w for n, w in weights.items()}
            save_file(renamed, path, metadata={"format": "pt"})


def _video_processor(folder: Path) -> str:
    """The class of the video processor that goes with `folder`'s processor: its config's model type's, else (a
    type without one of its own: GLM-4.5V's `glm4v_moe`) that of a model type whose processor it is
    (`processor_config.json`'s `processor_class`: GLM-4.6V's Glm46VProcessor is `glm46v`'s)."""
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    model_type = json.loads((folder / "config.json").read_text())["model_type"]
    saved = folder / "processor_config.json"
    processor = json.loads(saved.read_text()).get("processor_class") if saved.exists() else None
    owners = [kind for kind, name in PROCESSOR_MAPPING_NAMES.items() if name == processor]
    kind = next(kind for kind in (model_type, *owners) if kind in VIDEO_PROCESSOR_MAPPING_NAMES)
    return str(VIDEO_PROCESSOR_MAPPING_NAMES[kind]["torchvision"])


def prompt_style(name: str) -> dict[str, str]:
    """The prompt style the family's alias runs with (both backends render the prompt with it), where it has one."""
    alias = ALIASES.get(BY_NAME[name].aliases[0])
    style = alias.args.get("prompt_style") if alias is not None else None
    return {"prompt_style": style} if style else {}
