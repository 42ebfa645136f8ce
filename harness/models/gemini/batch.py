"""Gemini's batch mode for the `gemini` backend's `--batch`: the requests (their images uploaded through the Files API
first, as a single request's are) submitted inline as one batch job (`batches.create`, each request's item id as its
`metadata.key`), polled (`batches.get`: an ended state) and collected (the job's inlined responses, matched by
`metadata.key`). Each call goes through the backend's own attempts (retries, deadline, size cap)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from harness.api import BackendFatalError, Request, Response
from harness.models.api_client.batching import BatchState
from harness.models.api_client.outcomes import StatusOf
from harness.models.api_client.replies import excerpt
from harness.models.gemini.wire import parse_answer

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

T = TypeVar("T")


class _Settings(Protocol):
    @property
    def model(self) -> str: ...


class _Backend(Protocol):
    """What the batch calls use of the `gemini` backend (`GeminiModel`)."""

    def status_of(self, err: BaseException) -> tuple[int, object, Mapping[str, str]] | None: ...

    @property
    def settings(self) -> _Settings: ...

    def _open(self) -> genai.Client: ...

    def prepared(self, request: Request) -> tuple[list[types.Content], types.GenerateContentConfig] | Response: ...

    def sdk_call(self, what: str, call: Callable[[], T], cap: int, status: StatusOf) -> T: ...


ENDED = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)
CALL_BYTES = 1 << 20
RESULT_BYTES = 1 << 30  # a job's inlined answers


class GeminiBatches:
    provider = "gemini"

    def __init__(self, model: _Backend) -> None:
        self.model = model

    def submit(self, items: Sequence[tuple[str, Request]]) -> str:
        from google.genai import types

        inlined = []
        for item, request in items:
            ready = self.model.prepared(request)
            if isinstance(ready, Response):
                raise BackendFatalError(f"gemini batch: {request.sample_id}: {ready.error}")
            contents, config = ready
            inlined.append(types.InlinedRequest(contents=contents, config=config, metadata={"key": item}))
        client = self.model._open()  # noqa: SLF001 - the backend's own client
        job = self.model.sdk_call(
            "batch submission",
            lambda: client.batches.create(model=self.model.settings.model, src=inlined),
            CALL_BYTES,
            self.model.status_of,
        )
        if not job.name:
            raise BackendFatalError("gemini batch: the job's answer names no job")
        return job.name

    def _job(self, name: str, cap: int = CALL_BYTES) -> types.BatchJob:
        client = self.model._open()  # noqa: SLF001
        return self.model.sdk_call(f"batch {name}", lambda: client.batches.get(name=name), cap, self.model.status_of)

    def state(self, batch_id: str) -> BatchState:
        job = self._job(batch_id)
        state = str(getattr(job.state, "value", job.state))
        failed = excerpt(job.error) if job.error is not None and state != "JOB_STATE_SUCCEEDED" else None
        return BatchState(state in ENDED, state, failed)

    def results(self, batch_id: str) -> dict[str, Response]:
        job = self._job(batch_id, RESULT_BYTES)
        out: dict[str, Response] = {}
        for answer in (job.dest.inlined_responses if job.dest is not None else None) or []:
            key = (answer.metadata or {}).get("key")
            if not key:
                continue
            if answer.response is not None:
                out[key] = parse_answer(answer.response)
            else:
                out[key] = Response(text=None, error=f"provider_error: batch item: {excerpt(answer.error, 300)}")
        return out
