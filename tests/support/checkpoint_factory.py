"""A tiny checkpoint of any image-text-to-text `model_type` of the installed transformers, made generically: the
type's default config with every width, depth, head and expert count shrunk (its vision geometry kept, so the
processor's defaults make as many image tokens as the model makes image features), its real processor class built
from its parts around a tiny tokenizer that holds every special token the processor reads, a chat template, and
`save_pretrained` of both, so `AutoModelForImageTextToText` / `AutoProcessor` (and the `hf` backend) load it as they
load a published one. The hand-made makers (`forward_families`) stay the reference for the families the harness
runs; this is the path for the rest, and for what a new transformers release adds.

    from tests.support.checkpoint_factory import CannotBuild, build, image_text_types
    folder = build("smolvlm", tmp_path / "smolvlm")  # or CannotBuild("<the reason>")
"""

from __future__ import annotations

import copy
import inspect
import re
import shutil
from collections.abc import Callable
from inspect import signature
from pathlib import Path
from typing import Any

# The tiny widths (those of `tiny_vlm_configs`): one width everywhere, so a projector between towers never has to
# be told two.
WIDTH, FFN, MOE_FFN, HEADS, KV_HEADS, HEAD_DIM, LAYERS = 64, 128, 32, 4, 2, 16, 2
EXPERTS, EXPERTS_PER_TOKEN = 4, 2
CONTEXT = 16384  # the text model's context at least
MAX_BYTES = 16 * 2**20  # a checkpoint over this is a shrink that missed a size
RUNS = "runs end to end"  # docs/models.md's word for a type built and run by `harness --model hf`

