"""lm-eval's and lmms-eval's names for the `hf` backend, and what their model arguments that `hf` does not take
become here (`harness.models.shared.foreign_args`): lm-eval's `hf-multimodal` (`lm_eval/models/hf_vlms.py`, on `HFLM`'s
arguments, `lm_eval/models/huggingface.py`) and lmms-eval's transformers wrappers (`lmms_eval/models/simple/
llava_hf.py`, `qwen2_5_vl.py`, `qwen2_vl.py`, `qwen3_vl.py`, `idefics2.py`, `chat/huggingface.py`,
`chat/internvl_hf.py`)."""

from __future__ import annotations

from harness.models.shared.foreign_args import (
    GEN_TOKENS,
    INTERLEAVED,
    LM_EVAL,
    LMMS_EVAL,
    SYSTEM_PROMPT,
    THINKING,
    VIDEO_ONLY,
    ForeignArg,
    ignored,
    only_when,
    refused,
    renamed,
    when_on,
)

KNOWN_AS = {
    "hf-multimodal": LM_EVAL,
    "llava_hf": LMMS_EVAL,
    "qwen2_vl": LMMS_EVAL,
    "qwen2_5_vl": LMMS_EVAL,
    "qwen3_vl": LMMS_EVAL,
    "internvl_hf": LMMS_EVAL,
    "huggingface": LMMS_EVAL,
}

_PLACED = "device_map=auto spreads the model over the visible GPUs (transformers' own placement)"
_TEMPLATE = "the model's own chat template places each image's tokens"
_NOT_HERE = "the hf backend loads the checkpoint as it is; merge or convert it into a checkpoint folder first"

FOREIGN_ARGS: dict[str, ForeignArg] = {
    # lm-eval's HFLM and hf-multimodal
    "max_length": renamed("context_length"),
    "parallelize": when_on({"device_map": "auto"}, "the model is loaded on one device (--device, device=)"),
    "max_memory_per_gpu": refused(f"{_PLACED}; per-device memory caps are not set here"),
    "max_cpu_memory": refused(f"{_PLACED}; per-device memory caps are not set here"),
    "offload_folder": refused(f"{_PLACED}; weights are not offloaded to disk here"),
    "tp_plan": refused(f"{_PLACED}; tensor parallelism is the vllm backend's (--model vllm, tensor_parallel_size=N)"),
    "interleave": INTERLEAVED,
    "image_token_id": ignored(_TEMPLATE),
    "image_string": ignored(_TEMPLATE),
    "convert_img_format": ignored("every image is decoded and converted to RGB before it is sent"),
    "min_pixels": refused(
        "the hf backend scales an image down to max_pixels and leaves smaller ones to the processor; drop min_pixels "
        "(the vllm backend takes it: --model vllm)"
    ),
    "image_width": refused("write max_pixels=W*H (images over that area are scaled down, keeping their shape)"),
    "image_height": refused("write max_pixels=W*H (images over that area are scaled down, keeping their shape)"),
    "image_max_side": refused("write max_pixels=N (images over that area are scaled down, keeping their shape)"),
    "batch_size": refused("the batch size is a flag here, as on lm-eval's command line: write --batch_size N"),
    "max_batch_size": refused("write --max_batch_size N (where --batch_size auto starts its search)"),
    "truncation": only_when(
        False,
        "prompts are never cut here: one that does not fit is recorded over_length (a task's own rule may cut it)",
        "prompts are never cut here: one that does not fit is recorded over_length, unless the task declares its "
        "paper's truncation rule; drop truncation",
    ),
    "backend": refused(
        "the hf backend loads every checkpoint as an image-text-to-text model; drop backend (here backend= switches "
        "an alias to another of our backends)"
    ),
    "subfolder": refused(_NOT_HERE),
    "tokenizer": refused("the checkpoint's own processor (and its tokenizer) is used; drop tokenizer"),
    "use_fast_tokenizer": ignored("the checkpoint's own processor decides"),
    "add_bos_token": ignored("the model's own chat template decides how the prompt starts, BOS included"),
    "prefix_token_id": ignored("it is for log-likelihood requests; every task here generates"),
    "logits_cache": ignored("it is for log-likelihood requests; every task here generates"),
    "softmax_dtype": ignored("it is for log-likelihood requests; every task here generates"),
    "mixed_precision_dtype": refused("write dtype=bfloat16 (the weights' dtype)"),
    "peft": refused(_NOT_HERE),
    "delta": refused(_NOT_HERE),
    "autogptq": refused(_NOT_HERE),
    "gptqmodel": refused(_NOT_HERE),
    "gguf_file": refused(_NOT_HERE),
    "think_end_token": THINKING,
    "enable_thinking": THINKING,
    "chat_template_args": THINKING,
    # lmms-eval's transformers wrappers
    "use_cache": ignored("generation always keeps its KV cache"),
    "use_flash_attention_2": when_on(
        {"attn_implementation": "flash_attention_2"}, "transformers chooses the attention implementation"
    ),
    "low_cpu_mem_usage": ignored("transformers loads the weights as it does by default"),
    "chat_template": refused("the checkpoint's own chat template is rendered (a model alias sets another's)"),
    "system_prompt": SYSTEM_PROMPT,
    "reasoning_prompt": refused("a task's prompt is its paper's; write --system_instruction TEXT to add a system turn"),
    "interleave_visuals": INTERLEAVED,
    "do_image_splitting": refused(
        "the processor's own setting is used (the idefics2 alias applies the papers' splitting per task and length)"
    ),
    "min_patches": refused("the processor's own setting is used (the internvl alias applies the papers' tile count)"),
    "max_patches": refused("the processor's own setting is used (the internvl alias applies the papers' tile count)"),
    "max_new_tokens": GEN_TOKENS,
    "max_num_frames": VIDEO_ONLY,
    "max_frames_num": VIDEO_ONLY,
    "num_frames": VIDEO_ONLY,
    "fps": VIDEO_ONLY,
    "total_pixels": VIDEO_ONLY,
    "use_custom_video_loader": VIDEO_ONLY,
    "max_image_size": VIDEO_ONLY,
}
