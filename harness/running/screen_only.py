"""`harness ... --screen_only`: what the run would decide for every request, without loading the model.

A long-context run is worth checking before a GPU is booked: which samples would be recorded `over_length`
or `too_many_images` under the limits the model is given (`context_length` / `max_model_len`, `max_images`,
`max_pixels`, from `--model_args` and the alias), which ones the task's truncation rule would cut, and how long
the longest prompts are. Requests are built, cut and screened by the runner's own code (`request_building.RequestBuilder`,
`sample_records.screen`); only the model is replaced, by a stand-in that counts each prompt the way the run's backend
will, with nothing loaded that counting does not need (`harness.models.shared.screen_model.ScreenModel`, each backend's own
in its package: `BackendSpec.screen`). `hf` and `vllm` count with the checkpoint's processor where it loads offline
(exact), else by the model family's rule (an estimate); `openai` by the API model's family rule (an estimate: the
server counts for itself); a backend that loads nothing to count (the baselines) stands in itself.

The table says per task whether its counts are exact or estimates, and an estimate names its rule; no model is
silently counted by another's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.api import INVALID_INPUT, OVER_LENGTH, TOO_MANY_IMAGES, Request
from harness.models.registry import backend_spec, get_model_class
from harness.models.shared.api_client.prompt_cache import PromptShape, prompt_shape
from harness.models.shared.scheduling.prefix_order import PromptKey, prompt_key
from harness.models.shared.screen_model import ScreenModel
from harness.running.request_building import RequestBuilder
from harness.running.sample_records import screen
from harness.running.sharding import Shard
from harness.running.task.judge import prompt_chars
from harness.running.task.requests import RowProblem
from harness.running.task.task import Task

SENT = "sent"  # a verdict: the run would send the request to the model


@dataclass(frozen=True)
class Shaped:
    """One request the run would send, as the order and the cache see it (`cost_estimate.cache_tallies`)."""

    doc_id: int
    sample_id: str
    tokens: int  # its prompt as the screen counts it
    shape: PromptShape
    key: PromptKey | None  # the cache order's key, where the run takes that order


def shaped(request: Request, tokens: int, order: str) -> Shaped:
    key = prompt_key(request) if order == "cache" else None
    return Shaped(request.doc_id, request.sample_id, tokens, prompt_shape(request), key)


def itself(backend: str, args: dict[str, str]) -> ScreenModel:
    """The stand-in of a backend that loads nothing to count (the baselines): the backend itself, built."""
    model = get_model_class(backend).from_args(args)
    return ScreenModel(
        backend,
        None,
        count=model.prompt_tokens,
        exact=lambda r: True,
        rule=f"{model.token_rule}, as the run counts",
        context_length=model.facts.context_length,
        max_images=model.facts.max_images,
        max_pixels=model.facts.max_pixels,
    )


def screen_model(backend: str, args: dict[str, str]) -> ScreenModel:
    """The stand-in for `backend` given `--model_args` `args` (`BackendSpec.screen`, or the backend itself where it
    loads nothing to count); a `ValueError` names a bad argument."""
    make = backend_spec(backend).screen
    return make(args) if make is not None else itself(backend, args)


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
    judge_chars: int = 0  # the characters of the judge's prompts for this sample, the answer left empty
    judge_stages: int = 0  # the judge's stages (calls) for this sample, where the task has a judge
    shaped: Shaped | None = None  # its prompt as a provider's cache sees it, where the backend asks one to cache


def screen_task(
    model: ScreenModel,
    task: Any,
    gen_kwargs: dict[str, Any],
    seed: int | None,
    shard: Any = None,
    policies: Callable[[Request], Request] | None = None,
) -> Iterator[Verdict]:
    """Every request of the task (its shard), built, cut and screened as the runner does."""
    requests = RequestBuilder(model, policies)  # the runner's own request building: input policies, truncation
    settings = task.generation_settings(gen_kwargs, seed)
    for doc_id, doc in task.iter_docs():
        if shard is not None and not shard.contains(doc_id):
            continue
        request = requests.build(task, doc_id, doc, settings)
        if isinstance(request, RowProblem):
            yield Verdict(request.sample_id, INVALID_INPUT, request.reason)
            continue
        problem = screen(request, model, task.has_token_figures) or model.refusal(request)
        judge_prompts = task.judge.prompts(doc, "") if task.judge is not None and not problem else {}
        tokens = model.prompt_tokens(request)
        yield Verdict(
            request.sample_id,
            problem[0] if problem else SENT,
            problem[1] if problem else "",
            tokens,
            len(request.images),
            request.truncation,
            model.exact(request),
            sum(prompt_chars(p) for p in judge_prompts.values()),
            len(judge_prompts),
            shaped(request, tokens, model.facts.request_order)
            if model.prompt_cache is not None and not problem
            else None,
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
    max_gen_toks: int = 0
    sent_prompt_tokens: int = 0  # the counted prompt tokens of the requests that would be sent
    sent_prompts: list[int] = field(default_factory=list)  # each one's, priced one by one (a long-context rate)
    sent_images: int = 0
    judge_chars: int = 0  # the judge's prompts of the sent samples, their answers left empty
    judge_calls: int = 0
    judge_prompt_chars: list[int] = field(default_factory=list)  # each judge call's (its sample's, over its stages)
    judge_max_gen_toks: int = 0
    judge_model: str | None = None  # the task's own judge (its `judge.model`)
    stand_in: str | None = None  # the offline stand-in the task's build was made from (`stand_in`), else None
    shapes: list[Shaped] = field(default_factory=list)  # the sent prompts as a provider's cache sees them, where asked

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
        """One sample's verdict into the sums (and its prompt's tokens, which it is priced by)."""
        self.samples += 1
        if verdict.status != SENT:
            self.statuses[verdict.status] = self.statuses.get(verdict.status, 0) + 1
            self.first_problem = self.first_problem or (
                verdict.reason if verdict.status == INVALID_INPUT else f"{verdict.sample_id}: {verdict.reason}"
            )
        if verdict.prompt_tokens is None:
            return
        if verdict.shaped is not None:
            self.shapes.append(verdict.shaped)
        if verdict.status == SENT:
            self.sent_prompt_tokens += verdict.prompt_tokens
            self.sent_prompts.append(verdict.prompt_tokens)
            self.sent_images += verdict.images
            self.judge_chars += verdict.judge_chars
            self.judge_calls += verdict.judge_stages
            stages = verdict.judge_stages
            self.judge_prompt_chars += [
                verdict.judge_chars // stages + (i < verdict.judge_chars % stages) for i in range(stages)
            ]
        self.counted += 1
        self.exact += verdict.exact
        self.truncated += verdict.truncation is not None
        self.longest = max(self.longest, verdict.prompt_tokens + max_gen_toks)
        self.shortest_prompt = min(
            self.shortest_prompt if self.shortest_prompt is not None else verdict.prompt_tokens, verdict.prompt_tokens
        )
        self.longest_prompt = max(self.longest_prompt, verdict.prompt_tokens)
        self.most_images = max(self.most_images, verdict.images)


def stand_in(task: Task) -> str | None:
    """`BUILD (SOURCE)` where the task's build was made from an offline stand-in (synthetic images, a fixture release),
    as its manifest records it (`harness.inputs.data`: the results' `datasets` entry); None for the real data."""
    info = task.data.info if task.data is not None else {}
    source, caveats = info.get("source"), info.get("caveats")
    source = source if isinstance(source, dict) else {}
    if not (isinstance(caveats, dict) and "synthetic" in caveats) and source.get("kind") not in (
        "synthetic",
        "fixture",
    ):
        return None
    return f"{task.config.dataset_path} built from {source.get('spec') or source.get('kind') or 'synthetic'}"


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
        result = ScreenedTask(task.name, max_gen_toks=max_gen_toks, stand_in=stand_in(task))
        if task.judge is not None:
            result.judge_max_gen_toks, result.judge_model = task.judge.settings.max_gen_toks, task.judge.model
        with task.rows():  # read again for this task only where the run let go of them (`Task.unload`)
            for verdict in screen_task(model, task, gen_kwargs, seed, shard, policies):
                result.add(verdict, max_gen_toks)
        out.append(result)
    return out


def screen_table(model: ScreenModel, results: Sequence[ScreenedTask]) -> str:
    limit = f"{model.facts.context_length:,} tokens" if model.facts.context_length else "none given"
    if model.context_note:
        limit += f" ({model.context_note})"
    images = f"{model.facts.max_images:,}" if model.facts.max_images else "none"
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
    prompts = _token_range(results)
    lines += ["", f"{total - screened} of {total} samples would be sent to the model; {screened} screened out"]
    lines[-1] += f"; prompts of {prompts} tokens." if prompts else "."
    stand_ins = [r for r in results if r.stand_in]
    if stand_ins:
        which = "every task" if len(stand_ins) == len(results) else f"{len(stand_ins)} of the {len(results)} tasks"
        builds = "; ".join(dict.fromkeys(r.stand_in for r in stand_ins if r.stand_in))
        lines.append(
            f"The data of {which} is an offline stand-in, not the benchmark's ({builds}): its prompts are "
            f"{_token_range(stand_ins) or 'not counted'} tokens, whatever length a task's name says, and a run on it "
            "shows the pipeline works, not how good a model is."
        )
    for r in results:
        if r.first_problem:
            lines.append(f"- {r.task}: first screened sample: {r.first_problem}")
    if any(r.exact < r.counted for r in results):
        lines.append(
            f"Counts marked estimate are not the model's own, because {model.estimate or 'an image is of unknown size'}"
            "; the run counts with the model itself and may decide otherwise."
        )
    return "\n".join(lines)


def _token_range(results: Sequence[ScreenedTask]) -> str:
    """The range of the prompts counted across `results` (`12-4,388`), or "" where none was counted."""
    counted = [r for r in results if r.shortest_prompt is not None]
    if not counted:
        return ""
    return f"{min(r.shortest_prompt or 0 for r in counted):,}-{max(r.longest_prompt for r in counted):,}"


def policy_table(alias: str, described: Mapping[str, Mapping[str, object]]) -> str:
    """The input policies an alias applies to the run's tasks (`RunPolicies.describe`), as one table: one row per
    distinct policy, with the tasks it applies to."""
    rows: dict[str, list[str]] = {}
    for task, policy in described.items():
        rows.setdefault(_policy_words(policy), []).append(task)
    lines = [
        f"Input policies of {alias} (its paper's settings for these tasks, applied to every request before the screen):",
        "",
        "| input policy | tasks |",
        "|---|---|",
    ]
    lines += [f"| {words} | {len(tasks)}: {', '.join(tasks)} |" for words, tasks in rows.items()]
    return "\n".join(lines)


def _policy_words(policy: Mapping[str, object]) -> str:
    parts = []
    if policy.get("keep_last_images") is not None:
        parts.append(f"keep the last {policy['keep_last_images']:,} images")
    if policy.get("image_scale") is not None:
        parts.append(f"images scaled by {policy['image_scale']}")
    if policy.get("max_image_side") is not None:
        parts.append(f"images at most {policy['max_image_side']:,} px a side")
    processor = policy.get("processor_kwargs")
    if isinstance(processor, Mapping) and processor:
        parts.append("processor " + ", ".join(f"{k}={v}" for k, v in processor.items()))
    parts += [f"{k}={v}" for k, v in policy.items() if k not in POLICY_WORDS]  # a policy added since, as it is
    return "; ".join(parts)


POLICY_WORDS = ("keep_last_images", "image_scale", "max_image_side", "processor_kwargs")
