"""What the API backends' tests share, so that a new provider's tests reuse it: a backend built against a loopback
server (`api_model`, with the quick retries of the single-request tests or the batch settings of the `--batch`
tests), the checks every provider's single requests pass (a retried fault, a sample's own problem, a malformed or
huge answer, a rejected key, a server that was never there), and the `--batch` tests' journal entry and their run
stopped before collection and resumed from its journal."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from harness.api import BackendFatalError, GenerationSettings, Request, Response
from harness.models.registry import get_model_class
from harness.models.shared.api_client.calls import ApiModel
from tests.support.model_requests import make_request

ModelT = TypeVar("ModelT", bound=ApiModel)

SERVED_MODELS = {"openai": "test-vlm", "anthropic": "claude-test", "gemini": "gemini-test"}  # a backend's `model=`
# 4 attempts; a 1.5 s timeout: on a loaded machine a slow answer is no fault, and the servers' stalls (5 s) still are
QUICK_RETRIES = {"timeout": "1.5", "backoff": "0.01", "max_backoff": "0.05", "max_retries": "3"}


class Served(Protocol):
    """A loopback server (`ChatServer`, a `ProviderServer`): where it listens."""

    @property
    def base_url(self) -> str: ...


class Attempted(Served, Protocol):
    """A loopback server that counts each sample's attempts."""

    attempts: dict[str, int]


def batch_settings(journal: Path) -> dict[str, str]:
    """The `--batch` tests' model arguments: the batch journal at `journal`, polled every 10 ms, 3 attempts."""
    return {"timeout": "2", "backoff": "0.01", "max_retries": "2", "batch_journal": str(journal), "batch_poll": "0.01"}


def api_model(
    backend: str, model_class: type[ModelT], server: Served | str, settings: Mapping[str, str], **args: str
) -> ModelT:
    """The `backend` model (of `model_class`) for `SERVED_MODELS[backend]` at `server` (or a base URL) with the key
    "test-key", its `settings`, and `args` over them."""
    base_url = server if isinstance(server, str) else server.base_url
    base = {"model": SERVED_MODELS[backend], "base_url": base_url, "api_key": "test-key", **settings}
    model = get_model_class(backend).from_args({**base, **args})
    assert isinstance(model, model_class)
    return model


def batch_model(backend: str, model_class: type[ModelT], server: Served, journal: Path, **args: str) -> ModelT:
    """The `backend` model at `server` for the `--batch` tests: `batch_settings(journal)`, and `args` over them."""
    return api_model(backend, model_class, server, batch_settings(journal), **args)


def generated(model: ApiModel, requests: Sequence[Request]) -> list[Response]:
    """`model`'s responses to `requests`, the model closed after them whatever happened."""
    try:
        return model.generate(requests)
    finally:
        model.close()


def answer_to(model: ApiModel, scenario: str) -> Response:
    """`model`'s response to sample s1 asking the server for `scenario` (`#id=s1 #do=<scenario>`), the model closed."""
    (response,) = generated(model, [make_request("s1", [f"#id=s1 #do={scenario}"])])
    return response


def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the checks every provider's single requests pass -------------------------------------------------------------


def check_retried_once(make_model: Callable[..., ApiModel], server: Attempted, scenario: str) -> None:
    """A fault the server makes on the first attempt only is retried once, and the second attempt answered. The
    client (`make_model(server, timeout=...)`) waits 1.5 s where the fault is a stall (the server's is 5 s), else 30 s:
    on a loaded machine a slow second attempt is no second fault."""
    model = make_model(server, timeout="1.5" if scenario == "timeout_once" else "30")
    assert answer_to(model, scenario).text == "answer:s1"
    assert server.attempts["s1"] == 2 and model.stats["retries"] == 1


def check_one_sample_problem(
    model: ApiModel, scenario: str, text: str | None, error: str | None, refused: bool
) -> None:
    """A problem of one sample's (a refusal, an empty answer, a 400, 500s past the retries) is its response's
    `text`, `error` and `refused`, and raises nothing."""
    response = answer_to(model, scenario)
    assert (response.text, response.error, response.refused) == (text, error, refused)


def check_malformed_and_huge_refused(model: ApiModel) -> None:
    """An HTML body and one declaring 10 MB (over `model`'s `max_response_bytes=100000`) fail their samples unread."""
    malformed, huge = generated(
        model, [make_request("s1", ["#id=s1 #do=malformed"]), make_request("s2", ["#id=s2 #do=huge"], doc_id=1)]
    )
    assert malformed.text is None and malformed.error.startswith("malformed_response")
    assert huge.error.startswith("malformed_response: the answer declares 10000000 bytes, over the cap of 100000")


def check_rejected_key_stops_the_run(model: ApiModel, server: Attempted) -> None:
    """A 401 stops `model` (of `concurrency=1`) with a fatal error, and nothing more is sent once the key is refused."""
    requests = [make_request("s1", ["#id=s1 #do=auth"]), make_request("s2", ["#id=s2 #do=ok"], doc_id=1)]
    try:
        with pytest.raises(BackendFatalError, match="HTTP 401"):
            list(model.stream(requests))
    finally:
        model.close()
    assert "s2" not in server.attempts


def check_unreachable_server_stops_at_once(backend: str) -> None:
    """`backend` at a port nothing listens on stops the run at once: no backoff (5 s) spent on a server that was never
    there."""
    model = get_model_class(backend).from_args(
        {"model": "m", "base_url": f"http://127.0.0.1:{closed_port()}", "backoff": "5", "max_retries": "3"}
    )
    started = time.monotonic()
    try:
        with pytest.raises(BackendFatalError, match="cannot connect"):
            model.generate([make_request("s1", ["hello"])])
    finally:
        model.close()
    assert time.monotonic() - started < 5


# -- `--batch` ----------------------------------------------------------------------------------------------------


def batch_items(image: bytes, *failures: str, settings: GenerationSettings | None = None) -> list[Request]:
    """A batch's requests: sample s0 looking at `image`, then a sample a scenario of `failures` (`#id=s1 #do=<it>`,
    s2, ...), each its own document, all with `settings` (None: `make_request`'s)."""
    looking = make_request("s0", ["#id=s0 Look:", image], settings=settings)
    failing = [
        make_request(f"s{i}", [f"#id=s{i} #do={do}"], doc_id=i, settings=settings) for i, do in enumerate(failures, 1)
    ]
    return [looking, *failing]


def journalled_batch(journal: Path, provider: str, batch_id: str) -> dict:
    """The batch journal's one entry, which names `provider` and its batch `batch_id`."""
    (entry,) = [json.loads(line) for line in journal.read_text().splitlines()]
    assert entry["provider"] == provider and entry["batch_id"] == batch_id
    return entry


def check_resumed_after_a_stop(batch_model: Callable[..., ApiModel], hold: threading.Event, still: str) -> None:
    """A `--batch` run of samples s0, s1 and s2 stopped while the provider holds its batch (`hold` set; the first
    model waits 50 ms, then stops with a fatal error matching `still`) is run again once the batch is done, and
    answered. `batch_model(**args)` builds a model on the same batch journal."""
    requests = [make_request(f"s{i}", [f"#id=s{i} hello"], doc_id=i) for i in range(3)]
    hold.set()
    first = batch_model(batch_wait="0.05")
    try:
        with pytest.raises(BackendFatalError, match=still):
            first.generate(requests)
    finally:
        first.close()
    hold.clear()
    responses = generated(batch_model(), requests)
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
