"""`--batch` on the `openai` backend against the loopback server's Batch API (tests/support/openai_batches.py): the
requests written, uploaded, submitted, polled and collected; an item the provider failed sent again alone; a run
stopped between submission and collection resumed from the batch journal without submitting again (through a killed
`harness` process: `test_killed_batches.py`, for every provider)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import BackendFatalError
from harness.models.openai_chat.model import OpenAIChatModel
from harness.models.registry import get_model_class
from tests.support.chat_server import ChatServer
from tests.support.model_requests import make_request
from tests.support.openai_batches import OpenAIBatchDesk


@pytest.fixture
def batch_server():
    server = ChatServer(batches=OpenAIBatchDesk())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _model(server: ChatServer, journal: Path, **args: str) -> OpenAIChatModel:
    base = {
        "model": "test-vlm",
        "base_url": server.base_url,
        "api_key": "test-key",
        "timeout": "2",
        "backoff": "0.01",
        "max_retries": "2",
        "batch_journal": str(journal),
        "batch_poll": "0.01",
    }
    model = get_model_class("openai").from_args({**base, **args})
    assert isinstance(model, OpenAIChatModel)
    return model


def _journal(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_batch_is_submitted_polled_and_collected(batch_server, tmp_path, jpeg_red):
    journal = tmp_path / "batches_model.jsonl"
    requests = [
        make_request("s0", ["#id=s0 Look:", jpeg_red]),
        make_request("s1", ["#id=s1 #do=batch_error"], doc_id=1),
        make_request("s2", ["#id=s2 #do=batch_missing"], doc_id=2),
    ]
    model = _model(batch_server, journal)
    try:
        responses = model.generate(requests)
    finally:
        model.close()
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert responses[0].usage["prompt_tokens"] == 11
    desk = batch_server.batches
    (batch_id,) = desk.created
    (entry,) = _journal(journal)
    assert entry["provider"] == "openai" and entry["batch_id"] == batch_id and len(entry["items"]) == 3
    uploaded = [json.loads(line) for line in desk.files[desk.batches[batch_id]["input_file_id"]].decode().splitlines()]
    assert [u["custom_id"] for u in uploaded] == entry["items"]
    assert {u["url"] for u in uploaded} == {"/v1/chat/completions"}
    assert uploaded[0]["body"] == model.payload(requests[0])  # each item is the request the backend would send
    # The failed item and the missing one went again alone, through the chat endpoint; the answered one did not.
    assert sorted(r.tags["id"] for r in batch_server.received) == ["s1", "s2"]


def test_a_run_stopped_before_collection_resumes_its_batch(batch_server, tmp_path):
    journal = tmp_path / "batches_model.jsonl"
    requests = [make_request(f"s{i}", [f"#id=s{i} hello"], doc_id=i) for i in range(3)]
    batch_server.batches.hold.set()  # the provider is still working on it
    first = _model(batch_server, journal, batch_wait="0.05")
    try:
        with pytest.raises(BackendFatalError, match=r"batch batch_\d+ still in_progress .* the same command resumes"):
            first.generate(requests)
    finally:
        first.close()
    batch_server.batches.hold.clear()
    again = _model(batch_server, journal)
    try:
        responses = again.generate(requests)
    finally:
        again.close()
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert len(batch_server.batches.created) == 1  # resumed, not submitted again
    assert len(_journal(journal)) == 1 and batch_server.received == []
