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
import re
from pathlib import Path
from typing import Any

from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

from harness.models.aliases import ALIASES
from tests.support.forward_families import BY_NAME
from tests.support.forward_pass import tiny_checkpoint

CPU_HEAD_DIM = 64
# The families the CPU engine runs end to end in `make test` (tests/harness/models/vllm_cpu): one for each way vLLM's
# multimodal processing runs a prompt's images that the engine sweep found (`make engine-sweep`, the first two parts of
# its record's `path`; test_engine_sweep.py holds them to it): M-RoPE positions (Qwen2.5-VL), text tokens among an
# image's at 1-D positions (Idefics3), an image's run all image tokens at 1-D positions (LLaVA-OneVision), text tokens
# among an image's at M-RoPE positions (MiniCPM-V 4.7, the sweep's type: its slices' marks). The
# attention the KV cache holds (full, sliding windows, hybrid) is the engine's, which the harness's count, prompt and
# statuses do not depend on: the sweep runs each kind. The families CI ran before (Qwen3-VL, InternVL3, Pixtral,
# Gemma 3) run in the sweep.
ENGINE_FAMILIES = ("qwen2.5-vl", "idefics3", "llava-onevision", "minicpmv4_7")
# What the published checkpoints of a family hold that its tiny one lacks, and vLLM's loader needs. Gemma 3's tokenizer
# holds runs of one to four newlines as tokens of their own, which vLLM's Gemma 3 processing looks up by their text
# (`vocab["\n\n"]`: a KeyError for the tiny byte-level tokenizer, which writes a newline as "Ċ"); its SigLIP tower's
# weights are named `vision_tower.vision_model.*`, as vLLM's loader reads them (the tiny one is saved as
# `vision_tower.*`: "no module or parameter named 'vision_tower.embeddings'"; transformers loads either).
AS_PUBLISHED: dict[str, tuple[tuple[str, ...], tuple[str, str]]] = {
    "gemma3": (("\n", "\n\n", "\n\n\n", "\n\n\n\n"), ("vision_tower.", "vision_tower.vision_model.")),
    "llava-onevision": ((), ("vision_tower.", "vision_tower.vision_model.")),  # its SigLIP tower, as llava-hf's
}


