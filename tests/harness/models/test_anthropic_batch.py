"""`--batch` on the `anthropic` backend against the loopback server's Message Batches: submitted, polled and collected,
its items' params what a single request sends; an errored or expired item sent again alone; a run stopped between
submission and collection resumed from the batch journal without submitting again (a killed `harness` process:
`test_killed_batches.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import BackendFatalError, GenerationSettings
from harness.models.anthropic_messages.model import AnthropicModel
from harness.models.registry import get_model_class
from tests.support.anthropic_server import AnthropicServer
from tests.support.model_requests import make_request

pytest.importorskip("anthropic")


def _model(server: AnthropicServer, journal: Path, **args: str) -> AnthropicModel:
    base = {
        "model": "claude-test",
        "base_url": server.base_url,
        "api_key": "test-key",
        "timeout": "2",
        "backoff": "0.01",
        "max_retries": "2",
        "batch_journal": str(journal),
        "batch_poll": "0.01",
    }
    model = get_model_class("anthropic").from_args({**base, **args})
    assert isinstance(model, AnthropicModel)
    return model


def test_a_batch_is_submitted_polled_and_collected(anthropic_server, tmp_path, png_blue):
    journal = tmp_path / "batches_model.jsonl"
    settings = GenerationSettings(max_gen_toks=300)
    requests = [
        make_request("s0", ["#id=s0 Look:", png_blue], settings=settings),
        make_request("s1", ["#id=s1 #do=batch_error"], doc_id=1, settings=settings),
        make_request("s2", ["#id=s2 #do=batch_expired"], doc_id=2, settings=settings),
    ]
    model = _model(anthropic_server, journal)
    try:
        responses = model.generate(requests)
        payload = model.payload(requests[0])
    finally:
        model.close()
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert responses[0].usage == {"input_tokens": 11, "output_tokens": 3}
    (batch_id,) = anthropic_server.created
    (entry,) = [json.loads(line) for line in journal.read_text().splitlines()]
    assert entry["provider"] == "anthropic" and entry["batch_id"] == batch_id and len(entry["items"]) == 3
    items = anthropic_server.batch_requests[batch_id]
    assert [i["custom_id"] for i in items] == entry["items"]
    assert items[0]["params"] == json.loads(json.dumps(payload))  # the item sends what a single request sends
    assert items[0]["params"]["temperature"] == 0.0
    singles = [r.body for r in anthropic_server.received if r.path == "/v1/messages"]
    assert sorted(anthropic_server.texts(b)[0].split()[0] for b in singles) == ["#id=s1", "#id=s2"]


def test_a_run_stopped_before_collection_resumes_its_batch(anthropic_server, tmp_path):
    journal = tmp_path / "batches_model.jsonl"
    requests = [make_request(f"s{i}", [f"#id=s{i} hello"], doc_id=i) for i in range(3)]
    anthropic_server.hold.set()
    first = _model(anthropic_server, journal, batch_wait="0.05")
    try:
        with pytest.raises(BackendFatalError, match="still in_progress"):
            first.generate(requests)
    finally:
        first.close()
    anthropic_server.hold.clear()
    again = _model(anthropic_server, journal)
    try:
        responses = again.generate(requests)
    finally:
        again.close()
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert len(anthropic_server.created) == 1
    assert not [r for r in anthropic_server.received if r.path == "/v1/messages"]
