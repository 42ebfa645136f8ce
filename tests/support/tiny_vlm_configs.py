"""Tiny configurations of each vision-language family's transformers classes: the family's own config class with its
vision tower, projector and language model shrunk to one or two layers of a few dozen units, and its image-token ids
those of the tiny tokenizer its processor holds (`tests.support.tiny_vlm_processors`). What the forward-pass check
(`tests.support.forward_pass`) builds each family's tiny model from. The shapes that decide how many features an
image makes are the published ones (patch sizes, tile sizes, merges, perceiver latents, tokens per image); only the
widths and depths are small.
"""

from __future__ import annotations

from typing import Any


def text(tokenizer: Any, model_type: str, **extra: Any) -> dict[str, Any]:
    """A one-layer language model of `model_type` over the tiny tokenizer's vocabulary."""
    return {
        "model_type": model_type,
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 262144,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        **extra,
    }


def vit(model_type: str, image_size: int, patch_size: int, **extra: Any) -> dict[str, Any]:
    """A one-layer ViT of `model_type` at the family's published image and patch size."""
    return {
        "model_type": model_type,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": image_size,
        "patch_size": patch_size,
        **extra,
    }


def token(tokenizer: Any, name: str) -> int:
    found = tokenizer.convert_tokens_to_ids(name)
    assert isinstance(found, int) and found != tokenizer.unk_token_id, f"the tiny tokenizer has no {name}"
    return found


def _llava_style(config_class: Any, tokenizer: Any, vision: dict[str, Any], text_model: str, **extra: Any) -> Any:
    """A config of LLaVA's shape (`config_class`): its vision tower, a language model of `text_model` and the `<image>`
    token's id, with the family's `extra` settings."""
    image = token(tokenizer, "<image>")
    return config_class(vision_config=vision, text_config=text(tokenizer, text_model), image_token_id=image, **extra)


def llava(tokenizer: Any, image_size: int = 336) -> Any:
    from transformers import LlavaConfig

    vision = vit("clip_vision_model", image_size, 14)
    return _llava_style(LlavaConfig, tokenizer, vision, "llama", vision_feature_select_strategy="default")


def llava_next(tokenizer: Any, pinpoints: list[list[int]]) -> Any:
    from transformers import LlavaNextConfig

    anyres = {"image_grid_pinpoints": pinpoints, "vision_feature_select_strategy": "default"}
    return _llava_style(LlavaNextConfig, tokenizer, vit("clip_vision_model", 336, 14), "llama", **anyres)


def llava_onevision(tokenizer: Any, pinpoints: list[list[int]]) -> Any:
    from transformers import LlavaOnevisionConfig

    return _llava_style(
        LlavaOnevisionConfig,
        tokenizer,
        vit("siglip_vision_model", 384, 14),
        "qwen2",
        video_token_id=token(tokenizer, "<video>"),
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
    )


def idefics2(tokenizer: Any) -> Any:
    from transformers import Idefics2Config

    return Idefics2Config(
        vision_config=vit("idefics2_vision", 980, 14),
        perceiver_config={
            "hidden_size": 64,
            "resampler_n_latents": 64,
            "resampler_depth": 1,
            "resampler_n_heads": 2,
            "resampler_head_dim": 16,
            "num_key_value_heads": 1,
        },
        text_config=text(tokenizer, "mistral"),
        image_token_id=token(tokenizer, "<image>"),
    )


def idefics3(tokenizer: Any) -> Any:
    from transformers import Idefics3Config

    return Idefics3Config(
        vision_config=vit("idefics3_vision", 364, 14),
        text_config=text(tokenizer, "llama"),
        image_token_id=token(tokenizer, "<image>"),
        scale_factor=2,
    )


def gemma3(tokenizer: Any) -> Any:
    from transformers import Gemma3Config

    return Gemma3Config(
        vision_config=vit("siglip_vision_model", 896, 14),
        text_config=text(tokenizer, "gemma3_text", sliding_window=512, query_pre_attn_scalar=16),
        mm_tokens_per_image=256,
        boi_token_index=token(tokenizer, "<start_of_image>"),
        eoi_token_index=token(tokenizer, "<end_of_image>"),
        image_token_index=token(tokenizer, "<image_soft_token>"),
    )


def paligemma(tokenizer: Any) -> Any:
    from transformers import PaliGemmaConfig

    return PaliGemmaConfig(
        vision_config=vit("siglip_vision_model", 224, 14, projection_dim=64),
        text_config=text(tokenizer, "gemma"),
        image_token_id=token(tokenizer, "<image>"),
        projection_dim=64,
        hidden_size=64,
        vocab_size=len(tokenizer),
    )


def _qwen_ids(tokenizer: Any) -> dict[str, int]:
    return {
        "image_token_id": token(tokenizer, "<|image_pad|>"),
        "video_token_id": token(tokenizer, "<|video_pad|>"),
        "vision_start_token_id": token(tokenizer, "<|vision_start|>"),
        "vision_end_token_id": token(tokenizer, "<|vision_end|>"),
    }


