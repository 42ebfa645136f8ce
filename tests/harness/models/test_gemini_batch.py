"""`--batch` on the `gemini` backend against the loopback server's batch mode: the images uploaded as for a single
request, the job submitted inline (each request what a single request sends, its item id as `metadata.key`), polled and
collected; an item the provider failed sent again alone; a run stopped before collection resumed without submitting
again (a killed `harness` process, through the CLI: `test_killed_batches.py`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from harness.models.backends.gemini.model import GeminiModel
from tests.support.gemini_server import GeminiServer, generation_bodies
from tests.support.provider_tests import (
    batch_items,
    batch_model,
    check_resumed_after_a_stop,
    generated,
    journalled_batch,
)

pytest.importorskip("google.genai")


def _model(server: GeminiServer, journal: Path, **args: str) -> GeminiModel:
    return batch_model("gemini", GeminiModel, server, journal, **args)


def test_a_batch_job_is_submitted_polled_and_collected(gemini_server, batch_journal, jpeg_red):
    requests = batch_items(jpeg_red, "batch_error")
    responses = generated(_model(gemini_server, batch_journal), requests)
    assert [r.text for r in responses] == ["answer:s0", "answer:s1"]
    assert responses[0].usage["prompt_token_count"] == 11
    (name,) = gemini_server.created
    entry = journalled_batch(batch_journal, "gemini", name)
    items = gemini_server.job_requests[name]
    assert [i["metadata"]["key"] for i in items] == entry["items"]
    first = items[0]["request"]
    assert first["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 16}
    file = first["contents"][0]["parts"][1]["fileData"]
    assert gemini_server.file_bytes(file.get("file_uri") or file["fileUri"])[0] == "image/png"  # uploaded first
    # The failed item went again alone, through generateContent; the answered one did not.
    assert [b["contents"][0]["parts"][0]["text"] for b in generation_bodies(gemini_server)] == [
        "#id=s1 #do=batch_error"
    ]


def test_a_run_stopped_before_collection_resumes_its_job(gemini_server, batch_journal):
    check_resumed_after_a_stop(
        partial(_model, gemini_server, batch_journal), gemini_server.hold, "still JOB_STATE_PENDING"
    )
    assert len(gemini_server.created) == 1 and generation_bodies(gemini_server) == []
