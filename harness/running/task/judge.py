"""Judging after generation: a task whose YAML has a `judge:` block has its scored answers read by a second
model (`--judge_model`), and the judge's metrics join the task's before aggregation.

    judge:
      prompts: !function utils.judge_prompts   # (doc, response) -> {stage: prompt}, asked stage by stage
      parse: !function utils.judge_parse       # reply -> the parsed verdict, or None: judging stops there
      score: !function utils.judge_score       # (doc, response, {stage: verdict}) -> {metric: value}
      metrics: [fluency_f1, score]             # what `score` returns (also in `metric_list`; a row may lack one)
      model: gpt-4o-2024-11-20                 # the paper's judge: the judge backend's default `model`
      generation_kwargs: {temperature: 0.1, max_gen_toks: 4096}

A stage's prompt is a string, sent as one user message, or, where the official judge sent several turns (MMLongBench-Doc's
extractor ends on an assistant turn), the messages with their roles: a list of `{"role": ..., "content": str}`.

Stages run in the order `prompts` gives them, all samples of a stage at once (one batch stream through the
judge backend and its response cache; a prompt that several samples share, as identical answers make it, is
sent once), and a sample whose reply does not parse is not asked the next stage:
the official MMLongBench judge skips such a row (`continue`), so it counts in no mean. Each sample's
outcome goes to `judge_<task>.jsonl` beside the journal (stage reached, replies, verdicts, metrics, or the
error); the judge's replies are cached, so a rerun after a kill asks only what it lacks. Without
`--judge_model` the judge metrics are absent and the task reports only its own.

A reply longer than `max_reply_chars` (default `DEFAULT_MAX_REPLY_CHARS`, or the block's own `max_reply_chars:`) is
not parsed: it counts as a reply without a verdict. Official parsers are kept as they are, quirks included, and
some are quadratic in the reply's length (MMLongBench's non-greedy brace search: 200 KB of `{` ran over 300 s);
the cap keeps one hostile or runaway reply from stalling a run, and the results record it (`config.judge`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from harness.api import GenerationSettings, Message, Model, Request, Response, TextPart
from harness.config.task_config import returns_as_declared
from harness.config.yaml_loader import FunctionRef
from harness.errors import TaskConfigError
from harness.models.shared.generation import safe_generate
from harness.running.task.hook import TaskHook, TaskHookError
from harness.running.task.judge_log import JudgedValue

JUDGED = "judged"
UNPARSED = "unparsed"  # a stage's reply had no verdict: left out of the judge metrics, as official
FAILED = "error"  # the judge backend failed on a stage (asked again on a rerun)
DEFAULT_MAX_REPLY_CHARS = 8192  # far above the paper's judge replies (a few hundred words and a JSON object)
ROLES = ("system", "user", "assistant")
JudgePrompt = str | list[dict[str, str]]  # one user message, or the messages with their roles (module doc)


def judge_messages(prompt: JudgePrompt) -> tuple[Message, ...] | None:
    """The messages a stage's prompt sends, or None where it is neither form."""
    if isinstance(prompt, str):
        return (Message("user", (TextPart(prompt),)),)
    if not isinstance(prompt, list) or not prompt:
        return None
    messages = []
    for turn in prompt:
        if not (isinstance(turn, dict) and set(turn) == {"role", "content"} and turn["role"] in ROLES):
            return None
        if not isinstance(turn["content"], str):
            return None
        messages.append(Message(turn["role"], (TextPart(turn["content"]),)))
    return tuple(messages)


def prompt_chars(prompt: JudgePrompt) -> int:
    """The characters a stage's prompt sends (cost estimates count them)."""
    if isinstance(prompt, str):
        return len(prompt)
    return sum(
        len(turn["content"]) for turn in prompt if isinstance(turn, dict) and isinstance(turn.get("content"), str)
    )


@dataclass(frozen=True)
class JudgeSpec:
    prompts: Callable[..., dict[str, JudgePrompt]]
    parse: Callable[[str], Any]
    score: Callable[..., dict[str, float]]
    metrics: tuple[str, ...]
    model: str | None
    settings: GenerationSettings
    max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS

    @classmethod
    def from_config(cls, block: dict[str, Any], where: str, task: str = "") -> JudgeSpec:
        hooks = {}
        for key in ("prompts", "parse", "score"):
            ref = block.get(key)
            if not isinstance(ref, FunctionRef):
                raise TaskConfigError(f"{where}: `judge.{key}` must be a `!function module.fn`")
            hooks[key] = TaskHook(key, task, ref)  # one that raises or returns the wrong type: one line
        metrics = block.get("metrics")
        if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
            raise TaskConfigError(f"{where}: `judge.metrics` must list the metric names `judge.score` returns")
        unknown = sorted(
            set(block) - {"prompts", "parse", "score", "metrics", "model", "generation_kwargs", "max_reply_chars"}
        )
        if unknown:
            raise TaskConfigError(f"{where}: unknown `judge` key(s) {unknown}")
        try:
            settings = GenerationSettings.from_dict(dict(block.get("generation_kwargs") or {}))
        except (TypeError, ValueError) as err:
            raise TaskConfigError(f"{where}: `judge.generation_kwargs`: {err}") from None
        model = block.get("model")
        cap = block.get("max_reply_chars", DEFAULT_MAX_REPLY_CHARS)
        if not (isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1):
            raise TaskConfigError(f"{where}: `judge.max_reply_chars` must be a positive integer, got {cap!r}")
        return cls(
            hooks["prompts"],
            hooks["parse"],
            hooks["score"],
            tuple(metrics),
            str(model) if model else None,
            settings,
            cap,
        )


