"""lm-eval's and lmms-eval's names for the `vllm` backend, and what their model arguments that it does not take
become here (`harness.models.shared.foreign_args`): lm-eval's `vllm-vlm` (`lm_eval/models/vllm_vlms.py`, on `VLLM`'s
arguments, `lm_eval/models/vllm_causallms.py`) and lmms-eval's `vllm` (`lmms_eval/models/simple/vllm.py`,
`chat/vllm.py`), whose name is ours too. Both hand vLLM's own engine arguments straight to `vllm.LLM`, as this backend
does: any field of the installed `EngineArgs` (`max_model_len`, `quantization`, `tokenizer_mode`, ...) passes, so
none is in this table; lmms-eval's `model=` is the backend's `pretrained`."""

from __future__ import annotations

from harness.models.shared.foreign_args import (
    GEN_TOKENS,
    INTERLEAVED,
    LM_EVAL,
    NO_VIDEO_FIRST,
    SYSTEM_PROMPT,
    THINKING,
    VIDEO_ONLY,
    ForeignArg,
    ignored,
    refused,
    renamed,
)

KNOWN_AS = {"vllm-vlm": LM_EVAL}

_SCHEDULED = "vLLM schedules its own batches by its KV-cache budget"

FOREIGN_ARGS: dict[str, ForeignArg] = {
    "max_length": renamed("max_model_len"),
    "max_batch_size": renamed("max_num_seqs"),  # lm-eval hands it to vLLM as max_num_seqs
    "batch_size": ignored(_SCHEDULED),
    "device": ignored("vLLM places itself on the visible GPUs (CUDA_VISIBLE_DEVICES)"),
    "swap_space": ignored("vLLM no longer takes it (lm-eval drops it too)"),
    "interleave": INTERLEAVED,
    "image_first": NO_VIDEO_FIRST,
    "image_width": refused("write max_pixels=W*H (the processor's pixel limit)"),
    "image_height": refused("write max_pixels=W*H (the processor's pixel limit)"),
    "image_max_side": refused("write max_pixels=N (the processor's pixel limit)"),
    "min_image_pixels": refused("write min_pixels=N (the processor's smallest image area)"),
    "lora_local_path": refused("LoRA adapters are not loaded here; merge the adapter into a checkpoint first"),
    "truncation_side": refused(
        "prompts are never cut here: one that does not fit is recorded over_length, unless the task declares its "
        "paper's truncation rule; drop truncation_side"
    ),
    "add_bos_token": ignored("the model's own chat template decides how the prompt starts, BOS included"),
    "prefix_token_id": ignored("it is for log-likelihood requests; every task here generates"),
    "max_gen_toks": GEN_TOKENS,
    "max_new_tokens": GEN_TOKENS,
    "think_end_token": THINKING,
    "enable_thinking": THINKING,
    "chat_template_args": THINKING,
    "system_prompt": SYSTEM_PROMPT,
    "max_frame_num": VIDEO_ONLY,
    "nframes": VIDEO_ONLY,
    "fps": VIDEO_ONLY,
}
