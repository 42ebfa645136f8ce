"""lm-eval's and lmms-eval's names for the `openai` backend, and what their model arguments that it does not take
become here (`harness.models.shared.foreign_args`): lm-eval's `local-chat-completions` and `openai-chat-completions`
(`lm_eval/models/openai_completions.py`, on `TemplateAPI`'s arguments, `lm_eval/models/api_models.py`; their
`base_url` names the whole endpoint, `.../v1/chat/completions`, which the backend takes as it is) and lmms-eval's
`openai_compatible` (`lmms_eval/models/simple/openai.py`, `chat/openai.py`; its `openai` is our name too)."""

from __future__ import annotations

from harness.models.shared.foreign_args import (
    GEN_TOKENS,
    LM_EVAL,
    LMMS_EVAL,
    THINKING,
    VIDEO_ONLY,
    ForeignArg,
    ignored,
    only_when,
    refused,
    renamed,
)

KNOWN_AS = {
    "local-chat-completions": LM_EVAL,
    "openai-chat-completions": LM_EVAL,
    "openai_compatible": LMMS_EVAL,
    "openai_compatible_chat": LMMS_EVAL,
}

_CONCURRENT = "requests are sent concurrency=N at a time (default 8), each one conversation"

FOREIGN_ARGS: dict[str, ForeignArg] = {
    # lm-eval's TemplateAPI
    "num_concurrent": renamed("concurrency"),
    "max_length": renamed("context_length"),
    "auth_token": renamed("api_key"),
    "batch_size": ignored(_CONCURRENT),
    "tokenized_requests": only_when(
        False,
        "every request is sent as chat messages, as a chat-completions server takes them",
        "a chat-completions server takes messages, not token ids; drop tokenized_requests",
    ),
    "tokenizer_backend": ignored(
        "the server counts its own tokens; --screen_only counts by the model family's rule (an estimate)"
    ),
    "tokenizer": ignored("the server counts its own tokens; --screen_only counts by the model family's rule"),
    "truncate": only_when(
        False,
        "prompts are never cut here",
        "prompts are never cut here: one over context_length is recorded over_length; drop truncate",
    ),
    "max_gen_toks": GEN_TOKENS,
    "seed": refused("the run's seed is sent with every request: write --seed N"),
    "eos_string": refused("stop sequences are the task's generation settings: write --gen_kwargs until=TEXT"),
    "header": refused("extra HTTP headers are not sent here; an API key goes in api_key= (or $OPENAI_API_KEY)"),
    "verify_certificate": refused("TLS certificates are always verified here"),
    "ca_cert_path": refused("TLS certificates are verified against the system's store (set $SSL_CERT_FILE)"),
    "add_bos_token": ignored("the server renders the chat with its own template"),
    "custom_prefix_token_id": ignored("it is for log-likelihood requests; every task here generates"),
    "trust_remote_code": ignored("the server loads its model; nothing of the checkpoint runs here"),
    "revision": ignored("the server loads its model at the revision it was started with"),
    "use_fast_tokenizer": ignored("the server counts its own tokens"),
    "think_end_token": THINKING,
    # lmms-eval's OpenAICompatible
    "model_version": renamed("model"),
    "retry_backoff_s": renamed("backoff"),
    "azure_openai": only_when(
        False, "the endpoint is OpenAI's API shape", "write api_version=VERSION for Azure OpenAI"
    ),
    "max_size_in_mb": ignored("images are sent as the build holds them (a model alias may scale them first)"),
    "httpx_trust_env": ignored("the proxy settings of the environment apply, as httpx reads them"),
    "adaptive_concurrency": ignored(_CONCURRENT),
    "adaptive_min_concurrency": ignored(_CONCURRENT),
    "adaptive_max_concurrency": ignored(_CONCURRENT),
    "adaptive_target_latency_s": ignored(_CONCURRENT),
    "adaptive_increase_step": ignored(_CONCURRENT),
    "adaptive_decrease_factor": ignored(_CONCURRENT),
    "adaptive_failure_threshold": ignored(_CONCURRENT),
    "prefix_aware_queue": ignored("requests are sent in the runner's order"),
    "prefix_hash_chars": ignored("requests are sent in the runner's order"),
    "continual_mode": refused("answers are kept in the run's journal and response cache; drop continual_mode"),
    "response_persistent_folder": refused("answers are kept in the run's journal and response cache (--output_path)"),
    "pass_video_url": VIDEO_ONLY,
    "max_frames_num": VIDEO_ONLY,
    "video_fps": VIDEO_ONLY,
    "enable_thinking_kwarg": THINKING,
}
