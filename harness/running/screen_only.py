"""`harness ... --screen_only`: what the run would decide for every request, without loading the model.

A long-context run is worth checking before a GPU is booked: which samples would be recorded `over_length`
or `too_many_images` under the limits the model is given (`context_length` / `max_model_len`, `max_images`,
`max_pixels`, from `--model_args` and the alias), which ones the task's truncation rule would cut, and how long
the longest prompts are. Requests are built, cut and screened by the runner's own code (`Runner._build`,
`sample_records.screen`); only the model is replaced, by a stand-in that counts each prompt the way the run's backend
will, with nothing loaded that counting does not need:

- `hf`: the checkpoint's processor and config, from a local folder or the local Hub cache, offline, never the
  weights; counted by `ProcessorCount`, the very code the backend counts with when it runs (exact). A checkpoint
  that is not available offline is counted by its family's rule (`harness.models.families`): an estimate.
- `vllm`: the backend's own count (`VLLMModel.prompt_tokens`, the same function the run screens with): the
  checkpoint's hf processor, as vLLM counts, loaded offline like `hf`'s (exact); where it cannot be loaded
  offline, the family's rule plus the backend's `length_margin` (an estimate).
- `openai`: the API model's family rule: an estimate (the server counts for itself).
- any other backend (the baselines): the backend itself, which loads nothing.

The table says per task whether its counts are exact or estimates, and an estimate names its rule; no model is
silently counted by another's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from harness.api import INVALID_INPUT, OVER_LENGTH, TOO_MANY_IMAGES, Model, Request, Response
from harness.models.args import settings_from_args
from harness.models.families import Family, estimated_prompt_tokens, family_of
from harness.running.runner import Runner, RunOptions
from harness.running.sample_records import screen
from harness.running.sharding import Shard
from harness.running.task import RowProblem, Task

SENT = "sent"  # a verdict: the run would send the request to the model


class ScreenModel(Model):
    """Stands in for the run's backend during a screen-only pass: its limits and its way of counting a prompt."""

    name = "screen-only"
    cache_responses = False

    def __init__(
        self,
        backend: str,
        checkpoint: str | None,
        *,
        count: Callable[[Request], int],
        rule: str,
        exact: Callable[[Request], bool] = lambda request: False,
        estimate: str = "",
        context_length: int | None = None,
        context_note: str = "",
        max_images: int | None = None,
        max_pixels: int | None = None,
    ) -> None:
        self.backend = backend
        self.checkpoint = checkpoint
        self._count = count
        self._exact = exact
        self.rule = rule
        self.estimate = estimate  # why a count is an estimate, when it is
        self.context_length = context_length
        self.context_note = context_note  # where the limit comes from, or why it is not known
        self.max_images = max_images
        self.max_pixels = max_pixels

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        raise TypeError("a screen-only stand-in is made by `screen_model(backend, args)`")

    @property
    def token_rule(self) -> str:
        return self.rule

    def prompt_tokens(self, request: Request) -> int:
        return self._count(request)

    def exact(self, request: Request) -> bool:
        """Whether `prompt_tokens` is the model's own count of this request (else an estimate)."""
        return self._exact(request)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        raise RuntimeError("a screen-only pass generates nothing")


def _by_family(
    backend: str,
    name: str | None,
    family: Family | None,
    why: str,
    *,
    settings: Mapping[str, Any] | None = None,
    context_length: int | None = None,
    context_note: str = "",
    max_images: int | None = None,
    max_pixels: int | None = None,
) -> ScreenModel:
    """A stand-in that counts by the family's rule (an estimate), or by the rows' rule, said so, without one."""
    from builders.core.contract import TOKEN_RULE

    if family is not None:
        rule = f"the rows' text_tokens + each image by the {family.name} family's rule: {family.rule}"
    else:
        rule = (
            f"the rows' text_tokens + each image by the rows' own rule ({TOKEN_RULE}): no family rule is known "
            f"for {name or 'an unnamed model'}"
        )
    return ScreenModel(
        backend,
        name,
        count=lambda r: estimated_prompt_tokens(r, family, max_pixels, settings),
        rule=rule,
        estimate=why,
        context_length=context_length,
        context_note=context_note,
        max_images=max_images,
        max_pixels=max_pixels,
    )


class _Limits(TypedDict):
    max_images: int | None
    max_pixels: int | None