@dataclass
class JudgedSample:
    sample_id: str
    doc_id: int
    status: str = JUDGED
    stage: str = ""  # the last stage asked
    replies: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, JudgedValue] = field(default_factory=dict)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, {}, "")}


def judge_samples(
    spec: JudgeSpec,
    task_name: str,
    judge: Model,
    samples: Sequence[tuple[str, int, dict[str, Any], str]],
    progress: bool = True,
    usage: list[dict[str, int]] | None = None,
    paid: Callable[[Sequence[Response]], None] | None = None,
    some_rows: frozenset[str] = frozenset(),
) -> list[JudgedSample]:
    """Judge (sample_id, doc_id, doc, response) answers, stage by stage; one `JudgedSample` each, in order; each
    call's reported token usage appended to `usage`; `paid` (`--max_cost`'s budget) told of each batch of replies as it
    comes, and free to stop the run; `some_rows`: the task's metrics a row may lack (`some_rows: true`)."""
    outcomes = [JudgedSample(sid, doc_id) for sid, doc_id, _, _ in samples]
    prompts = [spec.prompts(doc, response) for _, _, doc, response in samples]
    stages = list(prompts[0]) if prompts else []
    for k, sample_prompts in enumerate(prompts):
        if list(sample_prompts) != stages:
            raise TaskConfigError(
                f"task {task_name!r}: judge.prompts gave stages {list(sample_prompts)} for sample "
                f"{samples[k][0]!r} and {stages} for the first"
            )
        for stage, prompt in sample_prompts.items():
            if judge_messages(prompt) is None:
                raise TaskConfigError(
                    f"task {task_name!r}: judge.prompts gave stage {stage!r} of sample {samples[k][0]!r} "
                    "neither a string nor a non-empty list of {role, content} messages (role one of "
                    f"{', '.join(ROLES)}, content a string)"
                )
    alive = list(range(len(samples)))
    bar = tqdm(total=len(alive) * len(stages), desc=f"judge {task_name}", unit="call", disable=not progress)
    with bar:
        for stage in stages:
            stage_prompts = {i: prompts[i][stage] for i in alive}
            replies = _ask(judge, spec, task_name, stage, stage_prompts, outcomes, bar, usage, paid)
            still = [i for i in alive if _read_reply(spec, stage, outcomes[i], replies[i])]
            remaining = len(stages) - stages.index(stage) - 1
            bar.total = (bar.total or 0) - remaining * (len(alive) - len(still))  # a dropped one is asked no more
            bar.refresh()
            alive = still
    for i in alive:
        _score(spec, task_name, samples[i], outcomes[i], some_rows)
    return outcomes


def _ask(
    judge: Model,
    spec: JudgeSpec,
    task_name: str,
    stage: str,
    prompts: dict[int, JudgePrompt],
    outcomes: list[JudgedSample],
    bar: tqdm,
    usage: list[dict[str, int]] | None,
    paid: Callable[[Sequence[Response]], None] | None,
) -> dict[int, Response]:
    """One stage's prompts sent, each distinct prompt once (samples with the same answer and document share their
    judge's reply): each sample's reply."""
    asked: dict[object, int] = {}
    requests: list[Request] = []
    for i, prompt in prompts.items():
        key = _prompt_key(prompt)
        if key not in asked:
            asked[key] = len(requests)
            messages = judge_messages(prompt)
            assert messages is not None  # checked by `judge_samples`
            requests.append(
                Request(
                    task=f"{task_name}:judge",
                    doc_id=outcomes[i].doc_id,
                    sample_id=f"{outcomes[i].sample_id}#judge:{stage}",
                    messages=messages,
                    settings=spec.settings,
                    text_tokens=0,
                    image_tokens=(),
                )
            )
    bar.total = (bar.total or 0) - (len(prompts) - len(requests))
    answers: list[Response] = []
    for batch in judge.batches(requests):
        replies = safe_generate(judge, batch)
        answers += replies
        bar.update(len(batch))
        if paid is not None:
            paid(replies)
    if usage is not None:
        for answer in answers:
            usage.append({k: v for k, v in answer.usage.items() if isinstance(v, int)})
    return {i: answers[asked[_prompt_key(prompt)]] for i, prompt in prompts.items()}


