"""lm-eval's and lmms-eval's model names and arguments, as the backends here read them.

A command line copied from lm-eval (`--model hf-multimodal`, `vllm-vlm`, `local-chat-completions`,
`openai-chat-completions`) or lmms-eval (`--model llava_hf`, `qwen2_5_vl`, `vllm`, `openai_compatible`) runs here.
Each backend declares, in its own package, the names that stand for it (`BackendSpec.known_as`: the name and whose it
is) and what becomes of the other frameworks' model arguments it does not take itself (`BackendSpec.foreign_args`):

- renamed to its own (`max_length=4096` is `context_length=4096` to `hf`, `max_model_len=4096` to `vllm`);
- read as nothing, said in one line with the reason (`use_cache=True`: generation always keeps its KV cache);
- refused in one line saying what to write instead (`batch_size=8` in `--model_args`: write `--batch_size 8`).

A backend's own argument is never in its table (`tests/harness/test_lm_eval_command_lines.py` checks it), so an
argument of ours always means what it means here, whichever name chose the backend. `translate` applies a table to one
`--model_args`; `harness.run.plan` calls it for every run and prints its lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.models.facts.args import FALSE, TRUE
from harness.redact import is_secret_name

LM_EVAL = "lm-eval"
LMMS_EVAL = "lmms-eval"


class Refused(ValueError):
    """A foreign argument (or its value) that has no meaning here; the message says what to write instead."""


@dataclass(frozen=True)
class ForeignArg:
    """What one of lm-eval's or lmms-eval's model arguments becomes for a backend here: `read(value)` gives the
    backend's own arguments it stands for (empty: none, and `why` says why), or raises `Refused` saying what to write
    instead."""

    read: Callable[[str], dict[str, str]]
    why: str = ""


def truthy(value: str) -> bool:
    """lm-eval's booleans (`True`, `false`, `1`); a value that is neither is refused by the caller's own check."""
    lowered = value.strip().lower()
    if lowered not in TRUE | FALSE:
        raise Refused(f"expected True or False, got {value!r:.40}")
    return lowered in TRUE


def renamed(ours: str, convert: Callable[[str], str] = str) -> ForeignArg:
    """Read as the backend's own argument `ours` (its value through `convert`)."""
    return ForeignArg(lambda value: {ours: convert(value)})


def refused(instead: str) -> ForeignArg:
    """Refused whatever its value: `instead` says what to write here."""

    def read(value: str) -> dict[str, str]:
        raise Refused(instead)

    return ForeignArg(read)


def ignored(why: str) -> ForeignArg:
    """Read as nothing, whatever its value (it changes nothing here: `why`)."""
    return ForeignArg(lambda value: {}, why)


def only_when(expected: bool, why: str, instead: str) -> ForeignArg:
    """A switch that is read as nothing at `expected` (what always happens here: `why`), refused otherwise (`instead`
    says what to write)."""

    def read(value: str) -> dict[str, str]:
        if truthy(value) != expected:
            raise Refused(instead)
        return {}

    return ForeignArg(read, why)


def when_on(ours: Mapping[str, str], why_off: str) -> ForeignArg:
    """A switch that, on, becomes the backend's own arguments `ours`; off, it is read as nothing (`why_off`)."""
    return ForeignArg(lambda value: dict(ours) if truthy(value) else {}, why_off)


# What several backends read alike.
VIDEO_ONLY = ignored("it sets how video is sampled, and no task here sends video")
GEN_TOKENS = refused("the answer's length is a generation setting here: write --gen_kwargs max_gen_toks=N")
THINKING = refused(
    "a reasoning model's thinking is taken out of its answer by --reasoning_tags here "
    '(--reasoning_tags \'[["<think>", "</think>"]]\', or default)'
)
SYSTEM_PROMPT = refused("a system turn before every prompt is a flag here: write --system_instruction TEXT")
NO_VIDEO_FIRST = only_when(
    False,
    "each image is sent where the task's prompt places it, as the paper's code did",
    "images are sent where the task's prompt places them, as the paper's code did; drop image_first",
)
INTERLEAVED = only_when(
    True,
    "each image is sent where the task's prompt places it, as the paper's code did",
    "images are sent where the task's prompt places them (interleaved with the text), as the paper's code did; "
    "drop the argument",
)


def translate(table: Mapping[str, ForeignArg], given: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """`given` (one `--model_args`) as the backend whose `table` it is takes it, and one line for each argument read
    otherwise (what it became, or why it changes nothing). An argument refused raises `Refused` with one line saying
    what to write instead."""
    out: dict[str, str] = {}
    lines: list[str] = []
    for key, value in given.items():
        foreign = table.get(key)
        if foreign is None:
            out[key] = value
            continue
        shown = key if is_secret_name(key) else f"{key}={value}"
        try:
            became = foreign.read(value)
        except Refused as err:
            raise Refused(f"--model_args {shown}: {err}") from None
        clash = [ours for ours in became if ours in given or ours in out]
        if clash:
            raise Refused(f"--model_args {shown} and {clash[0]}=... say the same thing here: give {clash[0]} only")
        out.update(became)
        if became:
            read_as = ", ".join(k if is_secret_name(k) else f"{k}={v}" for k, v in became.items())
            lines.append(f"--model_args {shown}: read as {read_as} here")
        else:
            lines.append(f"--model_args {shown}: changes nothing here: {foreign.why}")
    return out, lines
