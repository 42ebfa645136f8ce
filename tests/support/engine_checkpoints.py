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
# of its own.
ENGINE_FAMILIES = ("qwen2.5-vl", "qwen3-vl", "idefics3", "internvl3", "pixtral", "gemma3", "llava-onevision")
# What the published checkpoints of a family hold that its tiny one lacks, and vLLM's loader needs. Gemma 3's tokenizer
# holds runs of one to four newlines as tokens of their own, which vLLM's Gemma 3 processing looks up by their text
# (`vocab["\n\n"]`: a KeyError for the tiny byte-level tokenizer, which writes a newline as "Ċ"); its SigLIP tower's
# weights are named `vision_tower.vision_model.*`, as vLLM's loader reads them (the tiny one is saved as
# `vision_tower.*`: "no module or parameter named 'vision_tower.embeddings'"; transformers loads either).
AS_PUBLISHED: dict[str, tuple[tuple[str, ...], tuple[str, str]]] = {
    "gemma3": (("\n", "\n\n", "\n\n\n", "\n\n\n\n"), ("vision_tower.", "vision_tower.vision_model.")),
    "llava-onevision": ((), ("vision_tower.", "vision_tower.vision_model.")),  # its SigLIP tower, as llava-hf's
}


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

        getattr(transformers, _video_processor(folder))().save_pretrained(folder)
    # after the video processor: the copy loads the whole processor
    return _as_published(folder, *AS_PUBLISHED[name]) if name in AS_PUBLISHED else folder


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


def _as_published(folder: Path, tokens: tuple[str, ...], renamed: tuple[str, str]) -> Path:
    """A copy of the checkpoint in `folder`, written once beside it, whose tokenizer holds `tokens` too (its embeddings
    grown to them, as transformers grows them) and whose weights named `renamed[0]...` are named `renamed[1]...`."""
    made = folder.with_name(folder.name + "-published")
    if not (made / "config.json").exists():
        from safetensors.torch import load_file, save_file
        from transformers import AutoModelForImageTextToText, AutoProcessor

        processor = AutoProcessor.from_pretrained(folder)
        processor.tokenizer.add_tokens(list(tokens))
        model = AutoModelForImageTextToText.from_pretrained(folder)
        model.resize_token_embeddings(len(processor.tokenizer))
        model.save_pretrained(made)
        processor.save_pretrained(made)
        old, new = renamed
        for path in made.glob("*.safetensors"):
            weights = load_file(path)
            named = {new + key[len(old) :] if key.startswith(old) else key: value for key, value in weights.items()}
            save_file(named, path, metadata={"format": "pt"})
    return made
