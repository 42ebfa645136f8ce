"""`--batch` on the `openai` backend against the loopback server's Batch API (tests/support/openai_batches.py): the
requests written, uploaded, submitted, polled and collected; an item the provider failed sent again alone; a run
stopped between submission and collection resumed from the batch journal without submitting again (through a killed
`harness` process: `test_killed_batches.py`, for every provider)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from harness.models.backends.openai_chat.model import OpenAIChatModel
from tests.support.chat_server import ChatServer
from tests.support.provider_tests import (
    batch_items,
    batch_model,
    check_resumed_after_a_stop,
    generated,
    journalled_batch,
)


def _model(server: ChatServer, journal: Path, **args: str) -> OpenAIChatModel:
    return batch_model("openai", OpenAIChatModel, server, journal, **args)


def test_a_batch_is_submitted_polled_and_collected(openai_batch_server, batch_journal, jpeg_red):
    requests = batch_items(jpeg_red, "batch_error", "batch_missing")
    model = _model(openai_batch_server, batch_journal)
    responses = generated(model, requests)
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert responses[0].usage["prompt_tokens"] == 11
    desk = openai_batch_server.batches
    (batch_id,) = desk.created
    entry = journalled_batch(batch_journal, "openai", batch_id)
    assert len(entry["items"]) == 3
    uploaded = [json.loads(line) for line in desk.files[desk.batches[batch_id]["input_file_id"]].decode().splitlines()]
    assert [u["custom_id"] for u in uploaded] == entry["items"]
    assert {u["url"] for u in uploaded} == {"/v1/chat/completions"}
    assert uploaded[0]["body"] == model.payload(requests[0])  # each item is the request the backend would send
    # The failed item and the missing one went again alone, through the chat endpoint; the answered one did not.
    assert sorted(r.tags["id"] for r in openai_batch_server.received) == ["s1", "s2"]


def test_a_run_stopped_before_collection_resumes_its_batch(openai_batch_server, batch_journal):
    check_resumed_after_a_stop(
        partial(_model, openai_batch_server, batch_journal),
        openai_batch_server.batches.hold,  # the provider is still working on it
        r"batch batch_\d+ still in_progress .* the same command resumes",
    )
    (batch_id,) = openai_batch_server.batches.created  # resumed, not submitted again
    journalled_batch(batch_journal, "openai", batch_id)  # its one entry
    assert openai_batch_server.received == []
