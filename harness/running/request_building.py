"""A task's requests made ready for the model, as the runner sends them and `--screen_only` screens them: built from
the row, the model's input policies applied, the task's text round trip (once, here: `harness.inputs.round_trip`),
then the task's truncation rule where the request does not fit (`harness.inputs.truncation`). A row no request can
be made from is a `RowProblem` naming why."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from harness.api import GenerationSettings, Model, Request
from harness.inputs.round_trip import check as check_round_trip
from harness.inputs.round_trip import round_tripped
from harness.inputs.truncation import fit_to_model
from harness.running.sample_records import screen
from harness.running.task import RowProblem, Task
from harness.running.task_hook import TaskHookError


class RequestBuilder:
    """The requests of `model`'s run, with its input policies (`policies`: applied to every request built)."""

    def __init__(self, model: Model, policies: Callable[[Request], Request] | None) -> None:
        self.model = model
        self.policies = policies

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

    def prepared(self, task: Task) -> Callable[[Request], Request] | None:
        """What `LazyRequests` applies to each request it builds again: the input policies, then the text round trip,
        then the truncation."""
        policies = self.policies
        if "truncation" not in task.hooks and task.config.text_round_trip is None:
            return policies

        def prepared(request: Request) -> Request:
            request = self.round_tripped(policies(request) if policies else request)
            return self.fit(task, task.doc(request.doc_id), request) if "truncation" in task.hooks else request

        return prepared
