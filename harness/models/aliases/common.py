"""What the family modules of the alias table share: the `hf` alias every open model becomes, and the limits."""

from __future__ import annotations

from dataclasses import replace

from harness.inputs.input_policy import TaskRule
from harness.models.aliases.alias import Alias, PaperRun

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


# MileBench's own rule truncates an input from the left to the model's context (`tasks/milebench/truncation.py`): an
# hf model there screens against its checkpoint's context (or the one its MileBench run names).
MILEBENCH_CONTEXT = {"milebench": {"no_context_limit": "false"}}


def mmlb(name: str, ran: str, departs: str = "", **args: str) -> PaperRun:
    return PaperRun("mmlongbench", name, ran, departs, dict(args))


def milebench(name: str, ran: str, departs: str = "", **args: str) -> PaperRun:
    return PaperRun("milebench", name, ran, departs, dict(args))


def mmneedle(name: str, ran: str, departs: str = "", **args: str) -> PaperRun:
    return PaperRun("mmneedle", name, ran, departs, dict(args))


def hf(
    pretrained: str,
    note: str,
    trained_context: int | None,
    *runs: PaperRun,
    rules: tuple[TaskRule, ...] = (),
    **args: str,
) -> Alias:
    """An `hf` alias: the checkpoint, no context cap, MileBench's context restored for MileBench's rule."""
    return Alias(
        "hf",
        {"pretrained": pretrained, **NO_LIMIT, **args},
        note,
        trained_context,
        runs,
        rules,
        per_benchmark=MILEBENCH_CONTEXT,
    )


def vllm(
    pretrained: str,
    note: str,
    trained_context: int | None,
    *runs: PaperRun,
    rules: tuple[TaskRule, ...] = (),
    **args: str,
) -> Alias:
    """A `vllm` alias (a checkpoint transformers cannot load as an image-text-to-text model): the official vllm
    serve line's length, remote code trusted as the official wrapper trusted it."""
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
        tuple(replace(run, departs="; ".join(filter(None, (run.departs, VLLM_LENGTH)))) for run in runs),
        rules,
        per_benchmark={"milebench": {"max_model_len": "none"}},  # what vLLM derives from the model's config
    )
