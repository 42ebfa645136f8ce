"""What the family modules of the alias table share: the `hf` and `vllm` aliases every open model becomes, and the
limits."""

from __future__ import annotations

from collections.abc import Mapping

from harness.inputs.input_policy import TaskRule
from harness.models.aliases.alias import Alias
from harness.models.paper_models import rule

# MMLongBench's 128K inputs (131,072 counted tokens, plus the chat template and up to 384 new tokens) fit in the
# official `vllm serve` line's limit (--max-model-len 139264, VLLM_ALLOW_LONG_MAX_MODEL_LEN=1): a vLLM engine's.
LONG_CONTEXT = "139264"
VLLM_LENGTH = (
    f"a vLLM engine holds max_model_len={LONG_CONTEXT} (the official vllm serve line's): a longer prompt is "
    "over_length, where the official HF run sent it"
)
# Every prompt is sent, however long, as the official wrappers sent theirs.
NO_LIMIT = {"no_context_limit": "true"}


def switched_from_hf(args: dict[str, str], length_arg: str) -> dict[str, str]:
    """An hf alias's arguments for vLLM (or `vllm serve`): an engine allocates for a length, the official vllm serve
    line's where hf had none (`length_arg`: the backend's argument for it)."""
    args = dict(args)
    if args.pop("no_context_limit", "false") == "true" and not {"max_model_len", "context_length"} & set(args):
        args[length_arg] = LONG_CONTEXT
    return args


def wrapper(why: str, processor_kwargs: Mapping[str, object]) -> TaskRule:
    """A wrapper's own processor setting (InternVL's 4 tiles, Ovis2's max_partition): every task of every benchmark,
    the model's one official wrapper being the one its paper published."""
    return rule(("*",), why, processor_kwargs=processor_kwargs)


def hf(
    pretrained: str, note: str, trained_context: int | None, rules: tuple[TaskRule, ...] = (), /, **args: str
) -> Alias:
    """An `hf` alias: the checkpoint, no context cap; its own context back (the checkpoint's) where a benchmark's
    rule truncates to it."""
    return Alias(
        "hf",
        {"pretrained": pretrained, **NO_LIMIT, **args},
        note,
        trained_context,
        rules,
        own_context={"no_context_limit": "false"},
    )


def vllm(
    pretrained: str, note: str, trained_context: int | None, rules: tuple[TaskRule, ...] = (), /, **args: str
) -> Alias:
    """A `vllm` alias (a checkpoint transformers cannot load as an image-text-to-text model): the official vllm
    serve line's length, remote code trusted as the official wrapper trusted it; where a benchmark's rule truncates
    to the model's context, the length vLLM derives from the model's config."""
    return Alias(
        "vllm",
        {
            "pretrained": pretrained,
            "trust_remote_code": "true",
            "max_model_len": LONG_CONTEXT,
            # the checkpoint's generation_config, as the official HF generate applies it (eos tokens, penalties)
            "generation_config": "auto",
            **args,
        },
        note,
        trained_context,
        rules,
        departs=VLLM_LENGTH,
        own_context={"max_model_len": "none"},
    )