MROPE = {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0}


def merged_vision(depth: int, patch_size: int, **extra: Any) -> dict[str, Any]:
    """The vision tower of Qwen2.5-VL's design (Qwen3-VL's, Qwen3.5's, GLM-4.1V's): `depth` blocks at the tiny widths,
    its patches merged into the 64 units of `text`."""
    widths = {"hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64}
    return {"depth": depth, **widths, "patch_size": patch_size, **extra}


def qwen2_vl(tokenizer: Any) -> Any:
    from transformers import Qwen2VLConfig

    return Qwen2VLConfig(
        text_config=text(tokenizer, "qwen2_vl_text", rope_parameters=MROPE),
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "patch_size": 14},
        **_qwen_ids(tokenizer),
    )


def qwen2_5_vl(tokenizer: Any) -> Any:
    from transformers import Qwen2_5_VLConfig

    return Qwen2_5_VLConfig(
        text_config=text(tokenizer, "qwen2_5_vl_text", rope_parameters=MROPE),
        vision_config=merged_vision(2, 14, window_size=112, fullatt_block_indexes=[1]),
        **_qwen_ids(tokenizer),
    )


QWEN3_ROPE = {"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True}
# A mixture of four experts, two a token, in every layer: the MoE aliases' (Qwen3-VL-30B-A3B, InternVL3.5-30B-A3B)
QWEN3_MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 1}


def qwen3_vl(tokenizer: Any) -> Any:
    from transformers import Qwen3VLConfig

    return Qwen3VLConfig(
        text_config=text(tokenizer, "qwen3_vl_text", rope_parameters=QWEN3_ROPE),
        vision_config=merged_vision(2, 16, num_position_embeddings=2304, deepstack_visual_indexes=[0]),
        **_qwen_ids(tokenizer),
    )


def qwen3_vl_moe(tokenizer: Any) -> Any:
    """Qwen3-VL-30B-A3B: Qwen3-VL's vision tower and ids over a one-layer mixture of experts."""
    from transformers import Qwen3VLMoeConfig

    dense = qwen3_vl(tokenizer).to_dict()
    return Qwen3VLMoeConfig(
        text_config=text(tokenizer, "qwen3_vl_moe_text", rope_parameters=QWEN3_ROPE, **QWEN3_MOE),
        vision_config=dense["vision_config"],
        **_qwen_ids(tokenizer),
    )


def glm4v(tokenizer: Any) -> Any:
    from transformers import Glm4vConfig

    return Glm4vConfig(
        text_config=text(tokenizer, "glm4v_text", rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3]}),
        vision_config=merged_vision(1, 14, image_size=336),
        image_token_id=token(tokenizer, "<|image|>"),
        video_token_id=token(tokenizer, "<|video|>"),
        image_start_token_id=token(tokenizer, "<|begin_of_image|>"),
        image_end_token_id=token(tokenizer, "<|end_of_image|>"),
        video_start_token_id=token(tokenizer, "<|begin_of_video|>"),
        video_end_token_id=token(tokenizer, "<|end_of_video|>"),
    )


def glm4v_moe(tokenizer: Any) -> Any:
    """GLM-4.5V: GLM-4.1V's vision tower and ids over a one-layer mixture of four experts."""
    from transformers import Glm4vMoeConfig

    dense = glm4v(tokenizer).to_dict()
    moe = {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "first_k_dense_replace": 0}
    rope = {"rope_type": "default", "mrope_section": [1, 1, 2], "partial_rotary_factor": 0.5}  # half of 16 rotates
    text_config = text(tokenizer, "glm4v_moe_text", rope_parameters=rope, **moe)
    ids = {k: v for k, v in dense.items() if k.endswith("token_id")}
    return Glm4vMoeConfig(text_config=text_config, vision_config=dense["vision_config"], **ids)


def internvl(tokenizer: Any, text_model: str = "qwen2", **text_extra: Any) -> Any:
    """InternVL over `text_model` (InternVL3's Qwen2, InternVL3.5's Qwen3, its 30B-A3B's `qwen3_moe` with
    `QWEN3_MOE`)."""
    from transformers import InternVLConfig

    return InternVLConfig(
        vision_config=vit("internvl_vision", 448, 14),
        text_config=text(tokenizer, text_model, **text_extra),
        image_token_id=token(tokenizer, "<IMG_CONTEXT>"),
        image_seq_length=256,
        downsample_ratio=0.5,
    )


def ovis2(tokenizer: Any) -> Any:
    from transformers import Ovis2Config

    indicators = ("<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>")
    return Ovis2Config(
        vision_config={
            **vit("ovis2_vision", 448, 14),
            "vocab_size": 64,
            "hidden_stride": 2,
            "num_visual_indicator_tokens": 5,
        },
        text_config=text(tokenizer, "qwen2"),
        image_token_id=token(tokenizer, "<IMG_ATOM>"),
        visual_indicator_token_ids=[token(tokenizer, name) for name in indicators],
        vocab_size=len(tokenizer),
        hidden_size=64,
    )