def _prompt_key(prompt: JudgePrompt) -> object:
    """What makes two samples' prompts one request: the string, or the (role, content) turns."""
    return prompt if isinstance(prompt, str) else tuple((turn["role"], turn["content"]) for turn in prompt)


def _read_reply(spec: JudgeSpec, stage: str, outcome: JudgedSample, reply: Response) -> bool:
    """The stage's reply parsed into the sample's verdicts; False where the sample stops here (failed, unparsed)."""
    outcome.stage = stage
    if not reply.ok:
        outcome.status, outcome.error = FAILED, reply.error or ("refused" if reply.refused else "no reply")
        return False
    text = reply.text or ""
    if len(text) > spec.max_reply_chars:  # never handed to a parser that may be quadratic in it
        outcome.replies[stage] = text[:2000]
        outcome.status = UNPARSED
        outcome.error = (
            f"the {stage} reply has {len(text)} characters, over the judge's cap of "
            f"{spec.max_reply_chars} (judge.max_reply_chars): not parsed"
        )
        return False
    outcome.replies[stage] = text
    verdict = spec.parse(text)
    if verdict is None:
        outcome.status = UNPARSED
        return False
    outcome.verdicts[stage] = verdict
    return True


def _score(
    spec: JudgeSpec,
    task_name: str,
    sample: tuple[str, int, dict, str],
    outcome: JudgedSample,
    some_rows: frozenset[str],
) -> None:
    """The sample's metrics from its verdicts, as the task's `judge.score` gives them."""
    _, _, doc, response = sample
    try:
        metrics = spec.score(doc, response, outcome.verdicts)
    except TaskHookError as err:  # a verdict without the expected fields, as the scorer says it
        cause = err.cause
        if not isinstance(cause, KeyError | TypeError | ValueError | ZeroDivisionError):
            raise
        outcome.status, outcome.error = UNPARSED, f"{type(cause).__name__}: {cause}"
        return
    # Each returned metric is declared, and each declared one returned unless the task declares it `some_rows`
    # (MMLongBench's `score_nonempty`, none on an empty answer: the row is left out of that metric's average).
    if not metrics or not returns_as_declared(metrics, spec.metrics, some_rows):
        raise TaskConfigError(
            f"task {task_name!r}: judge.score returned {sorted(metrics)}; judge.metrics declares {sorted(spec.metrics)}"
        )
    outcome.metrics = {k: _judged_value(v) for k, v in metrics.items()}


def _judged_value(value: float | list[float] | tuple[float, ...]) -> JudgedValue:
    """A judge metric's value as the judge log keeps it: a number, or a list of numbers where the task's own
    aggregation reads a row by several fields (a generalized F1's score and whether gold and prediction are answers),
    as `process_results` may return them."""
    if isinstance(value, list | tuple):
        return [float(item) for item in value]
    return float(value)


def judge_counts(statuses: Sequence[str]) -> dict[str, int]:
    """The results' `sample_counts` of a judged task: its scored samples' judge outcomes, by status."""
    return {
        "n_judged": statuses.count(JUDGED),
        "n_judge_unparsed": statuses.count(UNPARSED),
        "n_judge_error": statuses.count(FAILED),
    }


class Judges:
    """A run's judges: one backend per judge model its judged tasks ask for, so tasks of two benchmarks (or of two
    versions of one: MMLongBench V1.1's Summ asks GPT-4o, its DocVQA Doubao-Seed-1.8) are each judged by their own
    `judge.model` in one run. `model_of`: task -> the model its judge is opened with (None: the judge arguments as
    given, where the user named the model or the backend serves no named model). Each is opened once, at once (so
    bad judge arguments stop the run before it starts), and closed together."""

    def __init__(self, open_judge: Callable[[str | None], Model], model_of: Mapping[str, str | None]) -> None:
        self.model_of = dict(model_of)
        self.models: dict[str | None, Model] = {}
        try:
            for name in dict.fromkeys(self.model_of.values()):
                self.models[name] = open_judge(name)
        except BaseException:
            self.close()
            raise

    def for_task(self, task: str) -> Model:
        return self.models[self.model_of[task]]

    def served_models(self) -> dict[str, str | None]:
        """task -> the model name its judge served (`served_model` of its identity), for pricing its calls."""
        served = {name: model.identity().get("served_model") for name, model in self.models.items()}
        return {task: found if isinstance(found := served[name], str) else None for task, name in self.model_of.items()}

    def tasks_of(self, name: str | None) -> list[str]:
        return [task for task, model in self.model_of.items() if model == name]

    def close(self) -> None:
        for model in self.models.values():
            model.close()