_WIDTHS = {
    "hidden_size", "embed_dim", "d_model", "n_embd", "hidden_dim", "width", "out_hidden_size", "projector_hidden_size",
    "vision_hidden_size", "text_hidden_size", "mm_hidden_size", "projection_dim", "encoder_hidden_size",
    "vision_embed_dim", "text_embed_dim", "projector_dim", "output_dim", "proj_dim", "projection_hidden_size",
    "projector_input_dim", "projector_output_dim", "vision_output_dim", "mm_embed_dim", "output_proj_dims",
    "output_channels", "downsample_channels", "hidden_sizes", "image_token_embed_dim", "downsample_hidden_size",
    "word_embed_proj_dim",
}  # fmt: skip
_FFNS = {
    "intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "mlp_dim", "n_inner", "d_ff",
    "intermediate_size_mlp", "dense_intermediate_size",
}  # fmt: skip
_MOE_FFNS = {
    "moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size", "share_expert_dim",
    "moe_hidden_size",
}  # fmt: skip
_HEADS = {
    "num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads", "decoder_attention_heads",
    "attention_heads", "num_sliding_attention_heads", "linear_num_heads", "index_n_heads",
}  # fmt: skip
_HEAD_DIMS = {"head_dim", "attention_head_dim", "kv_channels", "linear_head_dim", "index_head_dim"}
_KV_HEADS = {"num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num"}
_LAYERS = {
    "num_hidden_layers", "num_layers", "depth", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
    "num_encoder_layers", "num_decoder_layers",
}  # fmt: skip
_EXPERTS = {"num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"}
_EXPERTS_PER_TOKEN = {"num_experts_per_tok", "moe_k", "moe_topk", "num_experts_per_token"}
# MLA (DeepSeek-style attention: Kimi K2.5's): its ranks and its split head dims, small and consistent
_MLA = {"kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16}
# Linear attention (Qwen3.5's gated delta net and its kin)
_LINEAR = {
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
}
# Per-layer index settings (which layers are dense, full attention, tapped for features ...): remapped into the new
# depth
_INDEXED = re.compile(r"(layer|index|indexes|indices|idxs)$|_layers$")
_NOT_TOKENS = {"bos", "eos", "pad", "unk", "sep", "cls", "mask", "decoder_start"}

# Published chat templates the repo keeps, by model_type (`family_templates`, `published_templates/`)
_TEMPLATES: dict[str, Callable[[], str]] = {}


def _templates() -> dict[str, Callable[[], str]]:
    if not _TEMPLATES:
        from tests.support import families_2026 as current
        from tests.support import family_templates as t
        from tests.support import tiny_vlm_processors as tp

        _TEMPLATES.update(
            {
                "qwen2_vl": lambda: t.QWEN2_VL,
                "qwen2_5_vl": lambda: t.QWEN2_VL,
                "qwen3_vl": lambda: t.QWEN3_VL,
                "qwen3_vl_moe": lambda: t.QWEN3_VL,
                "qwen3_5": lambda: current.QWEN3_5,
                "qwen3_5_moe": lambda: current.QWEN3_6,
                "gemma3": lambda: t.GEMMA3,
                "shieldgemma2": lambda: t.GEMMA3,  # google/shieldgemma-2-4b-it ships Gemma 3's
                "gemma3n": lambda: t.GEMMA3N,
                "gemma4": lambda: current.GEMMA4,
                "idefics2": lambda: t.IDEFICS2,
                "idefics3": lambda: t.IDEFICS3,
                "internvl": lambda: t.INTERNVL_HF,
                "ovis2": lambda: t.OVIS2_HF,
                "llava": lambda: t.LLAVA_1_5,
                "llava_next": lambda: t.LLAVA_1_5,
                "llava_onevision": lambda: tp.LLAVA_ONEVISION,
                "paligemma": lambda: tp.PALIGEMMA,
                "mistral3": lambda: t.PIXTRAL,
                "glm4v": lambda: t.GLM4_1V,
                "glm4v_moe": lambda: t.GLM4_5V,
                "glm46v": lambda: t.GLM4_5V,
            }
        )
    return _TEMPLATES


def _mobilenet_v5_block(kind: str, channels: int, stride: int, **settings: Any) -> dict[str, Any]:
    """One block of a MobileNetV5 as timm's builder takes it (`decode_arch_def`'s form: an `er`, `uir` or `mqa`)."""
    return {"block_type": kind, "out_chs": channels, "stride": stride, "act_layer": None, **settings}


# A MobileNetV5 of google/gemma-3n-*'s stages (a stride-2 stem and four stride-2 stages, the last two each with a
# multi-query attention block between convolution blocks, the last two fused at 16 x 16: 256 features of 2,048 channels an image) a block or two a
# stage, 16 and 32 channels wide (timm's `mobilenetv5_300m_enc` builds 300M parameters whatever the config's widths)
_TINY_MOBILENET_V5 = [
    [_mobilenet_v5_block("er", 16, 2, exp_kernel_size=3, exp_ratio=4.0)],
    [_mobilenet_v5_block("uir", 16, 2, dw_kernel_size_start=3, dw_kernel_size_mid=5, exp_ratio=6.0)],
    *[
        [
            _mobilenet_v5_block("uir", 32, 2, dw_kernel_size_start=5, dw_kernel_size_mid=5, exp_ratio=6.0),
            _mobilenet_v5_block("mqa", 32, 1, dw_kernel_size=3, num_heads=2, key_dim=16, value_dim=16, kv_stride=kv),
            _mobilenet_v5_block("uir", 32, 1, exp_ratio=2.0),  # a stage ends in a convolution block (its features)
        ]
        for kv in (2, 1)
    ],
]
# Per-type settings the generic shrink cannot infer, each with why. Keys are paths into the config dict.
OVERRIDES: dict[str, dict[str, Any]] = {
    # Gemma 3n's tower is timm's MobileNetV5 by name (`architecture`), built with `model_args` (the blocks above), and
    # its features are 2,048 channels whatever `hidden_size` says (the model reads that); its last 15 layers share the
    # key-value caches of the last of each kind before them (`num_kv_shared_layers`), none of the tiny two layers
    "gemma3n": {
        "vision_config.model_args": {"block_args": _TINY_MOBILENET_V5, "stem_size": 16},
        "vision_config.hidden_size": 2048,
        "text_config.num_kv_shared_layers": 0,
    },
    # Step 3.7's text model builds a sliding-window mask on every forward, even where no kept layer slides
    "step3p7": {"text_config.sliding_window": 64},
    # LFM2's default layers are all attention; LiquidAI/LFM2-VL-*'s interleave short-convolution layers with them
    # (vLLM's LFM2, a hybrid, asserts "no mamba layers in the model" without one): one of each kind
    "lfm2_vl": {"text_config.layer_types": ["conv", "full_attention"], "text_config.full_attn_idxs": [1]},
    # Llama 4's vision MLP takes the pixel-shuffled patches (width / ratio**2 = 64 / 0.25) at its intermediate size
    "llama4": {"vision_config.intermediate_size": 256},
    # Qwen4-Exp's indexed-attention layers have no indexer by default (a checkpoint sets one): a small one
    "qwen4_exp": {
        "text_config.indexer_n_heads": 2,
        "text_config.indexer_kv_heads": 1,
        "text_config.indexer_head_dim": 16,
        "text_config.indexer_budget": 64,
        "text_config.indexer_compress_ratio": 4,
    },
    # HunYuan-VL's text model reads its multimodal RoPE axes (at least 3) from mrope_section, which the default lacks
    "hunyuan_vl": {
        "text_config.rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 2, 2]}
    },
    # SmolVLM's default tower (224 px, 32-px patches: 7 a side) cannot be pixel-shuffled by its scale factor 2, and
    # its model splits the features into blocks of the patch size: SmolVLM-256M's 512-px tiles, 16-px patches and
    # scale factor 4 (64 tokens a tile), with its processor's (`PROCESSOR_SETTINGS`)
    "smolvlm": {"vision_config.image_size": 512, "vision_config.patch_size": 16, "scale_factor": 4},
    # Cohere Compass' rope is per layer type, which its default leaves empty: North-Micro-Vision-Instruct's sliding
    # layers rotate (3-axis mrope, [24, 20, 20] of a 128-dim head: here of a 16-dim one), its full layers are NoPE
    "cohere_compass": {
        "text_config.layer_types": ["sliding_attention", "full_attention"],
        "text_config.rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 50000.0, "mrope_section": [3, 3, 2]},
            "full_attention": None,
        },
    },
    # DeepSeek-OCR 2's MoE text model has no per-layer MLP kinds nor top-k by default: DeepSeek-OCR-2's first layer
    # dense, the rest sparse (a tiny one of each), experts per token within the tiny 4
    "deepseek_ocr2": {"text_config.mlp_layer_types": ["dense", "sparse"], "text_config.num_experts_per_tok": 2},
    # DiffusionGemma's layers are all MoE, whose sizes its default leaves unset (google/diffusiongemma-26B-A4B-it's
    # Gemma 4 26B-A4B sets them): the tiny expert counts and width
    "diffusion_gemma": {
        "text_config.num_experts": EXPERTS,
        "text_config.top_k_experts": EXPERTS_PER_TOKEN,
        "text_config.moe_intermediate_size": MOE_FFN,
    },
    # Aya Vision's tower (SigLIP 2 at 364 px, 14-px patches: 26 a side, pixel-shuffled by 2), as its processor's
    # img_size and CohereLabs/aya-vision-8b's config set it; the default 384 px is 27.4 patches a side
    "aya_vision": {"vision_config.image_size": 364},
    # Aria's tower as rhymes-ai/Aria's config sets it (980 px in 14-px patches: the 4,900 patches its projector's
    # patch_to_query_dict maps, as its processor's 980-px images make them); the default's 32-px patches make 900
    "aria": {"vision_config.image_size": 980, "vision_config.patch_size": 14},
    # Granite 4 Vision's deepstack map and Q-Former window have no defaults (a checkpoint sets them)
    "granite4_vision": {
        "deepstack_layer_map": [[-1, 0], [-2, 1]],
        "downsample_rate": "1/2",
        "spatial_target_layers": [0, 1, 0, 1],
        # its default CLIP tower (224 px, 32-px patches: 7 a side) cannot be windowed by the Q-Former's rate 1/2: a
        # 384-px tile as the published Granite Vision towers take (SigLIP's), in 16-px patches (24 a side, 12 halved)
        "vision_config.image_size": 384,
        "vision_config.patch_size": 16,
        # tiles of that 384-px side (its default pinpoints are 336-px multiples), the image processor's the same
        "image_grid_pinpoints": [[384, 768], [768, 384], [768, 768]],
        # a SigLIP tower as the published ones (vLLM's Granite 4 Vision builds no other; transformers' default is
        # CLIP's in some releases), every patch of it taken: it has no CLS patch to drop (the default strategy drops one)
        "vision_config.model_type": "siglip_vision_model",
        "vision_feature_select_strategy": "full",
    },
    # T5Gemma 2's encoder pools its SigLIP patches to mm_tokens_per_image (256: 16 a side), which its default 224-px
    # tower (14 a side) cannot be pooled to: 256 px in 16-px patches, pooled 1:1 (google/t5gemma-2's 896 px in 14-px
    # patches pools 64 a side by 4), its processor's size the same (`PROCESSOR_SETTINGS`)
    "t5gemma2": {"encoder.vision_config.image_size": 256},
}
# Processor classes of types processing_auto maps none to and whose module defines none (`_own_processor`): the class
# the published checkpoint's files name
PROCESSOR_CLASSES: dict[str, str] = {
    # zai-org/GLM-OCR's preprocessor_config.json names Glm46VProcessor (its image processor Glm46VImageProcessor)
    "glm_ocr": "Glm46VProcessor",
    # Cosmos 3's model is Qwen3-VL's (modular_cosmos3_omni); nvidia/Cosmos3-Nano's tooling loads
    # Qwen/Qwen3-VL-8B-Instruct's processor files beside it
    "cosmos3_omni": "Qwen3VLProcessor",
}
# Per-type settings of the processor (`processor`) and its image processor (`image_processor`) that a config override
# above needs beside it.
PROCESSOR_SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "smolvlm": {"processor": {"image_seq_len": 64}, "image_processor": {"max_image_size": {"longest_edge": 512}}},
    # BLIP-2's processor writes as many image tokens as its num_query_tokens, which Salesforce/blip2-*'s processor
    # configs set (the Q-Former's 32 queries, the config's own); unset, it writes none
    "blip-2": {"processor": {"num_query_tokens": 32}},
    # Aya Vision's processor counts a token per 28 px (its default): the tower's 14-px patches, pixel-shuffled by 2
    "aya_vision": {"processor": {"patch_size": 28}},
    # Florence-2's processor writes as many image tokens as its image processor's image_seq_length, which
    # microsoft/Florence-2's preprocessor_config sets (577: 768 px, DaViT's 32-px stride, 24 x 24 and a pooled one);
    # its default 224 px: 7 x 7 and the pooled one
    "florence2": {"image_processor": {"image_seq_length": 50}},
    # Granite 4 Vision's processor counts its tokens as the model makes them: the Q-Former's rate (the config's 1/2),
    # every SigLIP patch ("full", as the config's strategy: `OVERRIDES`), no CLS patch; tiles of the tower's 384 px at
    # the config's pinpoints
    "granite4_vision": {
        "processor": {
            "downsample_rate": "1/2",
            "vision_feature_select_strategy": "full",
            "num_additional_image_tokens": 0,
        },
        "image_processor": {
            "size": {"shortest_edge": 384},
            "image_grid_pinpoints": [[384, 768], [768, 384], [768, 768]],
        },
    },
    # ERNIE 4.5-VL's video processor draws each frame's time on it in a font its published checkpoints ship
    # (Roboto-Regular.ttf), which a tiny one has not: frames undrawn (images are not touched)
    "ernie4_5_vl_moe": {"video_processor": {"draw_on_frames": False}},
    # Step 3.7's image processor's patch_size is its local crops' side (504 px, stepfun-ai's), not the tower's 14-px
    # patches: a crop fitted to 14 px makes no image token of its own and one feature ("tokens: 845, features: 852")
    "step3p7": {"image_processor": {"patch_size": 504}},
    # T5Gemma 2's images at its tiny tower's 256 px (`OVERRIDES`; its processor's default 896 px is google/t5gemma-2's)
    "t5gemma2": {"image_processor": {"size": {"height": 256, "width": 256}}},
}
# Config token settings whose names are not the processor's (`image_patch_id` for Molmo 2's "<im_patch>"): the token
TOKEN_NAMES: dict[str, dict[str, str]] = {
    # Llama 4's features fill its "<|patch|>" tokens; its "<|image|>" is only the mark the processor expands
    "llama4": {
        "image_token_index": "<|patch|>",
        "boi_token_index": "<|image_start|>",
        "eoi_token_index": "<|image_end|>",
    },
    # T5Gemma 2's processor is Gemma 3's, whose image_token is the start-of-image mark it expands: the encoder's
    # features fill the "<|image|>" soft tokens between that mark and the end-of-image one
    "t5gemma2": {
        "image_token_index": "<|image|>",
        "boi_token_index": "<|boi|>",
        "eoi_token_index": "<|eoi|>",
    },
    "molmo2": {
        "image_patch_id": "<im_patch>",
        "image_col_id": "<im_col>",
        "image_start_token_id": "<im_start>",
        "low_res_image_start_token_id": "<low_res_im_start>",
        "image_end_token_id": "<im_end>",
        "frame_start_token_id": "<frame_start>",
        "frame_end_token_id": "<frame_end>",
        "image_low_res_id": "<im_low>",
    },
}