# What the published checkpoints of a type hold that its tiny one (`checkpoint_factory`) lacks, and vLLM reads:
# - tokens its processing looks up by their text: Gemma's SentencePiece vocabulary holds runs of newlines as tokens of
#   their own, which vLLM's Gemma 3 processing reads (`vocab["\n\n"]`: KeyError '\n\n' for the tiny byte-level
#   tokenizer, which spells a newline "Ċ");
LOOKED_UP: dict[str, tuple[str, ...]] = {
    "gemma3": ("\n", "\n\n", "\n\n\n", "\n\n\n\n"),
    "gemma3n": ("\n", "\n\n", "\n\n\n", "\n\n\n\n"),  # vLLM's Gemma 3n processing reads them as Gemma 3's
    "paligemma": ("\n",),  # vLLM's PaliGemma ends the prompt with "\n" (`vocab["\n"]`)
    # vLLM's Muse Glimmer processes each image as its own processor's prompt "<|image|>", the image sentinel the
    # published tokenizer holds (id 200090), which transformers' processor never writes ("0 image sentinel(s) in text
    # but 1 image(s) given")
    "muse_glimmer": ("<|image|>",),
}
# - config fields transformers' config classes do not declare (so a config they make lacks them), which vLLM's model
#   reads as the published configs hold them (a field `image_processor.` a processor setting): each from the setting
#   that holds its value (`image_processor.` its processor's), the soft tokens of a Gemma 4 image (google/gemma-4-*'s
#   `default_output_length`, the unified checkpoints' `num_soft_tokens`), LFM2's widths under their first names (LiquidAI/LFM2-VL-*: `block_dim`,
#   `conv_dim`, the hidden size), Muse Glimmer's vision widths under the names vLLM's own config class reads (its
#   defaults are the published sizes: `output_dim` the merged patches, `adapter_dim` the projector's width), and
#   Qwen3-VL-MoE's `norm_topk_prob` (Qwen/Qwen3-VL-30B-A3B-*'s true: transformers' router always normalizes its
#   top-k weights, and declares no such field), values a model's own code holds and the published configs say;
FIELDS: dict[str, dict[str, Any]] = {
    "gemma4": {"vision_config.default_output_length": "image_processor.max_soft_tokens"},
    "gemma4_unified": {"vision_config.num_soft_tokens": "image_processor.max_soft_tokens"},
    # and its SigLIP 2 tower without the pooling head LiquidAI/LFM2-VL-*'s leave out (`vision_use_head` false), which
    # vLLM's tower has no place for
    "lfm2_vl": {
        "text_config.block_dim": "text_config.hidden_size",
        "text_config.conv_dim": "text_config.hidden_size",
        "vision_config.vision_use_head": False,
    },
    "muse_glimmer": {
        "vision_config.output_dim": "out_hidden_size",
        "vision_config.adapter_dim": "projector_hidden_size",
        "vision_config.merge_kernel_size": "vision_config.merge_size",
    },
    "qwen3_vl_moe": {"text_config.norm_topk_prob": True},
    # the language model's embeddings tied as the small Qwen3.5 checkpoints tie them (Qwen/Qwen3.5-0.8B to -4B; -9B
    # and -27B do not), the language model of openbmb/MiniCPM-V-4.6 and of the 1B MiniCPM-V-4.7 (Qwen3.5-0.8B's
    # config) among them: vLLM reads it from `text_config`
    **dict.fromkeys(
        ("qwen3_5", "minicpmv4_6", "minicpmv4_7"),
        {"tie_word_embeddings": True, "text_config.tie_word_embeddings": True},
    ),
    # the image normalization of baidu/Qianfan-OCR (InternVL's: ImageNet's mean and deviation), which vLLM's own
    # InternVL processing holds as constants (the tiny processor's are its GOT-OCR2 class's defaults, CLIP's)
    "qianfan_ocr": {
        "image_processor.image_mean": IMAGENET_DEFAULT_MEAN,
        "image_processor.image_std": IMAGENET_DEFAULT_STD,
    },
    # baidu/ERNIE-4.5-VL-*'s config as its own code names it, which vLLM's ERNIE 4.5-VL reads at the top (with the text
    # model's fields, `TEXT_AT_TOP`): the resampler's input width and its spatial and temporal merges, the image
    # token, the text and vision experts' counts and layer spans (each a [text, vision] pair), the time axis' rotary
    # share (`freq_allocation`: the last of transformers' mrope sections), and the tower's width and MLP ratio
    "ernie4_5_vl_moe": {
        "pixel_hidden_size": "vision_config.hidden_size",
        "spatial_conv_size": "vision_config.spatial_merge_size",
        "temporal_conv_size": "vision_config.temporal_merge_size",
        "use_temporal_conv": True,
        "im_patch_id": "image_token_id",
        "moe_num_experts": ("text_config.moe_num_experts", "text_config.moe_num_experts"),
        "moe_layer_start_index": (1, 1),  # its first layer dense (`mlp_layer_types`), as published
        "moe_layer_end_index": ("text_config.num_hidden_layers", "text_config.num_hidden_layers"),
        "freq_allocation": "text_config.rope_parameters.mrope_section.2",
        "vision_config.embed_dim": "vision_config.hidden_size",
        "vision_config.mlp_ratio": 2.0,  # the tiny tower's intermediate_size over its hidden_size (published: 4)
    },
    # nvidia's Cosmos 3 Edge projector settings, which vLLM's own Cosmos 3 Edge config reads from a `projector_config`
    # (its defaults the published sizes: an 11,520-wide merger) and transformers' keeps elsewhere: the tower's width
    # and merge, the merger's width (`projector_hidden_size`), the language model's width, its norm before the merge
    "cosmos3_edge": {
        "projector_config": {
            "input_hidden_size": "vision_config.hidden_size",
            "spatial_merge_size": "vision_config.spatial_merge_size",
            "merger_intermediate_size": "projector_hidden_size",
            "out_hidden_size": "text_config.hidden_size",
            "use_postshuffle_norm": False,
        }
    },
    # stepfun-ai's Step 3.7 tower settings under the names its own (Perception Encoder) config gives them, which vLLM's
    # tower reads: the widths, depth and heads, layer scale, and what transformers' tower holds (absolute position
    # embeddings and 2-D RoPE, a norm before its layers; no class token, no norm after, its output its width)
    "step3p7": {
        "vision_config.width": "vision_config.hidden_size",
        "vision_config.layers": "vision_config.num_hidden_layers",
        "vision_config.heads": "vision_config.num_attention_heads",
        "vision_config.ls_init_value": "vision_config.layer_scale_init_value",
        "vision_config.output_dim": None,
        "vision_config.use_abs_posemb": True,
        "vision_config.use_rope2d": True,
        "vision_config.use_ln_pre": True,
        "vision_config.use_cls_token": False,
        "vision_config.use_ln_post": False,
    },
    # Granite 4 Vision's Q-Formers as its config class derives them from the tower's width where none is given (the
    # published ones: 3072 wide, a head per 64 dims), which vLLM builds whatever `qformer_config` says
    "granite4_vision": {"qformer_config.intermediate_size": 3072, "qformer_config.num_attention_heads": 1},
    # MiniMax-M3's tower settings vLLM reads from `img_token_compression_config` (transformers': the tower's own)
    "minimax_m3_vl": {
        "vision_config.img_token_compression_config": {
            "spatial_merge_size": "vision_config.spatial_merge_size",
            "temporal_patch_size": "vision_config.temporal_patch_size",
        }
    },
    # Qwen4-Exp's deepstack layers, which vLLM's model reads as Qwen3-VL's configs hold them: none (transformers'
    # Qwen4-Exp merges no deepstack features, and declares no such field); its linear attention's output gate, which
    # transformers takes from `hidden_act` where unset and vLLM reads as set ("unsupported output_gate_type=None")
    "qwen4_exp": {
        "vision_config.deepstack_visual_indexes": [],
        "text_config.output_gate_type": "text_config.hidden_act",
    },
    # zai-org/GLM-4.5V's `use_qk_norm` (false: transformers' GLM-4.5V has no query-key norm, and declares no field)
    "glm4v_moe": {"text_config.use_qk_norm": False},
    # its language model's embeddings tied as CohereLabs' checkpoints tie them, said at the top, where vLLM reads it
    "cohere_compass": {"tie_word_embeddings": "text_config.tie_word_embeddings"},
    # the language model's MLP as wide as the vision merger's (zai-org/GLM-OCR: 4608 = its out_hidden_size 1536 x 3
    # channels): vLLM's GLM-OCR merger takes its width from `text_config.intermediate_size`, transformers' from
    # `out_hidden_size * in_channels`; where they differ vLLM loads the merger's weights cut to its width, and the
    # image features are others than hf's
    "glm_ocr": {
        "text_config.intermediate_size": lambda c: c.vision_config.out_hidden_size * c.vision_config.in_channels
    },
}
# - the types whose published configs hold their text model's fields at the top (baidu/ERNIE-4.5-VL-*'s, written by
#   its own code, which vLLM's model reads), beside the `text_config` transformers writes;
TEXT_AT_TOP = {"ernie4_5_vl_moe"}
# - config values a published config writes as one number where transformers' config class writes a pair: the
#   InternVL-format vision sizes of baidu/Qianfan-OCR (448, 14), which vLLM's own Qianfan-OCR config reads as written
#   (`image_size // patch_size`: "unsupported operand type(s) for //: 'list' and 'list'" on [448, 448]);
ONE_NUMBER: dict[str, tuple[str, ...]] = {
    "qianfan_ocr": ("vision_config.image_size", "vision_config.patch_size"),
}
# - config values a published config writes that transformers' config class rewrites on loading, so that a config it
#   saves holds its own: MiniMaxAI/MiniMax-M3's `hidden_act` "swigluoai" (transformers' says "silu", computing the
#   clamped gate inline), the one activation vLLM's MiniMax-M3 takes ("Unsupported activation: silu");
AS_WRITTEN: dict[str, dict[str, Any]] = {
    "minimax_m3_vl": {"text_config.hidden_act": "swigluoai"},
}
# - rope settings the published configs set and the type's default leaves to the model, which transformers and vLLM
#   default otherwise: the GLM-4 family's rotary half of each head (vLLM's GLM-4 takes 0.5 where none is set,
#   transformers' GLM-4.1V and GLM-OCR 1.0), and the Qwen3-VL family's interleaved M-RoPE (`mrope_interleaved`, true
#   in Qwen/Qwen3-VL-* and Qwen3.5's configs: transformers' models always interleave the axes, vLLM only where it is
#   set, and otherwise positions an image's tokens otherwise);
ROPE_SETTINGS: dict[str, dict[str, Any]] = {
    "glm4v": {"partial_rotary_factor": 0.5},
    "glm4v_moe": {"partial_rotary_factor": 0.5},
    "glm_ocr": {"partial_rotary_factor": 0.5},
    "qwen3_vl": {"mrope_interleaved": True},
    "qwen3_vl_moe": {"mrope_interleaved": True},
    "qwen3_5": {"mrope_interleaved": True},
    "qwen3_5_moe": {"mrope_interleaved": True},
    "qwen4_exp": {"mrope_interleaved": True},
}
# - tokens a published model never writes, whose output rows are zeroed (a logit of 0, below the largest of a random
#   model's others, so that greedy decoding never picks one): the multimodal placeholders of Gemma 4 and Muse Glimmer,
#   which transformers' models embed as padding wherever they stand, a generated one too (Muse Glimmer's as token 0's
#   embedding), and vLLM as themselves (a tiny Gemma 4 writes its `<|image|>`, a tiny Muse Glimmer its `<|video|>`,
#   and the steps after it differ). Their input rows too (Gemma 4's embeddings are tied), which neither reads at a
#   placeholder;
NEVER_WRITTEN: dict[str, tuple[str, ...]] = {
    "gemma4": ("image_token_id", "video_token_id", "audio_token_id"),
    "muse_glimmer": ("image_token_id", "video_token_id"),
}
# - the folder a type's published checkpoints keep their weights in, where vLLM's model reads them from there alone:
#   nvidia's Cosmos 3 Edge checkpoints are Diffusers folders (vLLM's `allow_patterns_overrides`,
#   "[tv]*er/*.safetensors": `transformer/` and `vision_encoder/`; "Cannot find any model weights" in the top folder,
#   where transformers reads them): the weights as published beside the top folder's, in `transformer/`;
WEIGHTS_FOLDER: dict[str, str] = {"cosmos3_edge": "transformer"}
# - weights its published checkpoints name otherwise than transformers saves a model made from its config (the prefix
#   changes its conversion mapping leaves out, `save_as_published`), where vLLM's loader reads them by that name:
#   baidu/ERNIE-4.5-VL-*'s tower at the top (`vision_model.`), beside its language model's `model.`; nvidia's Cosmos 3
#   Edge tower's MLPs as SigLIP 2's (`fc1`, `fc2`), its language model's Diffusers-style (`up_proj`, `down_proj`:
#   transformers' renaming of those to `fc1`, `fc2`, reversed on saving, reaches the tower's too); and names the
#   mapping, reversed, cannot give back: Qianfan-OCR's maps the InternViT's `encoder.layers.` to `layers.` wherever it
#   stands, so reversed it names the language model's layers `language_model.model.encoder.layers.` too, where
#   baidu/Qianfan-OCR has `language_model.model.layers.` ("no module or parameter named 'encoder' in Qwen3Model";
#   transformers loads either). Each a pattern and its replacement (`re.sub`);
RENAMED: dict[str, tuple[tuple[str, str], ...]] = {
    "qianfan_ocr": ((r"^language_model\.model\.encoder\.layers\.", "language_model.model.layers."),),
    "ernie4_5_vl_moe": ((r"^model\.vision_model\.", "vision_model."),),
    # MiniMaxAI/MiniMax-M3's tower MLPs as `mlp.` (transformers' renaming of the text layers' `mlp.` to
    # `block_sparse_moe.`, reversed on saving, reaches the tower's too: "KeyError: 'vision_model.encoder.layers.0.
    # block_sparse_moe.fc1.bias'")
    "minimax_m3_vl": ((r"^(vision_tower\..*)\.block_sparse_moe\.", r"\1.mlp."),),
    "cosmos3_edge": (
        (r"^(model\.visual\..*\.mlp\.)up_proj\.", r"\1fc1."),
        (r"^(model\.visual\..*\.mlp\.)down_proj\.", r"\1fc2."),
    ),
}
# and every published config names its head size (`head_dim`), which vLLM's GLM-4.5V reads and a tiny config whose
# width is one head leaves out.


