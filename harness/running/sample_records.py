"""Each sample's journal record (`harness.running.journal.SampleRecord`): made from its request and the model's
response, or from the screen that kept it from the model, with its status (`harness.api`'s statuses), its metrics
once scored, and with `--log_samples` what it was asked (the prompt as sent, its images' hashes and sizes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

from harness.api import (
    EMPTY,
    ERROR,
    INVALID_INPUT,
    OK,
    OVER_LENGTH,
    REFUSED,
    TOO_MANY_IMAGES,
    Message,
    Model,
    Request,
    Response,
    Status,
    error_status,
)
from harness.errors import TaskConfigError
from harness.inputs.prompts import prompt_text
from harness.inputs.round_trip import sent_messages
from harness.row_tokens import fit_within_pixels
from harness.running.cache import input_sha256
from harness.running.journal import SampleRecord
from harness.running.task import Task
from harness.running.task_hook import TaskHookError


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


class LoggedFields(TypedDict, total=False):
    """What `--log_samples` adds to a sample's record (the `SampleRecord` fields of the same names)."""

    target: str
    prompt: str
    assistant_prefix: str
    image_sha256: list[str]
    image_sizes: list[list[int | None]]
    effective_image_sizes: list[list[int] | None]


class RecordBuilder:
    """The records of one run's samples, for its model: scored unless `--predict_only` (`score`), with what each
    sample was asked under `--log_samples`."""

    def __init__(self, model: Model, log_samples: bool, score: bool) -> None:
        self.model = model
        self.log_samples = log_samples
        self.scoring = score

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
        if response.usage:
            record["usage"] = response.usage
        if request.truncation:
            record["truncation"] = request.truncation
        round_trip = self.sent(request)[1]
        if round_trip:
            record["text_round_trip"] = round_trip
        if response.refused and task.config.refusals == "empty":  # scored as the empty answer it is (a task's choice)
            record["response"] = ""
            record["refusal"] = response.error or "refused by the provider"
            response = Response("", finish_reason=response.finish_reason, usage=response.usage)
        text = response.text
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
            if self.scoring:
                self.score(task, doc, record)
        record.update(self.log_fields(task, request, doc))
        return record

    def invalid(self, task: Task, doc_id: int, sample_id: str, reason: str, doc: Mapping[str, object]) -> SampleRecord:
        """The record of a row no request could be built from (`harness.running.task.RowProblem`)."""
        return {
            "doc_id": doc_id,
            "sample_id": sample_id,
            "status": INVALID_INPUT,
            "error": reason,
            **self.log_fields(task, None, doc),
        }

    def screened_out(
        self,
        task: Task,
        doc_id: int,
        sample_id: str,
        request: Request,
        problem: tuple[Status, str],
        doc: Mapping[str, object],
    ) -> SampleRecord:
        """The record of a request the screen kept from the model (`screen`)."""
        return {
            "doc_id": doc_id,
            "sample_id": sample_id,
            "status": problem[0],
            "error": problem[1],
            "token_count": self.model.prompt_tokens(request),
            "input_sha256": input_sha256(request),
            **self.log_fields(task, request, doc),
        }

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

    def log_fields(self, task: Task, request: Request | None, doc: Mapping[str, object]) -> LoggedFields:
        """What `--log_samples` keeps of a sample in its record: its target and, when it was asked, what it was asked."""
        if not self.log_samples:
            return {}
        fields: LoggedFields = {"target": task.target(doc)}
        if request is not None:
            max_pixels = self.model.facts.max_pixels
            fields["prompt"] = prompt_text(self.sent(request)[0])  # as sent: after any text round trip
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

    def sent(self, request: Request) -> tuple[tuple[Message, ...], dict[str, Any] | None]:
        """The messages the backend sends for `request` and what its text round trip did (`harness.inputs.round_trip`)."""
        return sent_messages(request, self.model.text_round_trip() if request.text_round_trip else None)
