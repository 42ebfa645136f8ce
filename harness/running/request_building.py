"""A task's requests made ready for the model, as the runner sends them and `--screen_only` screens them: built from
the row, the model's input policies applied, the task's text round trip (once, here: `harness.inputs.round_trip`),
then the task's truncation rule where the request does not fit (`harness.inputs.truncation`). A row no request can
be made from is a `RowProblem` naming why. `--write_out` prints the first of them (`write_out`).

The sequences of requests the runner hands a model build each request from its row only when asked for, so memory
holds one batch of requests at a time, not one request per sample."""

from __future__ import annotations

import sys
from abc import abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import TextIO

from harness.api import GenerationSettings, Model, Request
from harness.inputs.prompts import prompt_text
from harness.inputs.round_trip import check as check_round_trip
from harness.inputs.round_trip import round_tripped
from harness.inputs.truncation import fit_to_model
from harness.running.sample_records import screen
from harness.running.task.hook import TaskHookError
from harness.running.task.requests import RowProblem
from harness.running.task.task import Task


@dataclass(eq=False)
class RequestBuilder:
    """The requests of `model`'s run, with its input policies (`policies`: applied to every request built)."""

    model: Model
    policies: Callable[[Request], Request] | None

    def build(
        self, task: Task, doc_id: int, doc: dict[str, object], settings: GenerationSettings
    ) -> Request | RowProblem:
        request = task.build_request(doc_id, doc, settings)
        if isinstance(request, Request) and self.policies is not None:
            try:
                request = self.policies(request)
            except (ValueError, OSError) as err:
                return RowProblem(doc_id, request.sample_id, f"row {request.sample_id}: input policy: {err}")
        if not isinstance(request, Request):
            return request
        sample_id, step = request.sample_id, "text round trip"
        try:
            check_round_trip(request)
            request = self.round_tripped(request)  # counted, cut and sent after it
            step = "truncation"
            request = self.fit(task, doc, request)
            step = "text round trip"
            check_round_trip(request)
        except TaskHookError as err:  # the hook's own refusal of this row; any other failure of a hook ends the run
            if not err.row_level:
                raise
            return RowProblem(doc_id, sample_id, f"row {sample_id}: {step}: {err.reason}")
        except (ValueError, KeyError) as err:
            # truncation: a row without the figures its task's rule reads; the round trip: a prompt it does not know
            # (e.g. an input policy's)
            return RowProblem(doc_id, sample_id, f"row {sample_id}: {step}: {err}")
        return request

    def round_tripped(self, request: Request) -> Request:
        """The request with the messages its backend sends, after the task's text round trip (applied once, here)."""
        return round_tripped(request, self.model.text_round_trip() if request.text_round_trip else None)

    def fit(self, task: Task, doc: Mapping[str, object], request: Request) -> Request:
        """The request cut by the task's truncation rule where it does not fit the model (`harness.inputs.truncation`)."""
        hook = task.hooks.get("truncation")
        if hook is None:
            return request
        rule = str(task.config.truncation)
        return fit_to_model(
            request, doc, hook, rule, self.model, task.has_token_figures, screen, prepare=self.round_tripped
        )


class _Built(Sequence[Request]):
    """A sequence whose requests are built one at a time when asked for (`_one`); a slice builds each of its own."""

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._one(index)

    @abstractmethod
    def _one(self, index: int) -> Request: ...


@dataclass(eq=False, repr=False)  # a run's doc ids: too many to print
class LazyRequests(_Built):
    """A task's pending requests in run order, each built again as `builder` built it while screening."""

    builder: RequestBuilder
    task: Task
    settings: GenerationSettings
    doc_ids: list[int]

    def __len__(self) -> int:
        return len(self.doc_ids)

    def _one(self, index: int) -> Request:
        doc_id = self.doc_ids[index]
        request = self.builder.build(self.task, doc_id, self.task.doc(doc_id), self.settings)
        assert isinstance(request, Request), request  # it was built once already, while screening
        return request


class OrderedRequests(_Built):
    """Requests taken from `source` in the order of `order` (positions into it), each built when asked for."""

    def __init__(self, source: Sequence[Request], order: Sequence[int]) -> None:
        self.source = source
        self.order = list(order)

    def __len__(self) -> int:
        return len(self.order)

    def _one(self, index: int) -> Request:
        return self.source[self.order[index]]


class ChainedRequests(_Built):
    """Several tasks' `LazyRequests` end to end: one sequence for the model, each request built when asked for."""

    def __init__(self, parts: Sequence[LazyRequests]) -> None:
        self.parts = list(parts)
        self.ends = list(accumulate(len(part) for part in self.parts))

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def _one(self, index: int) -> Request:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        part = bisect_right(self.ends, index)
        return self.parts[part][index - (self.ends[part - 1] if part else 0)]


DOCS_PER_TASK = 2


def write_out(
    tasks: Sequence[Task],
    gen_kwargs: Mapping[str, object],
    seed: int | None,
    out: TextIO | None = None,
    model: Model | None = None,
    policies: Callable[[Request], Request] | None = None,
) -> None:
    """`--write_out`: the first prompts of each task printed before generating, as lm-eval prints them, so a user sees
    what the model will be asked: as the run's backend renders it (`Model.render`, `harness.sent`: its chat template's
    text, or the messages an API is sent), after the alias's input policies and the task's text round trip; a backend
    that renders nothing of its own (a baseline) shows the turns, each image marked `<image>` (a system turn,
    `--system_instruction` included, labelled). A task's truncation rule applies afterwards, per request."""
    out = out or sys.stderr  # looked up at call time: a caller may have redirected it since import
    for task in tasks:
        settings = task.generation_settings(gen_kwargs, seed)
        with task.rows():  # read for this task only, and let go of after
            for doc_id, doc in islice(task.iter_docs(), DOCS_PER_TASK):
                request = task.build_request(doc_id, doc, settings)
                print(f"--- {task.name}, document {doc_id} ---", file=out)
                if isinstance(request, RowProblem):
                    print(f"(cannot be built: {request.reason})", file=out)
                    continue
                sent = _rendered(request, model, policies)
                if sent is not None:
                    print(sent, file=out)
                else:
                    print(
                        prompt_text(request.messages)
                        + (f"\n[assistant] {request.assistant_prefix}" if request.assistant_prefix else ""),
                        file=out,
                    )
                print(f"--- target: {task.target(doc)}", file=out)


def _rendered(request: Request, model: Model | None, policies: Callable[[Request], Request] | None) -> str | None:
    """The request as `model` renders it, after its input policies and text round trip; None where it renders
    nothing of its own."""
    if model is None:
        return None
    request = RequestBuilder(model, policies).round_tripped(policies(request) if policies is not None else request)
    try:
        sent = model.render(request)
    except Exception:  # as the record of a request it cannot render: its turns
        return None
    return sent.text if sent is not None else None
