"""`--batch` on the `openai` backend against the loopback server's Batch API (tests/support/openai_batches.py): the
requests written, uploaded, submitted, polled and collected; an item the provider failed sent again alone; a run
stopped between submission and collection resumed from the batch journal without submitting again, in-process and
through a killed `harness` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.api import BackendFatalError
from harness.cli import main
from harness.models.openai_chat.model import OpenAIChatModel
from harness.models.registry import get_model_class
from tests.support.backend_fixtures import MMNEEDLE_LIMIT as LIMIT
from tests.support.chat_server import ChatServer
from tests.support.model_requests import make_request
from tests.support.openai_batches import OpenAIBatchDesk
from tests.support.paths import PROJECT


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


@pytest.mark.slow
def test_a_killed_harness_resumes_its_batch_and_pays_once(batch_server, mmneedle_dir: Path, tmp_path: Path, capsys):
    tasks = "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg"
    out = tmp_path / "out"
    prices = tmp_path / "prices.json"  # $1 a million input tokens; half through the Batch API
    prices.write_text(json.dumps({"models": {"test-vlm": {"input": 1.0, "output": 0, "batch": 0.5}}}))
    argv = [
        "--tasks",
        tasks,
        "--model",
        "openai",
        "--model_args",
        f"model=test-vlm,base_url={batch_server.base_url},api_key=sk-test,backoff=0.01,batch_poll=0.05",
        "--data_dir",
        str(mmneedle_dir),
        "--output_path",
        str(out),
        "--no_progress",
        "--batch",
        "--prices",
        str(prices),
    ]
    desk = batch_server.batches
    desk.hold.set()
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    process = subprocess.Popen([sys.executable, "-m", "harness", *argv], env=env, cwd=PROJECT)
    journal = out / "openai__test-vlm" / "batches_model.jsonl"
    try:
        deadline = time.monotonic() + 60
        while not (journal.exists() and desk.looks) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert journal.exists() and desk.looks, "the batch was never submitted and polled"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    (entry,) = _journal(journal)
    assert entry["batch_id"] == desk.created[0] and len(entry["items"]) == LIMIT
    desk.hold.clear()
    assert main(argv) == 0, capsys.readouterr().err
    # The first task's batch was collected, not submitted again; the second task's went as a batch of its own.
    assert len(desk.created) == 2 and len(_journal(journal)) == 2
    assert batch_server.received == []  # nothing went through the chat endpoint
    results = json.loads(sorted((out / "openai__test-vlm").glob("results_*.json"))[-1].read_text())
    for task in tasks.split(","):
        assert results["sample_counts"][task]["n_ok"] == LIMIT
        cost = results["cost"][task]["model"]
        assert cost["batch"] is True and cost["usd"] == pytest.approx(cost["input_tokens"] * 0.5 / 1e6)
