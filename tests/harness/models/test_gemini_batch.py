"""`--batch` on the `gemini` backend against the loopback server's batch mode: the images uploaded as for a single
request, the job submitted inline (each request what a single request sends, its item id as `metadata.key`), polled and
collected; an item the provider failed sent again alone; a run stopped before collection resumed without submitting
again (a killed `harness` process, through the CLI: `test_killed_batches.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import BackendFatalError
from harness.models.gemini.model import GeminiModel
from harness.models.registry import get_model_class
from tests.support.gemini_server import GeminiServer, generation_bodies
from tests.support.model_requests import make_request

pytest.importorskip("google.genai")


def _model(server: GeminiServer, journal: Path, **args: str) -> GeminiModel:
    base = {
        "model": "gemini-test",
        "base_url": server.base_url,
        "api_key": "test-key",
        "timeout": "2",
        "backoff": "0.01",
        "max_retries": "2",
        "batch_journal": str(journal),
        "batch_poll": "0.01",
    }
    model = get_model_class("gemini").from_args({**base, **args})
    assert isinstance(model, GeminiModel)
    return model


def test_a_batch_job_is_submitted_polled_and_collected(gemini_server, tmp_path, jpeg_red):
    journal = tmp_path / "batches_model.jsonl"
    requests = [
        make_request("s0", ["#id=s0 Look:", jpeg_red]),
        make_request("s1", ["#id=s1 #do=batch_error"], doc_id=1),
    ]
    model = _model(gemini_server, journal)
    try:
        responses = model.generate(requests)
    finally:
        model.close()
    assert [r.text for r in responses] == ["answer:s0", "answer:s1"]
    assert responses[0].usage["prompt_token_count"] == 11
    (name,) = gemini_server.created
    (entry,) = [json.loads(line) for line in journal.read_text().splitlines()]
    assert entry["provider"] == "gemini" and entry["batch_id"] == name
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


def test_a_run_stopped_before_collection_resumes_its_job(gemini_server, tmp_path):
    journal = tmp_path / "batches_model.jsonl"
    requests = [make_request(f"s{i}", [f"#id=s{i} hello"], doc_id=i) for i in range(3)]
    gemini_server.hold.set()
    first = _model(gemini_server, journal, batch_wait="0.05")
    try:
        with pytest.raises(BackendFatalError, match="still JOB_STATE_PENDING"):
            first.generate(requests)
    finally:
        first.close()
    gemini_server.hold.clear()
    again = _model(gemini_server, journal)
    try:
        responses = again.generate(requests)
    finally:
        again.close()
    assert [r.text for r in responses] == ["answer:s0", "answer:s1", "answer:s2"]
    assert len(gemini_server.created) == 1 and generation_bodies(gemini_server) == []
