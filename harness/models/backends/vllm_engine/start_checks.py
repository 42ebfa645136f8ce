"""What can be known of a vllm engine's start before it starts (a minute of loading, then 100-200 lines of its workers'
tracebacks): a KV cache size below one block, and on vLLM's CPU build a head size its attention refuses, each refused
in one line; on the CPU build, with no KV cache size given, one sized from the memory free here, and said. vLLM's
own CPU default, `gpu_memory_utilization` as a share of all the machine's memory, fails whenever anything else holds
a tenth of it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from harness.errors import UserError
from harness.models.facts.checkpoint import checkpoint_folder, config_json

KV_SIZE = "kv_cache_memory_bytes"
SMALLEST_BLOCK = 16  # tokens: the smallest block any of vLLM's platforms takes where none is given
KV_SHARE_OF_FREE = 0.25  # of the memory free once the weights are in: the rest for activations and images
MIB = 1 << 20
# Engine fields a vLLM model runs right with only otherwise than vLLM's default, by the config's architecture, unless
# given: vLLM 0.32's EXAONE 4.5 keeps Qwen2.5-VL's device-side image normalisation (`supports_mm_device_do_normalize`:
# its processor leaves the pixels unnormalised for the model) but builds its vision tower without the layer that
# normalises them, so the tower sees pixels of 0-255; normalised by the processor, as transformers does, its image
# features are transformers' (issue 104's sweep: every image row answered otherwise than hf).
ARCHITECTURE_DEFAULTS: dict[str, dict[str, object]] = {
    "Exaone4_5_ForConditionalGeneration": {"mm_device_do_normalize": False},
}


def language_config(config: Mapping[str, object]) -> Mapping[str, object]:
    """The language model's part of a vision-language config (`text_config`, InternVL's `llm_config`), else the
    config itself (Qwen2.5-VL's fields stand at its top)."""
    for key in ("text_config", "llm_config", "language_config"):
        part = config.get(key)
        if isinstance(part, Mapping) and "num_attention_heads" in part:
            return part
    return config


def attention_shape(config: Mapping[str, object]) -> tuple[int, int, int] | None:
    """(layers, key-value heads, head size) of the language model's attention, or None where the config does not
    say them in the common names, or where its attention is latent (MLA: `kv_lora_rank`), which vLLM runs on backends
    of their own, caching one latent a token: DeepSeek's, GLM-5's, whose `head_dim` is the rotary part of a head (0
    where none rotates)."""
    text = language_config(config)
    if isinstance(text.get("kv_lora_rank"), int):
        return None
    layers, heads, hidden = (text.get(k) for k in ("num_hidden_layers", "num_attention_heads", "hidden_size"))
    if not (isinstance(layers, int) and isinstance(heads, int) and heads > 0):
        return None
    head_dim = text.get("head_dim")
    if not isinstance(head_dim, int):
        if not isinstance(hidden, int):
            return None
        head_dim = hidden // heads
    kv_heads = text.get("num_key_value_heads")
    return layers, kv_heads if isinstance(kv_heads, int) and kv_heads > 0 else heads, head_dim


def element_bytes(kwargs: Mapping[str, object]) -> int:
    """Bytes of one cached value, at least: 1 for an fp8 cache, 4 for float32, else 2 (bf16 and fp16)."""
    if str(kwargs.get("kv_cache_dtype") or "").startswith("fp8"):
        return 1
    return 4 if str(kwargs.get("dtype") or "") in ("float32", "float") else 2


def cpu_build() -> bool:
    """Whether the installed vLLM is its CPU build (the platform it resolves to)."""
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # no vLLM, or one that finds no platform here: not the CPU build
        return False


def cpu_head_sizes() -> list[int]:
    """The head sizes vLLM's CPU attention takes, as it declares them."""
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    return list(CPUAttentionBackend.get_supported_head_sizes())


def weights_bytes(folder: Path | None) -> int:
    if folder is None:
        return 0
    return sum(path.stat().st_size for path in folder.glob("*.safetensors") if path.is_file())


def refusal(kwargs: Mapping[str, object], config: Mapping[str, object], on_cpu: bool) -> str | None:
    """Why the engine cannot start with `kwargs`, known before it does; None where nothing is."""
    shape = attention_shape(config)
    if shape is None:
        return None
    layers, kv_heads, head_dim = shape
    if on_cpu and head_dim not in (sizes := cpu_head_sizes()):
        return (
            f"the checkpoint's language model has attention heads of {head_dim}, which vLLM's CPU attention does not "
            f"take (it takes {', '.join(map(str, sizes))}): run it on a GPU, or with --model hf"
        )
    given = kwargs.get(KV_SIZE)
    block = kwargs.get("block_size")
    block_tokens = block if isinstance(block, int) and block > 0 else SMALLEST_BLOCK
    one_block = block_tokens * 2 * kv_heads * head_dim * element_bytes(kwargs)
    if isinstance(given, int) and given < one_block:
        return (
            f"{KV_SIZE}={given:,} is less than one block of one layer's KV cache ({block_tokens} tokens x 2 x "
            f"{kv_heads} heads x {head_dim} x {element_bytes(kwargs)} bytes = {one_block:,} bytes): give {KV_SIZE}=N "
            f"of at least what max_model_len tokens need in all {layers} layers"
        )
    return None


def cpu_kv_cache(kwargs: Mapping[str, object], folder: Path | None) -> int:
    """A KV cache size for vLLM's CPU build: a quarter of the memory free here once the weights are in (twice their size
    on disk for float32), in whole MiB, at least one."""
    import psutil

    weights = weights_bytes(folder) * (2 if element_bytes(kwargs) == 4 else 1)
    free = psutil.virtual_memory().available - weights
    return max(1, int(free * KV_SHARE_OF_FREE) // MIB) * MIB


def before_start(kwargs: dict[str, object]) -> dict[str, object]:
    """`kwargs` as the engine will get them: the fields the checkpoint's architecture needs (`ARCHITECTURE_DEFAULTS`)
    where not given; on vLLM's CPU build a KV cache size where none was given (nor VLLM_CPU_KVCACHE_SPACE, vLLM's
    older switch), said in one line; a `UserError` for a start that cannot work."""
    model = str(kwargs.get("model"))
    revision = kwargs.get("revision")
    revision = revision if isinstance(revision, str) else None
    on_cpu = cpu_build()
    try:
        folder = checkpoint_folder(model, revision)
    except ValueError:
        folder = None
    out = dict(kwargs)
    if on_cpu and out.get(KV_SIZE) is None and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        out[KV_SIZE] = size = cpu_kv_cache(out, folder)
        print(
            f"harness: vllm on vLLM's CPU build: a KV cache of {size / (1 << 30):.2f} GiB, a quarter of the memory "
            f"free once the weights are in ({KV_SIZE}=N sets it)",
            file=sys.stderr,
            flush=True,
        )
    config = config_json(model, revision)
    architectures = config.get("architectures")
    for architecture in architectures if isinstance(architectures, list) else ():
        for name, value in ARCHITECTURE_DEFAULTS.get(str(architecture), {}).items():
            out.setdefault(name, value)
    why = refusal(out, config, on_cpu)
    if why is not None:
        raise UserError(f"vllm: {model}: {why}")
    return out
