"""Each sample's journal record (`harness.running.journal.journal_file.SampleRecord`): made from its request and the model's
response, or from the screen that kept it from the model, with its status (`harness.api`'s statuses), its metrics
once scored, and what it was asked, whatever the flags (the prompt as sent, its images' hashes and sizes). With
reasoning tags, the answer scored is the response without its thinking (`harness.models.facts.reasoning`), and the whole
response is kept as `raw_response`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict, cast

from harness.api import (
    EMPTY,
    ERROR,
    OK,
    OVER_LENGTH,
    REFUSED,
    SCORED,
    TOO_MANY_IMAGES,
    Model,
    Request,
    Response,
    Status,
    error_status,
)
from harness.errors import TaskConfigError
from harness.inputs.prompts import prompt_text
from harness.models.facts.reasoning import AnswerTags, ReasoningTags, strip_reasoning
from harness.redact import scrub
from harness.row_tokens import fit_within_pixels
from harness.running.cache import input_sha256
from harness.running.journal.journal_file import LoggedFields, SampleRecord
from harness.running.journal.prompt_store import text_sha256
from harness.running.journal.sample_store import Outcome
from harness.running.task.hook import TaskHookError
from harness.running.task.metric_errors import ScoredRow
from harness.running.task.requests import RowProblem
from harness.running.task.task import Task
from harness.sent import Sent, sent_images


def screen(request: Request, model: Model, check_tokens: bool) -> tuple[Status, str] | None:
    """(status, why) when `request` cannot go to `model`: more images than it takes, or (with `check_tokens`, a task
    whose rows carry token figures) more tokens than its context; None when it can."""
    images = len(request.images)
    if model.facts.max_images is not None and images > model.facts.max_images:
        return TOO_MANY_IMAGES, f"{images} images; the model takes at most {model.facts.max_images}"
    if check_tokens and model.facts.context_length is not None:
        needed = model.prompt_tokens(request) + request.settings.max_gen_toks
        if needed > model.facts.context_length:
            return OVER_LENGTH, (
                f"{needed} tokens (prompt {needed - request.settings.max_gen_toks} + max_gen_toks "
                f"{request.settings.max_gen_toks}) > context {model.facts.context_length}"
            )
    return None


def sum_usage(usages: Sequence[dict[str, int] | None]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for usage in usages:
        for key, value in (usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] += value
    return dict(sorted(total.items()))


class ClusterField(TypedDict, total=False):
    cluster: list[str]


def cluster_field(task: Task, doc: Mapping[str, object]) -> ClusterField:
    """The record's `cluster` (the row's cluster keys), where its task declares `cluster_key:`."""
    keys = task.cluster_keys(doc)
    return {"cluster": keys} if keys else {}


@dataclass
class RecordBuilder:
    """The records of one run's samples, for its model: scored unless `--predict_only` (`scoring`), with what each
    sample was asked."""

    model: Model
    scoring: bool
    reasoning: ReasoningTags | None = None  # a reasoning model's thinking, taken out of its answer before it is scored
    answer: AnswerTags | None = None  # the tags it wraps its answer in after its thinking: what they hold is scored
    opened: str | None = None  # the thinking the prompt opens: an output that never closes it has no answer

    def answered(self, task: Task, request: Request, response: Response) -> SampleRecord:
        """The record of a sample the model answered: its answer, or why none counts (refused, failed, enormous)."""
        doc = task.doc(request.doc_id)
        record: SampleRecord = {
            "doc_id": request.doc_id,
            "sample_id": request.sample_id,
            "response": response.text,
            "finish_reason": response.finish_reason,
            "token_count": self.model.prompt_tokens(request),
            "input_sha256": input_sha256(request),
        }  # type: ignore[typeddict-item]  # its status follows
        record.update(cluster_field(task, doc))
        if response.usage:
            record["usage"] = response.usage
        if response.prompt_cache:
            record["prompt_cache"] = response.prompt_cache
        if response.prompt_ids_sha256:
            record["prompt_ids_sha256"] = response.prompt_ids_sha256
        if request.truncation:
            record["truncation"] = request.truncation
        if request.round_trip:
            record["text_round_trip"] = request.round_trip
        if response.refused and task.config.refusals == "empty":  # scored as the empty answer it is (a task's choice)
            record["response"] = ""
            record["refusal"] = response.error or "refused by the provider"
            response = Response("", finish_reason=response.finish_reason, usage=response.usage)
        text = response.text
        if self.reasoning and text is not None and response.ok:
            answer = strip_reasoning(text, self.reasoning, self.answer, self.opened)
            if answer != text:  # the whole output is kept; the answer is what the scorer reads
                record["raw_response"] = text
                record["response"] = text = answer
        limit = request.settings.max_response_chars  # the longest answer accepted as an answer
        if response.refused:
            record["status"] = REFUSED
            record["error"] = response.error or "refused by the provider"
        elif not response.ok or text is None:
            error = response.error or "the backend returned no text"
            record["status"] = error_status(error)
            record["error"] = error
        elif len(text) > limit:
            record["status"] = ERROR
            record["response"] = text[:2000]
            record["error"] = f"enormous output: {len(text)} characters (limit {limit})"
        else:
            record["status"] = EMPTY if not text.strip() else OK
            window = self.model.facts.window  # set where the run may pass the checkpoint's window on purpose
            if window is not None and record["token_count"] + request.settings.max_gen_toks > window:
                record["past_window"] = window  # answered from positions the checkpoint was not trained on
            if self.scoring:
                self.score(task, doc, record)
        record.update(self.log_fields(task, request, doc, response.sent))
        return record

    def screened_out(
        self,
        task: Task,
        doc_id: int,
        sample_id: str,
        request: Request | None,
        problem: tuple[Status, str],
        doc: Mapping[str, object],
    ) -> SampleRecord:
        """The record of a request the screen kept from the model (`screen`), or of a row no request could be built
        from (`request` None, `harness.running.task.requests.RowProblem`)."""
        record: SampleRecord = {"doc_id": doc_id, "sample_id": sample_id, "status": problem[0], "error": problem[1]}
        if request is not None:
            record["token_count"] = self.model.prompt_tokens(request)
            record["input_sha256"] = input_sha256(request)
        record.update(cluster_field(task, doc))
        record.update(self.log_fields(task, request, doc))
        return record

    @staticmethod
    def score(task: Task, doc: Mapping[str, object], record: SampleRecord) -> SampleRecord:
        """The record with its answer's metrics, or failed with the scorer's error."""
        try:
            record["metrics"] = task.score(doc, cast(str, record["response"]))  # a status scored has its answer
        except TaskConfigError:
            raise
        except TaskHookError as err:  # a scorer that fails on one odd answer must not end the run
            if err.cause is None:  # a value of the wrong type: the task's fault, on every sample
                raise
            record["status"] = ERROR
            record["error"] = f"scoring failed: {type(err.cause).__name__}: {err.cause}"
        except Exception as err:  # a built-in metric that fails on one odd answer must not end the run
            record["status"] = ERROR
            record["error"] = f"scoring failed: {type(err).__name__}: {err}"
        return record

    def log_fields(
        self, task: Task, request: Request | None, doc: Mapping[str, object], sent: Sent | None = None
    ) -> LoggedFields:
        """What a sample's record keeps of what it was asked: its target and, when it was asked, the request as its
        backend sent it (`sent`, the backend's own record), or would have sent it (screened out, answered from the
        cache: `Model.render`)."""
        fields: LoggedFields = {"target": task.target(doc)}
        if request is not None:
            max_pixels = self.model.facts.max_pixels
            sent = sent or as_sent(self.model, request)
            fields["prompt"] = sent.text
            fields["sent_images"] = sent.record()["images"]
            if request.assistant_prefix:
                fields["assistant_prefix"] = request.assistant_prefix
            fields["image_sha256"] = [i.sha256 for i in request.images]
            fields["image_sizes"] = [[i.width, i.height] for i in request.images]
            if max_pixels:
                fields["effective_image_sizes"] = [
                    list(fit_within_pixels(i.width, i.height, max_pixels)) if i.width and i.height else None
                    for i in request.images
                ]
        return fields

    def sent_otherwise(self, record: Mapping[str, object], request: Request) -> bool:
        """Whether a journalled sample's record of what was sent (its prompt's hash, or a journal's own copy from
        before the prompt store, and its images as sent) differs from what its backend would send for `request` now
        (a rerun compares against it: a prompt rendered otherwise is another request)."""
        images, digest, prompt = record.get("sent_images"), record.get("prompt_sha256"), record.get("prompt")
        if not isinstance(images, list) or not isinstance(digest or prompt, str):
            return False  # a record from before the prompt as sent was kept: nothing to compare
        now = as_sent(self.model, request)
        text_differs = text_sha256(scrub(now.text)) != digest if isinstance(digest, str) else now.text != prompt
        return text_differs or now.record()["images"] != images

    def text_as_sent(self, request: Request | RowProblem) -> str | None:
        """The prompt text the model sends for `request` (`as_sent`); None for a row no request could be built from."""
        return as_sent(self.model, request).text if isinstance(request, Request) else None


def as_sent(model: Model, request: Request) -> Sent:
    """`request` as `model` sends it (`Model.render`); a backend that renders nothing of its own (a baseline) reads
    the request's turns, each image an `<image>` marker."""
    try:
        sent = model.render(request)
    except Exception:  # a request the backend cannot render (an image it cannot place): its turns, as they are
        sent = None
    if sent is not None:
        return sent
    images = [(image.sha256, image.width, image.height) for image in request.images]
    return Sent(prompt_text(request.as_sent), sent_images(images, dict(request.processor_kwargs)))