def _hf(args: dict[str, str]) -> ScreenModel:
    from harness.models.hf_counting import ProcessorCount, load_failure
    from harness.models.hf_settings import HFSettings, context_limit
    from harness.models.prompt_style import style_named

    # Unlike the run, a screen may name no checkpoint: it is then counted by the rows' rule, and says so.
    settings = settings_from_args(HFSettings, {"pretrained": "", **args}, "hf")
    limits = _Limits(max_images=settings.max_images, max_pixels=settings.max_pixels)
    unlimited = "no_context_limit: every prompt is sent, however long" if settings.no_context_limit else ""
    default = "" if settings.context_length else "the run takes the checkpoint's max_position_embeddings"
    unknown_context = unlimited or default
    if not settings.pretrained:
        return _by_family(
            "hf",
            None,
            None,
            "no checkpoint named (pretrained=...)",
            context_length=context_limit(settings, None),
            context_note=unknown_context,
            **limits,
        )
    try:
        count = ProcessorCount.load(
            settings.pretrained,
            revision=settings.revision,
            trust_remote_code=settings.trust_remote_code,
            max_pixels=settings.max_pixels,
            offline=True,
            image_only=settings.processor == "image_only",
            style=style_named(settings.prompt_style),
        )
    except Exception as err:  # whatever keeps the processor from loading offline: the family's estimate, and why
        why = load_failure(settings.pretrained, err, offline=True)
        return _by_family(
            "hf",
            settings.pretrained,
            family_of(settings.pretrained),
            why,
            context_length=context_limit(settings, None),
            context_note=unknown_context,
            **limits,
        )
    return ScreenModel(
        "hf",
        settings.pretrained,
        count=count.prompt_tokens,
        exact=count.exact,
        rule=count.token_rule,
        estimate=count.estimated,
        context_length=context_limit(settings, count.context_length),
        context_note=unlimited or ("" if settings.context_length else "the checkpoint's max_position_embeddings"),
        **limits,
    )


def _vllm(args: dict[str, str]) -> ScreenModel:
    from harness.models.vllm_engine.backend import VLLMModel
    from harness.models.vllm_engine.settings import ARG_ALIASES, VLLMSettings

    settings = settings_from_args(VLLMSettings, args, "vllm", aliases=ARG_ALIASES)
    # The backend's own count, the run's code path; its engine is built on the first generate, never here.
    backend = VLLMModel(settings, count_online=False)
    count = backend.count
    if count.processor is None:
        estimate = count.unavailable
    elif settings.tokenizer is not None:
        estimate = f"the engine tokenizes with tokenizer={settings.tokenizer}, counted with the checkpoint's own"
    else:
        estimate = count.processor.estimated
    return ScreenModel(
        "vllm",
        settings.pretrained,
        count=backend.prompt_tokens,
        exact=backend.exact,
        rule=backend.token_rule,
        estimate=estimate,
        context_length=settings.max_model_len,
        context_note="" if settings.max_model_len else "vLLM derives one from the model config",
        max_images=settings.max_images,
        max_pixels=settings.max_pixels,
    )


def _api(args: dict[str, str]) -> ScreenModel:
    from harness.models.openai_chat import OpenAIChatSettings

    settings = settings_from_args(OpenAIChatSettings, args, "openai", aliases={"pretrained": "model"})
    detail = {"image_detail": settings.image_detail} if settings.image_detail else {}
    return _by_family(
        "openai",
        settings.model,
        family_of(settings.model),
        f"{settings.model} is an API model: its server counts the prompt",
        settings=detail,
        context_length=settings.context_length,
        context_note="" if settings.context_length else "pass context_length=N to screen against one",
        max_images=settings.max_images,
        max_pixels=settings.max_pixels,
    )


def _itself(backend: str, args: dict[str, str]) -> ScreenModel:
    from harness.models.registry import get_model_class

    model = get_model_class(backend).from_args(args)  # a baseline: nothing to load
    return ScreenModel(
        backend,
        None,
        count=model.prompt_tokens,
        exact=lambda r: True,
        rule=f"{model.token_rule}, as the run counts",
        context_length=model.context_length,
        max_images=model.max_images,
        max_pixels=model.max_pixels,
    )


def screen_model(backend: str, args: dict[str, str]) -> ScreenModel:
    """The stand-in for `backend` given `--model_args` `args`; a `ValueError` names a bad argument."""
    makers = {"hf": _hf, "vllm": _vllm, "openai": _api}
    return makers[backend](args) if backend in makers else _itself(backend, args)


@dataclass(frozen=True)
class Verdict:
    """What the run would do with one sample."""

    sample_id: str
    status: str  # SENT, or the status the run records instead: over_length, too_many_images, invalid_input
    reason: str = ""
    prompt_tokens: int | None = None  # as the run counts the request it would send (None: no request)
    images: int = 0
    truncation: dict[str, Any] | None = None  # what the task's truncation rule dropped, as the run records it
    exact: bool = False  # whether `prompt_tokens` is the model's own count


def screen_task(
    model: ScreenModel,
    task: Any,
    gen_kwargs: dict[str, Any],
    seed: int | None,
    shard: Any = None,
    policies: Callable[[Request], Request] | None = None,
) -> Iterator[Verdict]:
    """Every request of the task (its shard), built, cut and screened as the runner does."""
    runner = Runner(model, RunOptions(policies=policies))  # its own request building: input policies, truncation
    settings = task.generation_settings(gen_kwargs, seed)
    for doc_id, doc in task.iter_docs():
        if shard is not None and not shard.contains(doc_id):
            continue
        request = runner._build(task, doc_id, doc, settings)
        if isinstance(request, RowProblem):
            yield Verdict(request.sample_id, INVALID_INPUT, request.reason)
            continue
        problem = screen(request, model, task.has_token_figures)
        yield Verdict(
            request.sample_id,
            problem[0] if problem else SENT,
            problem[1] if problem else "",
            model.prompt_tokens(request),
            len(request.images),
            request.truncation,
            model.exact(request),
        )