def _for_the_engine(model_type: str, processor: Any, config: Any) -> None:
    """The tiny config and processor as the CPU engine runs them and as published (above): the language model's
    attention in one head of 64 dims, its mrope sections those of the type's own proportions for that head."""
    from tokenizers import AddedToken

    from tests.support.checkpoint_factory import default_sections, scaled_sections
    from tests.support.forward_pass import with_head_dim

    text = config.get_text_config()
    with_head_dim(text, CPU_HEAD_DIM)
    text.head_dim = CPU_HEAD_DIM
    # a gated delta net's heads (Qwen3.5's: the CPU kernel takes multiples of 32, `chunk_gated_delta_rule_cpu`) and an
    # indexer's (Qwen4-Exp's, which meets the attention's queries) as wide as the attention's
    for other in ("linear_key_head_dim", "linear_value_head_dim", "indexer_head_dim"):
        if getattr(text, other, None):
            setattr(text, other, CPU_HEAD_DIM)
    if 2 * (getattr(text, "moe_intermediate_size", None) or 0) == text.hidden_size:
        # fused experts of square gate_up matrices, whose published layout (transposed) transformers' loader cannot
        # tell from its own by their shape: no published checkpoint's experts are square (Qwen3-VL-30B-A3B: 2 x 768
        # against 2048)
        text.moe_intermediate_size = CPU_HEAD_DIM * 3 // 4
    rope = getattr(text, "rope_parameters", None) or {}
    nested = {kind: settings for kind, settings in rope.items() if isinstance(settings, dict)}  # per layer type
    for settings in nested.values() or [rope]:
        settings.update(ROPE_SETTINGS.get(model_type, {}))
        if settings.get("mrope_section"):
            factor = settings.get("partial_rotary_factor") or 1.0
            own = default_sections(model_type) or settings["mrope_section"]
            settings["mrope_section"] = scaled_sections(own, int(CPU_HEAD_DIM * factor) // 2)
    if rope:
        text.rope_parameters = {**rope, **{kind: dict(settings) for kind, settings in nested.items()}}
    if LOOKED_UP.get(model_type):
        processor.tokenizer.add_tokens([AddedToken(t, normalized=False) for t in LOOKED_UP[model_type]])
        text.vocab_size = len(processor.tokenizer)
    if model_type in TEXT_AT_TOP:
        for name, value in text.to_dict().items():
            if name not in config.to_dict():
                setattr(config, name, value)
    for field, source in FIELDS.get(model_type, {}).items():
        *owner, name = field.split(".")
        if callable(source):  # a value the config's other sizes make
            value = source(config)
        elif isinstance(source, tuple):
            value = [_value(processor, config, s) for s in source]
        else:
            value = _value(processor, config, source)
        setattr(_attribute(processor if field.startswith("image_processor.") else config, ".".join(owner)), name, value)


def _value(processor: Any, config: Any, source: Any) -> Any:
    """A FIELDS value: a setting's (a path into the config, or into the processor's `image_processor.`), or as given;
    a dict of them."""
    if isinstance(source, dict):
        return {key: _value(processor, config, part) for key, part in source.items()}
    if not isinstance(source, str):
        return source
    return _attribute(processor if source.startswith("image_processor.") else config, source)


def _attribute(holder: Any, path: str) -> Any:
    for name in filter(None, path.split(".")):
        holder = (
            holder[int(name)] if name.isdigit() else holder[name] if isinstance(holder, dict) else getattr(holder, name)
        )
    return holder


def type_checkpoint(model_type: str, folder: Path) -> Path:
    """Any image-text-to-text type's tiny checkpoint (`tests.support.checkpoint_factory`) as the CPU engine runs it,
    in `folder` (`_for_the_engine`), its weights under the names its published checkpoints have
    (`save_as_published`). `CannotBuild` with the reason."""
    from tests.support.checkpoint_factory import build

    build(model_type, folder, reshape=lambda p, c: _for_the_engine(model_type, p, c), published_names=True)
    if model_type in ONE_NUMBER or model_type in AS_WRITTEN:
        config = json.loads((folder / "config.json").read_text())
        for path in (*ONE_NUMBER.get(model_type, ()), *AS_WRITTEN.get(model_type, {})):
            *owner, name = path.split(".")
            part = config
            for key in owner:
                part = part[key]
            if path in AS_WRITTEN.get(model_type, {}):
                part[name] = AS_WRITTEN[model_type][path]
            elif isinstance(part.get(name), list) and len(set(part[name])) == 1:
                part[name] = part[name][0]
        (folder / "config.json").write_text(json.dumps(config, indent=2))
    if model_type in RENAMED:
        _rename_weights(folder, RENAMED[model_type])
    if model_type in NEVER_WRITTEN:
        config = json.loads((folder / "config.json").read_text())
        _zero_output_rows(folder, [config[name] for name in NEVER_WRITTEN[model_type] if config.get(name) is not None])
    if model_type in WEIGHTS_FOLDER:
        inner = folder / WEIGHTS_FOLDER[model_type]
        inner.mkdir(exist_ok=True)
        for path in folder.glob("*.safetensors"):
            (inner / path.name).unlink(missing_ok=True)
            (inner / path.name).hardlink_to(path)
    return folder


def _zero_output_rows(folder: Path, token_ids: list[int]) -> None:
    """The rows of `token_ids` in the checkpoint's output layer (`lm_head`, else the tied embeddings) set to zero."""
    from safetensors.torch import load_file, save_file

    for path in folder.glob("*.safetensors"):
        weights = load_file(path)
        for key in [k for k in weights if k.endswith(("lm_head.weight", "language_model.embed_tokens.weight"))]:
            weights[key][token_ids] = 0
        save_file(weights, path, metadata={"format": "pt"})


_TYPE_CHECKPOINTS: dict[str, Path] = {}


def family_checkpoint(name: str) -> tuple[Path, dict[str, str], dict[str, str]]:
    """An engine family's checkpoint, the `--model_args` both backends take (its alias's prompt style) and those of the
    hf backend alone: a forward-pass family's (`engine_checkpoint`), or any model_type's as the engine sweep builds it
    (`type_checkpoint`, written once per process)."""
    if name in BY_NAME:
        return engine_checkpoint(name), prompt_style(name), dict(BY_NAME[name].model_args)
    if name not in _TYPE_CHECKPOINTS:
        from tests.support.forward_pass import _root

        _TYPE_CHECKPOINTS[name] = type_checkpoint(name, _root() / f"{name}-engine")
    return _TYPE_CHECKPOINTS[name], type_style(name), {}


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


def _model_class(family: str) -> str:
    """The transformers model class a forward-pass family is checked with (the first of its `classes`)."""
    return BY_NAME[family].classes.split(",")[0].split(" ")[0]


def family_type(name: str) -> str:
    """The model_type of an engine family's checkpoints (a forward-pass family's by its model class)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    if name not in BY_NAME:
        return name
    return next(t for t, model in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items() if model == _model_class(name))


def type_style(model_type: str) -> dict[str, str]:
    """The prompt style the harness's aliases run a type's checkpoints with (the first forward-pass family of its model
    class whose alias names one: Pixtral's, whose published template reads a text part's `content`), else none (the
    checkpoint's template, as given)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    model_class = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(model_type)
    mine = [f.name for f in BY_NAME.values() if f.runs and _model_class(f.name) == model_class]
    return next((style for name in mine if (style := prompt_style(name))), {})


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
        from transformers import AutoModelForImageTextToText, AutoProcessor

        processor = AutoProcessor.from_pretrained(folder)
        processor.tokenizer.add_tokens(list(tokens))
        model = AutoModelForImageTextToText.from_pretrained(folder)
        model.resize_token_embeddings(len(processor.tokenizer))
        model.save_pretrained(made)
        processor.save_pretrained(made)
        _rename_weights(made, ((f"^{re.escape(renamed[0])}", renamed[1]),))
    return made


def _rename_weights(folder: Path, renames: tuple[tuple[str, str], ...]) -> None:
    """The weights in `folder` renamed by each (pattern, replacement) in turn."""
    from safetensors.torch import load_file, save_file

    for path in folder.glob("*.safetensors"):
        weights = load_file(path)
        for pattern, replacement in renames:
            weights = {re.sub(pattern, replacement, key): value for key, value in weights.items()}
        save_file(weights, path, metadata={"format": "pt"})