def refresh_cluster_keys(task: Task, records: Mapping[str, SampleRecord], current: Sequence[str]) -> list[SampleRecord]:
    """The records of `current` whose `cluster` is not what the task's `cluster_key:` now makes of their rows (a journal
    from before the key was declared, or a key changed since), with the keys made anew: appended to the journal, they
    replace the old lines when it is compacted, so the journal holds every sample's keys for later commands."""
    stale: list[SampleRecord] = []
    for sample_id in current:
        record = records.get(sample_id)
        if record is None:
            continue
        fresh = cluster_field(task, task.doc(record["doc_id"]))
        if record.get("cluster", []) != fresh.get("cluster", []):
            stale.append(cast(SampleRecord, {**{k: v for k, v in record.items() if k != "cluster"}, **fresh}))
    return stale


def scored_rows(
    task: Task, records: Mapping[str, SampleRecord], current: Sequence[str], outcomes: Sequence[Outcome]
) -> list[ScoredRow]:
    """The scored samples of `current` (their `outcomes`, in the same order) as the task's aggregation reads them,
    each keyed by its journalled cluster keys (`refresh_cluster_keys` made them current)."""
    return [
        task.scored_row(sample_id, outcome.metrics, records[sample_id].get("cluster"))
        for sample_id, outcome in zip(current, outcomes, strict=True)
        if outcome.status in SCORED and outcome.metrics is not None
    ]