@dataclass
class ScreenedTask:
    task: str
    samples: int = 0
    statuses: dict[str, int] = field(default_factory=dict)  # samples per status other than SENT
    longest: int = 0  # the longest prompt plus max_gen_toks, in counted tokens
    shortest_prompt: int | None = None  # the token range of the prompts counted, max_gen_toks not included
    longest_prompt: int = 0
    truncated: int = 0  # requests the task's truncation rule cut to fit (`harness.inputs.truncation`)
    most_images: int = 0
    counted: int = 0  # requests counted
    exact: int = 0  # of them, counted as the model itself counts
    first_problem: str = ""

    @property
    def sent(self) -> int:
        return self.samples - sum(self.statuses.values())

    @property
    def counting(self) -> str:
        if not self.counted:
            return "-"
        if self.exact == self.counted:
            return "exact"
        return "estimate" if not self.exact else f"exact for {self.exact} of {self.counted}"

    @property
    def token_range(self) -> str:
        if self.shortest_prompt is None:
            return "-"
        return f"{self.shortest_prompt:,}-{self.longest_prompt:,}"

    def add(self, verdict: Verdict, max_gen_toks: int) -> None:
        """One sample's verdict into the sums; nothing of it is kept."""
        self.samples += 1
        if verdict.status != SENT:
            self.statuses[verdict.status] = self.statuses.get(verdict.status, 0) + 1
            self.first_problem = self.first_problem or (
                verdict.reason if verdict.status == INVALID_INPUT else f"{verdict.sample_id}: {verdict.reason}"
            )
        if verdict.prompt_tokens is None:
            return
        self.counted += 1
        self.exact += verdict.exact
        self.truncated += verdict.truncation is not None
        self.longest = max(self.longest, verdict.prompt_tokens + max_gen_toks)
        self.shortest_prompt = min(
            self.shortest_prompt if self.shortest_prompt is not None else verdict.prompt_tokens, verdict.prompt_tokens
        )
        self.longest_prompt = max(self.longest_prompt, verdict.prompt_tokens)
        self.most_images = max(self.most_images, verdict.images)


def screen_tasks(
    model: ScreenModel,
    tasks: Sequence[Task],
    gen_kwargs: dict[str, Any],
    seed: int | None,
    shard: Shard | None = None,
    policies: Callable[[Request], Request] | None = None,
) -> list[ScreenedTask]:
    """Every task's verdicts, summed up as they come: memory holds one task's rows and one request at a time."""
    out = []
    for task in tasks:
        max_gen_toks = task.generation_settings(gen_kwargs, seed).max_gen_toks
        result = ScreenedTask(task.name)
        with task.rows():  # read again for this task only where the run let go of them (`Task.unload`)
            for verdict in screen_task(model, task, gen_kwargs, seed, shard, policies):
                result.add(verdict, max_gen_toks)
        out.append(result)
    return out


def screen_table(model: ScreenModel, results: Sequence[ScreenedTask]) -> str:
    limit = f"{model.context_length:,} tokens" if model.context_length else "none given"
    if model.context_note:
        limit += f" ({model.context_note})"
    images = f"{model.max_images:,}" if model.max_images else "none"
    name = f" {model.checkpoint}" if model.checkpoint else ""
    lines = [
        f"Screen only ({model.backend}{name}): context limit {limit}, image cap {images}.",
        f"Counted as {model.token_rule}.",
        "",
        "| task | samples | would be sent | over_length | too_many_images | invalid_input | longest prompt + "
        "max_gen_toks | most images | truncated to fit | counted | prompt tokens (min-max) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.task} | {r.samples} | {r.sent} | {r.statuses.get(OVER_LENGTH, 0)} | "
            f"{r.statuses.get(TOO_MANY_IMAGES, 0)} | {r.statuses.get(INVALID_INPUT, 0)} | {r.longest:,} | "
            f"{r.most_images} | {r.truncated} | {r.counting} | {r.token_range} |"
        )
    total = sum(r.samples for r in results)
    screened = sum(sum(r.statuses.values()) for r in results)
    lines += ["", f"{total - screened} of {total} samples would be sent to the model; {screened} screened out."]
    for r in results:
        if r.first_problem:
            lines.append(f"- {r.task}: first screened sample: {r.first_problem}")
    if any(r.exact < r.counted for r in results):
        lines.append(
            f"Counts marked estimate are not the model's own: {model.estimate or 'an image of unknown size'}. "
            "The run may decide otherwise where an estimate is off."
        )
    return "\n".join(lines)
