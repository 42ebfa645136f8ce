"""Anthropic's Message Batches for the `anthropic` backend's `--batch`: the requests submitted as one batch of
`{custom_id, params}` (`messages.batches.create`), polled (`retrieve`: `processing_status` "ended") and collected
(`results`: each item succeeded with its message, or errored, canceled or expired). Each call goes through the
backend's own attempts (retries, deadline, size cap)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from harness.api import Request, Response
from harness.models.anthropic_messages.wire import parse_message
from harness.models.api_client.batching import BatchState
from harness.models.api_client.outcomes import StatusOf
from harness.models.api_client.replies import excerpt

if TYPE_CHECKING:
    import anthropic

T = TypeVar("T")


class _Backend(Protocol):
    """What the batch calls use of the `anthropic` backend (`AnthropicModel`)."""

    def status_of(self, err: BaseException) -> tuple[int, object, Mapping[str, str]] | None: ...

    def _open(self) -> anthropic.Anthropic: ...

    def payload(self, request: Request) -> dict[str, object]: ...

    def sdk_call(self, what: str, call: Callable[[], T], cap: int, status: StatusOf) -> T: ...


CALL_BYTES = 1 << 20  # a batch's record
RESULT_BYTES = 1 << 30  # a batch's answers: at most the provider's own cap on a batch's results


class AnthropicBatches:
    provider = "anthropic"

    def __init__(self, model: _Backend) -> None:
        self.model = model

    def submit(self, items: Sequence[tuple[str, Request]]) -> str:
        client = self.model._open()  # noqa: SLF001 - the backend's own client
        requests = [{"custom_id": item, "params": self.model.payload(request)} for item, request in items]
        batch = self.model.sdk_call(
            "batch submission",
            lambda: client.messages.batches.create(requests=requests),  # type: ignore[arg-type]  # the API's shapes
            CALL_BYTES,
            self.model.status_of,
        )
        return batch.id

    def state(self, batch_id: str) -> BatchState:
        client = self.model._open()  # noqa: SLF001
        batch = self.model.sdk_call(
            f"batch {batch_id}", lambda: client.messages.batches.retrieve(batch_id), CALL_BYTES, self.model.status_of
        )
        status = str(batch.processing_status)
        return BatchState(status == "ended", status)

    def results(self, batch_id: str) -> dict[str, Response]:
        client = self.model._open()  # noqa: SLF001
        lines = self.model.sdk_call(
            f"batch {batch_id}'s results",
            lambda: list(client.messages.batches.results(batch_id)),
            RESULT_BYTES,
            self.model.status_of,
        )
        out: dict[str, Response] = {}
        for line in lines:
            result = line.result
            if result.type == "succeeded":
                out[line.custom_id] = parse_message(result.message)
            else:
                why = getattr(getattr(result, "error", None), "error", None) or result.type
                error = f"provider_error: batch item {excerpt(result.type, 100)}: {excerpt(why, 300)}"
                out[line.custom_id] = Response(text=None, error=error)
        return out
