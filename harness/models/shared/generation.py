"""Generation that survives one bad request: shared by the runner, the judge, a replica and anything else asking
a model."""

from __future__ import annotations

from collections.abc import Sequence

from harness.api import BackendFatalError, Model, Request, Response
from harness.errors import UserError


def safe_generate(model: Model, batch: Sequence[Request]) -> list[Response]:
    """A batch's responses; a backend exception is retried one request at a time, so one bad
    sample fails alone and the rest of the batch still gets answers."""
    try:
        responses = model.generate(batch)
        if len(responses) != len(batch):
            raise RuntimeError(f"backend returned {len(responses)} responses for {len(batch)} requests")
        return responses
    except (BackendFatalError, UserError):
        raise  # it concerns every request (a stopped backend, a full disk): retrying them one by one would repeat it
    except Exception as err:
        if len(batch) == 1:
            return [Response(None, error=f"{type(err).__name__}: {err}")]
        return [safe_generate(model, [request])[0] for request in batch]
