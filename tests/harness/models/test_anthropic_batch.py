"""`--batch` on the `anthropic` backend against the loopback server's Message Batches: submitted, polled and collected,
its items' params what a single request sends; an errored or expired item sent again alone; a run stopped between
submission and collection resumed from the batch journal without submitting again (a killed `harness` process:
`test_killed_batches.py`)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from harness.api import GenerationSettings
from harness.models.backends.anthropic_messages.model import AnthropicModel
from tests.support.anthropic_server import AnthropicServer
from tests.support.provider_tests import (
    batch_items,
    batch_model,
    check_resumed_after_a_stop,
    generated,
    journalled_batch,
)

pytest.importorskip("anthropic")


def _model(server: AnthropicServer, journal: Path, **args: str) -> AnthropicModel:
    return batch_model("anthropic", AnthropicModel, server, journal, **args)


def test_a_batch_is_submitted_polled_and_collected(anthropic_server, batch_journal, png_blue):
    requests = batch_items(png_blue, "batch_error", "batch_expired", settings=GenerationSettings(max_gen_toks=300))
    model = _model(anthropic_server, batch_journal)
    responses = generated(model, requests)
    payload = model.payload(requests[0])  # as planned with its batch (the plan outlives `close`)
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert responses[0].usage == {"input_tokens": 11, "output_tokens": 3}
    (batch_id,) = anthropic_server.created
    entry = journalled_batch(batch_journal, "anthropic", batch_id)
    assert len(entry["items"]) == 3
    items = anthropic_server.batch_requests[batch_id]
    assert [i["custom_id"] for i in items] == entry["items"]
    assert items[0]["params"] == json.loads(json.dumps(payload))  # the item sends what a single request sends
    assert items[0]["params"]["temperature"] == 0.0
    singles = [r.body for r in anthropic_server.received if r.path == "/v1/messages"]
    assert sorted(anthropic_server.texts(b)[0].split()[0] for b in singles) == ["#id=s1", "#id=s2"]


def test_a_run_stopped_before_collection_resumes_its_batch(anthropic_server, batch_journal):
    check_resumed_after_a_stop(
        partial(_model, anthropic_server, batch_journal), anthropic_server.hold, "still in_progress"
    )
    assert len(anthropic_server.created) == 1
    assert not [r for r in anthropic_server.received if r.path == "/v1/messages"]
