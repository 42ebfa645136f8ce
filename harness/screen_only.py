"""`harness ... --screen_only`: what the run's screen would decide for every request, without loading the model.

A long-context run is worth checking before a GPU is booked: which samples would be recorded `over_length`
or `too_many_images` under the limits the model is given (`context_length` / `max_model_len`, `max_images`,
`max_pixels`, from `--model_args` and the alias), and how long the longest prompts are. The requests are
built exactly as the run builds them (prompt, images, generation settings) and screened by the runner's own
rule; the model is never loaded, so prompts are counted by the rows' figures (text tokens by the build's
counter, each image by the contract's Qwen2-VL rule under `max_pixels`). That is what `vllm` and `openai`
screen with, and for Qwen2-VL/Qwen2.5-VL what their processor counts; `hf` counts with the model's own
processor when it runs, so for other models the figures here are an estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.api import Model, Request, Response
from harness.runner import _screen
from harness.sample_store import OVER_LENGTH, TOO_MANY_IMAGES
from harness.task import RowProblem
from harness.truncation import fit_to_model


def _int_arg(args: dict[str, str], *names: str) -> int | None:
    for name in names:
        value = args.get(name)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"--model_args {name}={value!r}: expected an integer") from None
    return None


class ModelLimits(Model):
    """The limits a backend is given in its `--model_args`, standing in for it during a screen-only pass."""

    name = "screen-only"
    cache_responses = False

    def __init__(self, backend: str, args: dict[str, str]) -> None:
        self.backend = backend
        self.context_length = _int_arg(args, "context_length", "max_model_len")
        self.max_images = _int_arg(args, "max_images", "limit_mm_per_prompt")
        self.max_pixels = _int_arg(args, "max_pixels")

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        return cls(args.get("backend", "hf"), args)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        raise RuntimeError("a screen-only pass generates nothing")


@dataclass
class ScreenedTask:
    task: str
    samples: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    longest: int = 0  # the longest prompt plus max_gen_toks, in counted tokens
    truncated: int = 0  # requests the task's truncation rule cut to fit (`harness.truncation`)
    most_images: int = 0
    first_problem: str = ""

    @property
    def sent(self) -> int:
        return self.samples - sum(self.statuses.values())


def screen_tasks(model: ModelLimits, tasks: Sequence[Any], gen_kwargs: dict[str, Any], seed: int,
                 shard: Any = None, policies: Callable[[Request], Request] | None = None) -> list[ScreenedTask]:
    """Every request of every task (its shard) through the runner's screen."""
    out = []
    for task in tasks:
        settings = task.generation_settings(gen_kwargs, seed)
        result = ScreenedTask(task.name)
        check_tokens = task.has_token_figures
        for doc_id, doc in task.iter_docs():
            if shard is not None and not shard.contains(doc_id):
                continue
            result.samples += 1
            request = task.build_request(doc_id, doc, settings)
            if isinstance(request, Request) and policies is not None:
                request = policies(request)
            if isinstance(request, RowProblem):
                result.statuses["invalid_input"] = result.statuses.get("invalid_input", 0) + 1
                result.first_problem = result.first_problem or request.reason
                continue
            if "truncation" in task.hooks:
                try:
                    request = fit_to_model(request, doc, task.hooks["truncation"], str(task.config.truncation), model,
                                           check_tokens, _screen)
                except (ValueError, KeyError) as err:  # as the runner records it: invalid_input
                    result.statuses["invalid_input"] = result.statuses.get("invalid_input", 0) + 1
                    result.first_problem = result.first_problem or f"{request.sample_id}: truncation: {err}"
                    continue
                result.truncated += request.truncation is not None
            result.longest = max(result.longest, model.prompt_tokens(request) + settings.max_gen_toks)
            result.most_images = max(result.most_images, len(request.images))
            problem = _screen(request, model, check_tokens)
            if problem:
                result.statuses[problem[0]] = result.statuses.get(problem[0], 0) + 1
                result.first_problem = result.first_problem or f"{request.sample_id}: {problem[1]}"
        out.append(result)
    return out


def screen_table(model: ModelLimits, results: Sequence[ScreenedTask]) -> str:
    limit = f"{model.context_length:,}" if model.context_length else "none given"
    images = f"{model.max_images:,}" if model.max_images else "none"
    lines = [f"Screen only ({model.backend}): context limit {limit} tokens, image cap {images}; "
             f"counted as {model.token_rule}.", "",
             "| task | samples | would be sent | over_length | too_many_images | invalid_input | longest prompt + "
             "max_gen_toks | most images | truncated to fit |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.task} | {r.samples} | {r.sent} | {r.statuses.get(OVER_LENGTH, 0)} | "
                     f"{r.statuses.get(TOO_MANY_IMAGES, 0)} | {r.statuses.get('invalid_input', 0)} | {r.longest:,} | "
                     f"{r.most_images} | {r.truncated} |")
    total = sum(r.samples for r in results)
    screened = sum(sum(r.statuses.values()) for r in results)
    lines += ["", f"{total - screened} of {total} samples would be sent to the model; {screened} screened out."]
    for r in results:
        if r.first_problem:
            lines.append(f"- {r.task}: first screened sample: {r.first_problem}")
    if model.context_length is None:
        lines.append("No context limit was given (context_length=N / max_model_len=N): the backend's own default "
                     "applies when it loads, and is not known without loading it.")
    if model.backend == "hf":
        lines.append("hf counts each prompt with the model's processor when it runs: for Qwen2-VL/Qwen2.5-VL that is "
                     "the rule above; for other models these figures are an estimate.")
    return "\n".join(lines)