# Tokens a processor reads from its tokenizer by name with no default of its own (the factory names them `<|image|>`),
# as the published tokenizers spell them, where vLLM looks them up by that spelling: openbmb/MiniCPM-V-4.6's chat
# template writes `<|image_pad|>` (vLLM's MiniCPM-V 4.6 replaces that text, `get_placeholder_str`); baidu/Qianfan-OCR's
# InternVL tokens (vLLM's InternVL processing selects `<IMG_CONTEXT>` by its text)
PUBLISHED_TOKENS: dict[str, dict[str, str | None]] = {
    "minicpmv4_6": {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"},
    "minicpmv4_7": {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"},  # 4.6's processing
    "qianfan_ocr": {"context_image_token": "<IMG_CONTEXT>", "start_image_token": "<img>", "end_image_token": "</img>"},
    # google/gemma-3n-*'s, which its chat template writes (`_templates`)
    "gemma3n": {
        "boi_token": "<start_of_image>",
        "eoi_token": "<end_of_image>",
        "image_token": "<image_soft_token>",
        "boa_token": "<start_of_audio>",
        "eoa_token": "<end_of_audio>",
        "audio_token": "<audio_soft_token>",
    },
    # google/shieldgemma-2-4b-it's (Gemma 3's), which its chat template writes (`_templates`)
    "shieldgemma2": {
        "boi_token": "<start_of_image>",
        "eoi_token": "<end_of_image>",
        "image_token": "<image_soft_token>",
    },
    # Salesforce/blip2-*'s tokenizers hold none: Blip2Processor adds its own `<image>` (an AddedToken it reads back)
    "blip-2": {"image_token": None},
}

# Token settings a published config has and the type's default lacks, though its model reads them: the token
ADDED_TOKENS: dict[str, dict[str, str]] = {
    # the Omni thinkers' M-RoPE finds an image by the vision-start token before it (get_rope_index reads
    # config.vision_start_token_id), which the default thinker config lacks and a published thinker_config sets
    # (Qwen2.5-Omni's 151652: its processor's "<|vision_bos|>")
    "qwen2_5_omni_thinker": {"vision_start_token_id": "<|vision_bos|>", "vision_end_token_id": "<|vision_eos|>"},
    "qwen3_omni_moe_thinker": {"vision_start_token_id": "<|vision_bos|>", "vision_end_token_id": "<|vision_eos|>"},
}


# Types whose published checkpoints lack what the tiny one is given to run: the harness' refusal of them is the table's
# line (`published_refusal`), the tiny run with it checked beside
PUBLISHED_WITHOUT_TEMPLATE = {
    # google/paligemma-3b-* and paligemma2-*: their files hold no chat template (docs/backends.md, PaliGemma-3B)
    "paligemma",
}


def _named_tokens(model_type: str) -> dict[str, str]:
    return {**TOKEN_NAMES.get(model_type, {}), **ADDED_TOKENS.get(model_type, {})}


class CannotBuild(Exception):
    """Why a type's tiny checkpoint cannot be built or cannot run here (one line)."""


def _reason(err: BaseException) -> str:
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first[:300]}"


def image_text_types() -> list[str]:
    """Every model_type transformers maps to an image-text-to-text model."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)


def _module_dir(model_type: str) -> Path:
    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    return Path(transformers.__file__).parent / "models" / model_type_to_module_name(model_type)


def dated(model_type: str) -> str | None:
    """The copyright year of the type's modeling file: which types are recent (2025, 2026)."""
    for path in sorted(_module_dir(model_type).glob("modeling_*.py")):
        found = re.search(r"Copyright\D{0,20}(\d{4})", path.read_text(encoding="utf-8")[:2000])
        if found:
            return found.group(1)
    return None


# ---- the processor -------------------------------------------------------------------------------------------------


def _class(name: str | None) -> Any:
    import transformers

    return getattr(transformers, name) if name else None


def _mapped(mapping: dict[str, Any], model_type: str, processor_name: str) -> Any:
    """The class `mapping` holds for the type (the torchvision backend where there is a choice: the one AutoProcessor
    loads), else for another type of the same processor class (glm4v_moe's is glm4v's)."""
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    names = mapping.get(model_type)
    if names is None:
        kin = [k for k, v in PROCESSOR_MAPPING_NAMES.items() if v == processor_name and k in mapping]
        names = mapping[kin[0]] if kin else None
    if isinstance(names, dict):
        names = names.get("torchvision") or names.get("pil") or next(iter(names.values()))
    elif isinstance(names, tuple | list):
        names = next((n for n in names if n), None)
    return _class(names)


def _sources(processor_class: type) -> str:
    """The source of the processor's own modules (its class and the transformers classes it derives from)."""
    texts = []
    for klass in processor_class.__mro__:
        module = inspect.getmodule(klass)
        if module and module.__name__.startswith("transformers.models."):
            texts.append(inspect.getsource(module))
    return "\n".join(texts)


_TOKEN_LITERAL = re.compile(r"""["'](<\|?[\w\-/]+\|?>|\[[A-Z_]+\])["']""")


def _read_tokens(processor_class: type) -> tuple[dict[str, str], set[str]]:
    """What the processor reads of a tokenizer: the named tokens (`tokenizer.image_token`, `getattr(tokenizer,
    "boi_token", "<default>")`), each with the default its code or constructor gives, and every special-token literal
    its module holds (the markers it writes into the text)."""
    source = _sources(processor_class)
    defaults = {
        name: p.default
        for name, p in inspect.signature(processor_class.__init__).parameters.items()
        if isinstance(p.default, str) and name.endswith("token")
    }
    found: dict[str, str] = {}
    for name, default in re.findall(
        r"getattr\(\s*(?:self\.)?tokenizer,\s*[\"'](\w+)[\"'](?:,\s*[\"']([^\"']*)[\"'])?", source
    ):
        found.setdefault(name, default)
    for name in re.findall(r"tokenizer\.(\w+?_token)(?:_id)?\b", source):
        found.setdefault(name, "")
    named: dict[str, str] = {}
    for name, default in found.items():
        if not name.endswith("token") or name.split("_token")[0] in _NOT_TOKENS or name.startswith("_"):
            continue
        # the literal the processor falls back on: `self.image_token = "<|image_pad|>" if not hasattr(...) else ...`
        assigned = re.search(rf"self\.{name}\s*=\s*([^\n]*\(\n[^\n]*\n[^\n]*|[^\n]*)", source)
        literal = _TOKEN_LITERAL.search(assigned.group(1)) if assigned else None
        named[name] = default or (literal.group(1) if literal else "") or defaults.get(name) or f"<|{name[:-6]}|>"
    constants = re.findall(r"^\s+[A-Z_]*TOKEN\s*=\s*[\"']([^\"']+)[\"']", source, re.MULTILINE)  # MiniMax's
    literals = set(_TOKEN_LITERAL.findall(source)) | set(defaults.values()) | set(constants)
    return named, {t for t in literals if t}


def _is_token_setting(key: str) -> bool:
    if re.search(r"_token_(id|index|ids)$", key):
        return key.split("_token")[0] not in _NOT_TOKENS
    # `image_patch_id`, `audio_id`: an id of a modality's mark, not of a layer
    return bool(re.search(r"(image|video|audio|patch|frame|vision)\w*_(id|index)$", key)) and "layer" not in key


def _config_tokens(config_dict: dict[str, Any]) -> dict[tuple[str, ...], Any]:
    """Every token-id setting of the config and its sub-configs (`*_token_id`, `*_token_index`, `image_patch_id`
    ...), by path."""
    found: dict[tuple[str, ...], Any] = {}

    def walk(d: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in d.items():
            if isinstance(value, dict) and "model_type" in value:
                walk(value, (*path, key))
            elif _is_token_setting(key) and (value is None or isinstance(value, int | list)):
                found[(*path, key)] = value

    walk(config_dict, ())
    return found


def _token_base(key: str) -> str:
    return re.sub(r"_(id|index|ids)$", "", key)


def _make_tokenizer(named: dict[str, str], literals: set[str], fresh: set[str]) -> Any:
    from tests.support.family_processors import tokenizer

    specials = tuple(sorted(literals | fresh | {"<|im_start|>", "<|im_end|>"}))
    return tokenizer(specials, bos="<s>", **named)


_GEOMETRY = {  # the config's patching, by the names processors and image processors give it
    "patch_size": ("patch_size", "encoder_patch_size"),
    "spatial_merge_size": ("spatial_merge_size", "merge_size"),
    "merge_size": ("merge_size", "spatial_merge_size"),
    "temporal_patch_size": ("temporal_patch_size",),
}


def _geometry(config_dict: dict[str, Any]) -> dict[str, Any]:
    """The config's patching (its vision tower's first, then its own): what the processor must split images by."""
    found: dict[str, Any] = {}
    vision = [v for k, v in config_dict.items() if isinstance(v, dict) and "vision" in k and "model_type" in v]
    for source in (*vision, config_dict):
        for key, names in _GEOMETRY.items():
            if isinstance(source.get(key), int):
                for name in names:
                    found.setdefault(name, source[key])
        side = source.get("image_size")
        if isinstance(side, list) and len(side) == 2 and side[0] == side[1]:
            side = side[0]
        if isinstance(side, int) and side > 0:
            found.setdefault("image_size", side)
    return found


def _fitted(part: Any, geometry: dict[str, Any], own: dict[str, Any] | None = None) -> Any:
    """`part` (an image or video processor) rebuilt with the config's patching where it holds a setting of that name."""
    held = part.to_dict()
    changes: dict[str, Any] = {}
    side = geometry.get("image_size")
    # a fixed-size tower (CLIP's, SigLIP's): the processor's crop (or resize) at the tower's image size
    for name in ("crop_size", "size"):
        mine = held.get(name)
        if (
            side
            and isinstance(mine, dict)
            and set(mine) == {"height", "width"}
            and mine != {"height": side, "width": side}
        ):
            changes[name] = {"height": side, "width": side}
            break
        if side and isinstance(mine, dict) and set(mine) == {"shortest_edge"} and held.get("crop_size"):
            changes[name] = {"shortest_edge": side}
    for name, value in geometry.items():
        if name == "image_size" or name in (own or {}):  # a setting of the same name meaning another thing
            continue
        if name in held and held[name] is not None and held[name] != value:
            mine = held[name]
            changes[name] = {k: value for k in mine} if isinstance(mine, dict) else value
    return type(part)(**{**(own or {}), **changes}) if changes else part  # its own settings (`PROCESSOR_SETTINGS`) kept


def _own_processor(model_type: str) -> str | None:
    """The processor class the type's own transformers module defines, where processing_auto maps none to the type
    (Qwen2.5-Omni's thinker: its module's Qwen2_5OmniProcessor, which a checkpoint of the whole model names)."""
    import importlib

    from transformers.models.auto.configuration_auto import model_type_to_module_name
    from transformers.processing_utils import ProcessorMixin

    folder = model_type_to_module_name(model_type)
    for path in sorted(_module_dir(model_type).glob("processing_*.py")):
        module = importlib.import_module(f"transformers.models.{folder}.{path.stem}")
        found = [
            name
            for name, klass in vars(module).items()
            if inspect.isclass(klass) and issubclass(klass, ProcessorMixin) and klass.__module__ == module.__name__
        ]
        if found:
            return found[0]
    return None


def _audio_type(model_type: str) -> str | None:
    """The model_type of the type's audio encoder, as its config class declares it (Nemotron-H Omni's Parakeet
    encoder, which its default config leaves off)."""
    from transformers import AutoConfig

    specs = getattr(type(AutoConfig.for_model(model_type)), "sub_configs_defaults", None) or {}
    declared = next((getattr(v, "model_type", None) for k, v in specs.items() if "audio" in k), None)
    if declared:
        return declared
    keys = [k for k in getattr(type(AutoConfig.for_model(model_type)), "sub_configs", {}) if "audio" in k]
    try:  # else the one the config makes of an empty setting (transformers releases without the declaration)
        made = [getattr(AutoConfig.for_model(model_type, **{key: {}}), key, None) for key in keys]
    except Exception:
        return None
    return next((m.model_type for m in made if m is not None), None)


def _processor(model_type: str, config_dict: dict[str, Any]) -> Any:
    """The type's real processor class around its default image processor (patching as the config's), its video
    processor / feature extractor where it takes one, and a tiny tokenizer with every token it reads (and a fresh one
    for each config token id no processor token names, so no id is out of the vocabulary or shared)."""
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    name = PROCESSOR_MAPPING_NAMES.get(model_type) or PROCESSOR_CLASSES.get(model_type) or _own_processor(model_type)
    if not name:
        raise CannotBuild("no processor class is mapped (processing_auto has no entry for it)")
    try:
        processor_class = _class(name)
        parts = {
            "image_processor": _mapped(IMAGE_PROCESSOR_MAPPING_NAMES, model_type, name),
            "video_processor": _mapped(VIDEO_PROCESSOR_MAPPING_NAMES, model_type, name),
            "feature_extractor": _mapped(FEATURE_EXTRACTOR_MAPPING_NAMES, model_type, name),
        }
        if parts["feature_extractor"] is None:  # none mapped to the type: its audio encoder's (Nemotron-H Omni's)
            parts["feature_extractor"] = _class(FEATURE_EXTRACTOR_MAPPING_NAMES.get(_audio_type(model_type) or ""))
    except Exception as err:  # an import that fails here (a missing optional backend)
        raise CannotBuild(f"its processor does not import: {_reason(err)}") from err
    named, literals = _read_tokens(processor_class)
    named.update(PUBLISHED_TOKENS.get(model_type, {}))
    named = {name: token for name, token in named.items() if token is not None}
    fresh = {f"<|{_token_base(path[-1])}|>" for path in _config_tokens(config_dict)}
    text = _make_tokenizer(named, literals, fresh)
    geometry = _geometry(config_dict)
    kwargs: dict[str, Any] = {}
    for attribute in processor_class.get_attributes():
        if "tokenizer" in attribute:
            kwargs[attribute] = text
            continue
        kind = next((k for k in parts if k in attribute), "feature_extractor" if "audio" in attribute else None)
        made = parts.get(kind) if kind else None
        if made is None:
            raise CannotBuild(f"its processor needs a {attribute}, and transformers maps none to {model_type}")
        own = PROCESSOR_SETTINGS.get(model_type, {}).get(kind or "", {})
        try:
            kwargs[attribute] = made() if kind == "feature_extractor" else _fitted(made(**own), geometry, own)
        except Exception as err:
            raise CannotBuild(f"its {made.__name__} cannot be built at its defaults: {_reason(err)}") from err
    accepted = inspect.signature(processor_class.__init__).parameters
    kwargs.update({k: v for k, v in geometry.items() if k in accepted and k not in kwargs})
    side, patch = geometry.get("image_size"), geometry.get("patch_size")
    tokens = accepted.get("num_image_tokens")
    if tokens is not None and isinstance(tokens.default, int) and side and patch:
        # a fixed count of image tokens (DeepSeek-VL's 576: 384-px SigLIP, 16-px patches): the tower's patches
        kwargs["num_image_tokens"] = (side // patch) ** 2
    kwargs.update(PROCESSOR_SETTINGS.get(model_type, {}).get("processor", {}))
    try:
        return processor_class(**kwargs)
    except Exception as err:
        raise CannotBuild(f"{name} refuses the tiny parts: {_reason(err)}") from err


def _generic_template(marker: str) -> str:
    """Role markers around each turn, image parts as `marker` (what the processor expands), text parts verbatim."""
    return (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
        "{% if part['type'] == 'image' %}" + marker + "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
        "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


def _image(width: int = 64, height: int = 48) -> Any:
    from PIL import Image

    return Image.new("RGB", (width, height), (90, 30, 200))


def _marker(processor: Any) -> str:
    """The text the processor expands into an image's tokens: the first of its marks that, for one image, runs and
    writes more ids than the text alone has."""
    image = getattr(processor, "image_token", None)
    candidates = [image] + [getattr(processor, a, None) for a in ("boi_token", "fake_image_token")]
    candidates.append(getattr(processor.tokenizer, "image_token", None))
    for start, end in (("image_start_token", "image_end_token"), ("vision_start_token", "vision_end_token")):
        # a processor that wants the image token inside its brackets (HunYuan-VL's)
        ends = [getattr(holder, name, None) for name in (start, end) for holder in (processor, processor.tokenizer)]
        opening, closing = next((e for e in ends[:2] if e), None), next((e for e in ends[2:] if e), None)
        if isinstance(image, str) and isinstance(opening, str) and isinstance(closing, str):
            candidates.append(opening + image + closing)
    candidates.append("<image>")
    errors = []
    for marker in dict.fromkeys(c for c in candidates if isinstance(c, str)):
        text = f"a {marker} b"
        try:
            ids = processor(text=[text], images=[_image()], return_tensors="pt")["input_ids"]
        except Exception as err:
            errors.append(f"{marker}: {_reason(err)}")
            continue
        if ids.shape[-1] > len(processor.tokenizer(text)["input_ids"]) + 1:
            other = processor(text=[f"a {marker} b c d"], images=[_image()], return_tensors="pt")["input_ids"]
            if other.shape == ids.shape and bool((other == ids).all()):
                name = type(processor).__name__
                raise CannotBuild(
                    f"its processor takes no prompt: transformers' {name} writes the same ids whatever the text"
                )
            return "" if _places_images_itself(processor, text, ids.shape[-1]) else marker
    raise CannotBuild(f"its processor expands no image mark for one image ({'; '.join(errors)[:400]})")


def _places_images_itself(processor: Any, text: str, written: int) -> bool:
    """Whether the processor writes an image's tokens before the text, whether it has a mark or none, and the mark
    left as text is one more image token (BLIP-2's query tokens, of its `<image>`): the text without the mark starts
    with image tokens and gets as many ids fewer as the mark's own."""
    mark = text.split(" ")[1]
    bare = text.replace(f" {mark}", "")
    token = _token_id(processor, "image_token", processor.tokenizer)
    if (
        mark == processor.tokenizer.bos_token
        or token not in processor.tokenizer(mark, add_special_tokens=False)["input_ids"]
    ):
        return False  # Kosmos-2.5's "mark" is its start of text
    try:
        ids = processor(text=[bare], images=[_image()], return_tensors="pt")["input_ids"]
    except Exception:
        return False
    own = len(processor.tokenizer(text)["input_ids"]) - len(processor.tokenizer(bare)["input_ids"])
    return int(ids[0, 0]) == token and written - ids.shape[-1] == own


def _bracketed(marker: str, processor: Any, defaults: dict[str, Any], model_type: str = "") -> str:
    """The mark between the start and end tokens the config names, as published templates write it (Qwen's
    `<|vision_start|><|image_pad|><|vision_end|>`, PaddleOCR-VL's `<|IMAGE_START|>...<|IMAGE_END|>`): a model that
    finds its images by runs of image tokens takes two bare marks side by side for one image."""
    tokenizer, vocab = processor.tokenizer, processor.tokenizer.get_vocab()
    names = {path[-1] for path in _config_tokens(defaults)}
    for start, end in (("vision_start_token", "vision_end_token"), ("image_start_token", "image_end_token")):
        if {f"{start}_id", f"{end}_id"} <= names:
            own = _named_tokens(model_type)
            ids = [
                vocab.get(own[f"{base}_id"])
                if f"{base}_id" in own
                else _token_id(processor, base, tokenizer) or vocab.get(f"<|{base}|>")
                for base in (start, end)
            ]
            opening, closing = (tokenizer.convert_ids_to_tokens(i) if i is not None else None for i in ids)
            if opening and closing and opening not in marker:
                return opening + marker + closing
    return marker


# ---- the config -----------------------------------------------------------------------------------------------------


def _picked_layers(d: dict[str, Any], old: int) -> list[int]:
    """The layers kept: the first of each distinct layer type (a hybrid keeps one of each kind), else the first
    `LAYERS`."""
    for key in ("layer_types", "layers_block_type", "block_types"):
        kinds = d.get(key)
        if isinstance(kinds, list) and len(kinds) == old and kinds:
            first = {}
            for i, kind in enumerate(kinds):
                first.setdefault(repr(kind), i)
            picked = sorted(first.values())
            while len(picked) < min(LAYERS, old):
                picked = sorted({*picked, next(i for i in range(old) if i not in picked)})
            return picked
    return list(range(min(LAYERS, old)))


def _remap(values: list[int], picked: list[int], keep_length: bool) -> list[int]:
    """Layer indices into the kept layers: a kept one to its place, a dropped one by rank (the deepest to the last
    layer), a negative one clamped; duplicates dropped unless the list's length counts (features concatenated)."""
    n = len(picked)
    dropped = sorted({v for v in values if v >= 0 and v not in picked}, reverse=True)
    out = [
        max(v, -n) if v < 0 else picked.index(v) if v in picked else max(0, n - 1 - dropped.index(v)) for v in values
    ]
    return out if keep_length else list(dict.fromkeys(out))


def _rope_sections(d: dict[str, Any], head_dim: int) -> None:
    """mrope sections sum to half the rotated dims: scaled to the tiny head, in proportion."""
    for rope in (d.get("rope_parameters"), d.get("rope_scaling")):
        if not isinstance(rope, dict):
            continue
        for key in ("mrope_section", "mrope_sections"):
            sections = rope.get(key)
            if isinstance(sections, list) and sections and all(isinstance(s, int) for s in sections):
                factor = rope.get("partial_rotary_factor", d.get("partial_rotary_factor", 1.0)) or 1.0
                rope[key] = scaled_sections(sections, int(head_dim * factor) // 2)


def scaled_sections(sections: list[int], target: int) -> list[int]:
    """mrope `sections` in proportion, summing to `target` (half the rotated dims of a head), none below one."""
    scaled = [max(1, round(s * target / sum(sections))) for s in sections]
    scaled[0] += target - sum(scaled)
    return scaled


def default_sections(model_type: str) -> list[int] | None:
    """The mrope sections of the type's default config, else those its modeling file falls back on: the proportions
    a published checkpoint's sections have."""
    from transformers import AutoConfig

    defaults = AutoConfig.for_model(model_type).to_dict()
    for path in _subconfig_paths(defaults):
        rope = _get(defaults, path).get("rope_parameters") or {}
        if isinstance(rope.get("mrope_section"), list) and _text_like(path, _get(defaults, path)):
            return list(rope["mrope_section"])
    return _modeling_mrope(model_type, defaults)


def _is_index_list(key: str, value: list[Any]) -> bool:
    ints = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return bool(_INDEXED.search(key)) and len(ints) == len(value) and len(set(ints)) == len(ints)


def _shrink(d: dict[str, Any], vocab: int, is_text: bool) -> None:
    """Shrink one config dict in place (its sub-configs are walked by the caller)."""
    old_layers = next((d[k] for k in _LAYERS if isinstance(d.get(k), int) and d[k] > 0), None)
    old_heads = next((d[k] for k in _HEADS if isinstance(d.get(k), int)), None)
    picked = _picked_layers(d, old_layers) if old_layers else []
    if isinstance(d.get("depths"), list) and len(d["depths"]) == old_layers:
        picked = list(range(old_layers))  # its "layers" are a pyramid's stages, each with its own list entries
    if d.get("head_dim", 0) is None and old_heads:
        d["head_dim"] = HEAD_DIM  # a model that reads head_dim without deriving it (HunYuan-VL's)
    for key, value in list(d.items()):
        if key == "per_layer_config" and isinstance(value, dict) and old_layers:
            # settings of single layers, by index (Gemma 4's wider global heads): those of the kept layers, shrunk
            kept = {str(picked.index(int(i))): dict(v) for i, v in value.items() if int(i) in picked}
            for settings in kept.values():
                _shrink(settings, vocab, is_text)
            d[key] = kept
            continue
        if isinstance(value, dict) or value is None or isinstance(value, bool):
            continue
        if key == "max_position_embeddings" and is_text and isinstance(value, int) and value < CONTEXT:
            d[key] = CONTEXT  # room for a few AnyRes images (LLaVA-NeXT's 1,272 tokens for a 48 x 40 one)
        elif key in _WIDTHS and isinstance(value, int):
            d[key] = WIDTH
        elif key in _WIDTHS and isinstance(value, list) and all(isinstance(v, int) for v in value):
            d[key] = [WIDTH] * len(value)  # a pyramid's stage widths (DaViT's)
        elif key in _FFNS and isinstance(value, int):
            d[key] = FFN
        elif key in _FFNS and isinstance(value, list) and all(isinstance(v, int) for v in value):
            d[key] = [FFN] * (len(picked) if len(value) == old_layers else len(value))  # per layer (Gemma 3n's)
        elif key in _MOE_FFNS and isinstance(value, int):
            d[key] = MOE_FFN
        elif key.endswith("intermediate_size") and isinstance(value, int):
            d[key] = FFN  # a projector's or aligner's own (Cohere 2 Vision's alignment_intermediate_size)
        elif key in _HEADS and isinstance(value, int):
            d[key] = HEADS
        elif key in _HEADS and isinstance(value, list):
            d[key] = [HEADS] * len(value)
        elif key in _KV_HEADS and isinstance(value, int):
            d[key] = KV_HEADS if old_heads is None or value < old_heads else HEADS
        elif key in _HEAD_DIMS and isinstance(value, int):
            d[key] = HEAD_DIM
        elif key in _LAYERS and isinstance(value, int) and value > 0:
            d[key] = len(picked) if old_layers == value else min(value, LAYERS)
        elif key in {"depths"} and isinstance(value, list):
            d[key] = [1] * len(value)
        elif key in _EXPERTS and isinstance(value, int) and value > 1:
            d[key] = EXPERTS
        elif key in _EXPERTS and isinstance(value, list):
            d[key] = [EXPERTS] * len(value)
        elif key in _EXPERTS_PER_TOKEN and isinstance(value, int):
            d[key] = min(value, EXPERTS_PER_TOKEN)
        elif key in {"n_shared_experts", "num_shared_experts"} and isinstance(value, int):
            d[key] = min(value, 1)
        elif key in {"n_group", "topk_group"} and isinstance(value, int):
            d[key] = 1
        elif key == "first_k_dense_replace" and isinstance(value, int):
            d[key] = min(value, 1)
        elif key in _MLA and isinstance(value, int):
            d[key] = _MLA[key] if value else 0  # a NoPE layer's 0 rope dims stay 0 (GLM-5's DSA layers)
        elif key == "q_lora_rank" and isinstance(value, int):
            d[key] = 32
        elif key in _LINEAR and isinstance(value, int):
            d[key] = _LINEAR[key]
        elif key == "base_channels" and isinstance(value, int):
            d[key] = 32  # a VQ autoencoder's first conv width (Janus'), its GroupNorm's 32 groups
        elif key == "latent_channels" and isinstance(value, int):
            d[key] = min(value, WIDTH)
        elif key == "num_embeddings" and "latent_channels" in d and isinstance(value, int):
            d[key] = min(value, 512)  # a VQ autoencoder's codebook
        elif key == "num_res_blocks" and isinstance(value, int):
            d[key] = 1
        elif key == "channel_multiplier" and isinstance(value, list):
            d[key] = [min(v, 2) for v in value]  # as many stages (its downsampling), narrower
        elif key == "hidden_size_per_layer_input" and isinstance(value, int):
            d[key] = HEAD_DIM
        elif key in {"vocab_size", "vocab_size_per_layer_input"} and is_text and isinstance(value, int):
            d[key] = vocab
        elif key == "vocab_size" and isinstance(value, int) and value > WIDTH:
            d[key] = WIDTH  # a tower's own vocabulary (Ovis 2's visual words, an unused one)
        elif old_layers and isinstance(value, list) and len(value) == old_layers and not _is_index_list(key, value):
            d[key] = [value[i] for i in picked]  # per-layer settings (layer_types, no_rope_layers, ...)
        elif _INDEXED.search(key) and "token" not in key and not key.startswith("num_"):
            keep = "feature" in key
            if isinstance(value, int) and not isinstance(value, bool):
                d[key] = _remap([value], picked or list(range(LAYERS)), keep)[0]
            elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
                d[key] = _remap(value, picked or list(range(LAYERS)), keep)
    kinds = d.get("layer_types") or []
    if any("sliding" in str(k) for k in kinds) and d.get("sliding_window", 0) is None:
        d["sliding_window"] = 64  # a kept sliding layer needs a window the defaults leave unset
    if "qk_rope_head_dim" in d and "head_dim" in d:
        d["head_dim"] = _MLA["qk_rope_head_dim"]  # MLA's rotary part is its head_dim (DeepSeek-V3's config)
    _rope_sections(d, d.get("head_dim") or HEAD_DIM)


def _text_like(path: tuple[str, ...], d: dict[str, Any]) -> bool:
    names = " ".join((*path, str(d.get("model_type", ""))))
    return not path or bool(re.search(r"text|language|llm|decoder|lm_config|thinker", names))


def _walk_shrink(d: dict[str, Any], vocab: int, path: tuple[str, ...] = ()) -> None:
    _shrink(d, vocab, _text_like(path, d))
    for key, value in d.items():
        if isinstance(value, dict) and "model_type" in value:
            _walk_shrink(value, vocab, (*path, key))


def _set(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        d = d[key]
    d[path[-1]] = value


def _token_id(processor: Any, base: str, tokenizer: Any) -> int | None:
    """The id of the processor's token a config setting names (`image_token_id` -> the processor's image token)."""
    aliases = {
        "boi_token": ("boi_token", "start_of_image_token", "image_start_token", "start_image_token"),
        "eoi_token": ("eoi_token", "end_of_image_token", "image_end_token", "end_image_token"),
        "image_start_token": ("image_start_token", "start_of_image_token", "boi_token", "start_image_token"),
        "image_end_token": ("image_end_token", "end_of_image_token", "eoi_token", "end_image_token"),
    }
    for name in aliases.get(base, (base,)):
        for holder in (processor, tokenizer):
            value = getattr(holder, f"{name}_id", None)
            if isinstance(value, int):
                return value
            value = getattr(holder, name, None)
            value = getattr(value, "content", value)  # an AddedToken the processor adds itself (BLIP-2's `<image>`)
            if isinstance(value, str) and value in tokenizer.get_vocab():
                return tokenizer.convert_tokens_to_ids(value)
    return None


def _config(model_type: str, processor: Any, defaults: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    tokenizer = processor.tokenizer
    d = copy.deepcopy(defaults)
    mrope = _modeling_mrope(model_type, d)
    for path in _subconfig_paths(d) if mrope else []:
        rope = _get(d, path).get("rope_parameters")
        if _text_like(path, _get(d, path)) and isinstance(rope, dict) and "rope_type" in rope:
            rope.setdefault("mrope_section", mrope)  # the model's own default, which the shrink must scale
    _walk_shrink(d, len(tokenizer))
    _merged_widths(defaults, d)
    vocab = tokenizer.get_vocab()
    for path, value in _config_tokens(d).items():
        base = _token_base(path[-1])
        if isinstance(value, list):
            continue
        named = _named_tokens(model_type).get(path[-1])
        found = vocab.get(named) if named else _token_id(processor, base, tokenizer)
        _set(d, path, found if found is not None else vocab[f"<|{base}|>"])
    for path in _subconfig_paths(d):
        sub = _get(d, path)
        if _text_like(path, sub):
            for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
                if key in sub:
                    sub[key] = getattr(tokenizer, key)
    for key, value in OVERRIDES.get(model_type, {}).items():
        _set(d, tuple(key.split(".")), copy.deepcopy(value))  # a copy: a model built may change it (timm's blocks)
    d.pop("model_type", None)
    _rederived(model_type, d)
    return AutoConfig.for_model(model_type, **d)


def _rederived(model_type: str, d: dict[str, Any]) -> None:
    """A top-level setting the config class derives from others rather than declares (MiniMax M3-VL's
    `merged_hidden_size`, the text width x merge_size**2, which its default holds at full size and a value given
    overrides) derived again from the shrunk ones."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    klass = CONFIG_MAPPING[model_type]
    declared = {name for base in klass.__mro__ for name in getattr(base, "__annotations__", {})}
    derived = [
        k
        for k, v in d.items()
        if k not in declared and type(v) is int and not _is_token_setting(k) and not k.endswith("token_id")
    ]
    if derived:
        again = klass(**{k: v for k, v in d.items() if k not in derived})
        d.update({k: getattr(again, k) for k in derived if isinstance(getattr(again, k, None), int)})


def _merged_widths(defaults: dict[str, Any], d: dict[str, Any]) -> None:
    """A width that is a vision tower's merged patches (its hidden size x merge_size**2: Muse Spark's
    out_hidden_size, 1536 x 4) is the tiny tower's merged patches."""
    for path in _subconfig_paths(defaults)[1:]:
        tower = _get(defaults, path)
        merge = tower.get("merge_size") or tower.get("spatial_merge_size")
        hidden = tower.get("hidden_size")
        if "vision" not in path[-1] or not isinstance(merge, int) or not isinstance(hidden, int) or merge < 2:
            continue
        for holder in (path[:-1], path):
            for key, value in _get(defaults, holder).items():
                if key in _WIDTHS and value == hidden * merge**2:
                    _get(d, holder)[key] = WIDTH * merge**2


def _modeling_mrope(model_type: str, d: dict[str, Any]) -> list[int] | None:
    """The mrope sections a modeling file (the type's or its text model's) falls back on where the config gives none
    (PaddleOCR-VL's [16, 24, 24], GLM-4.6V's GLM-4.1V text model's [8, 12, 12])."""
    types = [model_type] + [_get(d, p).get("model_type", "") for p in _subconfig_paths(d)[1:]]
    folders = dict.fromkeys(_module_dir(t.removesuffix("_text")) for t in types if t)
    for path in (f for folder in folders for f in folder.glob("modeling_*.py")):
        found = re.search(r"[\"']mrope_section[\"'],\s*\[([\d,\s]+)\]", path.read_text(encoding="utf-8"))
        if found:
            return [int(v) for v in found.group(1).split(",") if v.strip()]
    return None


def _subconfig_paths(d: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for key, value in d.items():
        if isinstance(value, dict) and "model_type" in value:
            found += _subconfig_paths(value, (*path, key))
    return found


def _get(d: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        d = d[key]
    return d


# ---- the checkpoint -------------------------------------------------------------------------------------------------


def _smoke(model: Any, processor: Any) -> None:
    """One image and a generated token, as a run sends them: transformers raises where image tokens != features."""
    import torch

    chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}]
    text = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    # the token types a model reads asked for, as the hf backend asks (Cosmos 3 Edge's multimodal RoPE)
    asked = {"return_mm_token_type_ids": True} if "mm_token_type_ids" in signature(model.forward).parameters else {}
    inputs = processor(text=text, images=[_image()], return_tensors="pt", **asked).to(model.dtype)  # Llama 4's bf16
    with torch.inference_mode():
        model.generate(**inputs, max_new_tokens=1, do_sample=False)


# The repo's hand-made makers (`forward_families`' rows, by model_type): where the generic path fails for a type
# they cover (Gemma 3's tokens, which its processor reads from no literal), they build it.
_HAND_MADE = {
    "llava": "llava-1.5",
    "llava_next": "llava-next",
    "llava_onevision": "llava-onevision",
    "idefics2": "idefics2",
    "idefics3": "idefics3",
    "gemma3": "gemma3",
    "paligemma": "paligemma",
    "qwen2_vl": "qwen2-vl",
    "qwen2_5_vl": "qwen2.5-vl",
    "qwen3_vl": "qwen3-vl",
    "qwen3_vl_moe": "qwen3-vl-moe",
    "internvl": "internvl3",
    "ovis2": "ovis2",
    "glm4v": "glm-4.1v",
    "glm4v_moe": "glm-4.5v",
    "qwen3_5": "qwen3.5",
    "qwen3_5_moe": "qwen3.5-moe",
    "gemma4": "gemma4",
}


def _generic(model_type: str) -> tuple[Any, Any]:
    """The processor and the shrunk config, both made from the type's defaults."""
    from transformers import AutoConfig

    try:
        defaults = AutoConfig.for_model(model_type).to_dict()
    except Exception as err:
        raise CannotBuild(f"its default config does not build: {_reason(err)}") from err
    for key, sub in getattr(type(AutoConfig.for_model(model_type)), "sub_configs", {}).items():
        if defaults.get(key) is not None or "vision" not in key:
            continue
        # a default without a vision tower (Gemma 4's) gets its default one: its class's, or (a tower of any class:
        # DiffusionGemma's) the one the config makes of an empty setting (Gemma 4's tower)
        made = sub() if sub.__name__ != "AutoConfig" else getattr(AutoConfig.for_model(model_type, **{key: {}}), key)
        defaults[key] = made.to_dict() if hasattr(made, "to_dict") else None
    for key, own in _own_sub_configs(model_type).items():
        if isinstance(defaults.get(key), dict) and defaults[key].get("model_type") != own.model_type:
            defaults[key] = own().to_dict()  # a default of another class than its model reads (Granite 4 Vision's)
    published = copy.deepcopy(defaults)  # the processor is fitted to the tower as a published checkpoint sets it
    for key, value in OVERRIDES.get(model_type, {}).items():
        _set(published, tuple(key.split(".")), value)
    processor = _processor(model_type, published)
    for key in ADDED_TOKENS.get(model_type, {}):
        defaults.setdefault(key, None)  # set to the token's id with the others (`_config`)
    if model_type in _templates():
        processor.chat_template = _templates()[model_type]()  # a processor that renders its own prompts reads it
    marker = _bracketed(_marker(processor), processor, defaults, model_type)
    processor.chat_template = _templates()[model_type]() if model_type in _templates() else _generic_template(marker)
    processor.tokenizer.chat_template = processor.chat_template  # a processor that saves none of its own (IDEFICS')
    try:
        return processor, _config(model_type, processor, defaults)
    except Exception as err:
        raise CannotBuild(f"its shrunk config does not build: {_reason(err)}") from err


def _own_sub_configs(model_type: str) -> dict[str, Any]:
    """The sub-config classes the type's own configuration module defines, by the key they stand under
    (`base_config_key`): Granite 4 Vision's text model reads its Granite4VisionTextConfig's fields
    (`attention_multiplier`), while its composite config's default text config is Llama's."""
    import importlib

    from transformers import PreTrainedConfig
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    folder = model_type_to_module_name(model_type)
    found: dict[str, Any] = {}
    for path in sorted(_module_dir(model_type).glob("configuration_*.py")):
        module = importlib.import_module(f"transformers.models.{folder}.{path.stem}")
        for klass in vars(module).values():
            if inspect.isclass(klass) and issubclass(klass, PreTrainedConfig) and klass.__module__ == module.__name__:
                if getattr(klass, "base_config_key", ""):
                    found.setdefault(klass.base_config_key, klass)
    return found


def _hand_made(model_type: str) -> tuple[Any, Any]:
    """The hand-made maker's processor (its real class, with its video processor where the maker left it out:
    `AutoProcessor` loads only the real class) and config."""
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    from tests.support.forward_families import BY_NAME

    family = BY_NAME[_HAND_MADE[model_type]]
    assert family.make_processor is not None and family.make_config is not None
    made = family.make_processor()
    config = family.make_config(made.tokenizer)
    if config.model_type != model_type:
        raise CannotBuild(f"the hand-made maker builds {config.model_type}, not {model_type}")
    if type(made).__name__.endswith("ImageOnly"):
        real = type(made).__mro__[1]
        video = _mapped(VIDEO_PROCESSOR_MAPPING_NAMES, model_type, PROCESSOR_MAPPING_NAMES[model_type])
        own = set(inspect.signature(real.__init__).parameters) - {"self", "kwargs", "chat_template"}
        held = {name: getattr(made, name) for name in own if hasattr(made, name)}
        made = real(**{**held, "video_processor": video() if video else None}, chat_template=made.chat_template)
    return made, config


def _checked_model(processor: Any, config: Any) -> Any:
    """The seeded float32 model of `config`, its generation ids the tokenizer's, its one-image pass run."""
    import torch
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(0)
    # a timm tower's settings as given: timm rewrites the block arguments it builds from in place (Gemma 3n's
    # `model_args`), which the saved config would then hold
    towers = [getattr(config, key) for key in getattr(config, "sub_configs", {}) if getattr(config, key, None)]
    timm_args = [(tower, copy.deepcopy(tower.model_args)) for tower in towers if getattr(tower, "model_args", None)]
    try:
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32).eval()
    except Exception as err:
        raise CannotBuild(f"transformers' model does not build from the shrunk config: {_reason(err)}") from err
    for tower, args in timm_args:
        tower.model_args = args
    size = sum(p.numel() * p.element_size() for p in model.parameters())
    if size > MAX_BYTES:
        raise CannotBuild(f"the shrunk model is still {size / 2**20:.0f} MB (a size setting the shrink misses)")
    tokenizer = processor.tokenizer
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        setattr(model.generation_config, key, getattr(tokenizer, key))
    try:
        _smoke(model, processor)
    except Exception as err:
        raise CannotBuild(f"transformers' model raises on CPU: {_reason(err)}") from err
    return model


def parts(model_type: str) -> tuple[Any, Any]:
    """The type's tiny processor and shrunk config, unchecked (a forward-pass row's makers: `forward_families`)."""
    return _generic(model_type)


def build(
    model_type: str, folder: Path, reshape: Callable[[Any, Any], None] | None = None, published_names: bool = False
) -> Path:
    """The type's tiny checkpoint in `folder` (loaded by AutoModelForImageTextToText / AutoProcessor, its one-image
    forward pass checked), or `CannotBuild` with the reason. `reshape(processor, config)`: a change to the processor and
    the shrunk config before the model is made (the CPU engine's head size: `engine_checkpoints`); `published_names`: its weights saved under
    the names its published checkpoints have (`save_as_published`)."""
    if model_type not in image_text_types():
        raise CannotBuild(f"{model_type} is not an image-text-to-text type of this transformers")
    try:
        processor, config = _generic(model_type)
        if reshape:
            reshape(processor, config)
        model = _checked_model(processor, config)
    except CannotBuild as generic:
        if model_type not in _HAND_MADE:
            raise
        try:
            processor, config = _hand_made(model_type)
            if reshape:
                reshape(processor, config)
            model = _checked_model(processor, config)
        except Exception as err:
            raise CannotBuild(f"{generic} (its hand-made maker too: {err})") from err
    folder.mkdir(parents=True, exist_ok=True)
    if published_names:
        save_as_published(model, folder)
    else:
        model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def save_as_published(model: Any, folder: Path) -> None:
    """`model` saved under the weight names and layouts its published checkpoints have, as transformers saves a model
    it loaded from one: its conversion mapping (`conversion_mapping.py`: the renames and transposes from a published
    checkpoint's weights to the model's) reversed whole. A model made from its config is saved with the mapping's
    prefix changes left out (CLIP's and SigLIP's towers, whose published weights sit under `vision_model.`), and a
    transpose the loader makes only where the shapes say so (`Transpose(check_dims=True)`: Qwen3-VL-MoE's fused
    experts, published `[experts, hidden, intermediate]`) is never made on saving; vLLM's loaders read the published
    ones ("no module or parameter named 'vision_tower.embeddings'"). Loaded back, every weight is found, and equal."""
    import torch
    from transformers import AutoModelForImageTextToText
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import Transpose

    conversions = get_model_conversion_mapping(model, add_legacy=False)
    for operation in (op for conversion in conversions for op in getattr(conversion, "operations", ())):
        if isinstance(operation, Transpose):
            operation.check_dims = False  # on saving, as published; on loading, the shapes tell
    model._weight_conversions = conversions
    model.save_pretrained(folder)
    loaded, info = AutoModelForImageTextToText.from_pretrained(folder, output_loading_info=True)
    lost = [key for kind in ("missing_keys", "unexpected_keys", "mismatched_keys") for key in info.get(kind) or ()]
    mine, back = model.state_dict(), loaded.state_dict()
    lost += [key for key, value in mine.items() if key in back and not torch.equal(value, back[key])]
    if lost:
        raise CannotBuild(f"saved under its published names, transformers does not load back {lost[:3]} as saved")


def published_refusal(model_type: str, folder: Path) -> str | None:
    """docs/models.md's line for a type whose published checkpoints have no chat template: the refusal the hf backend
    gives its tiny checkpoint saved without one (as `--screen_only` gives it too); None for any other type."""
    from harness.models.shared.hf_counting import NoChatTemplate, ProcessorCount

    if model_type not in PUBLISHED_WITHOUT_TEMPLATE:
        return None
    bare = folder.with_name(f"{folder.name}-as-published")
    shutil.copytree(folder, bare, ignore=shutil.ignore_patterns("chat_template.*", "*.safetensors"))
    try:
        ProcessorCount.load(str(bare), offline=True)
    except NoChatTemplate as err:
        return f"refused as published: it{str(err).removeprefix(str(bare))} (given one, it {RUNS})"
    finally:
        shutil.rmtree(bare)
    raise AssertionError(f"{model_type}: its checkpoint without a chat template is not refused")
