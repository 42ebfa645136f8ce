"""Issue 30, items 2, 4 and 5: the `openai` backend against a hostile server on a real loopback socket.

- A server that sends its headers or its body a byte a second: each attempt ends at its `timeout` (the whole
  attempt, not the gap between bytes), and the run goes on. Before: still hanging at 120 s with `timeout=3`.
- An enormous answer: refused before it is read (over `max_response_bytes`, by default a function of
  max_gen_toks) and never cached, so a rerun against a healthy server gets the real answer. Before: read whole
  (201 MB), refused by the runner as enormous, yet cached and served again on every rerun.
- JSON nested 5,000 deep: one error line per sample, no traceback. Before: a RecursionError traceback each.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from harness.api import GenerationSettings
from harness.models.backends.openai_chat.model import OpenAIChatModel
from harness.models.registry import get_model_class
from harness.run.cli import main
from tests.support.chat_server import ChatServer
from tests.support.model_requests import make_request


def _model(server: ChatServer, **args: str) -> OpenAIChatModel:
    base = {"model": "m", "base_url": server.base_url, "api_key": "k", "timeout": "1", "max_retries": "0"}
    model = get_model_class("openai").from_args({**base, **args})
    assert isinstance(model, OpenAIChatModel)
    return model


def _generate_within(model: OpenAIChatModel, requests: list, bound: float) -> list:
    """The responses, or a failure if `generate` is still running after `bound` seconds (then it is abandoned)."""
    out: list = []
    worker = threading.Thread(target=lambda: out.extend(model.generate(requests)), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(bound)
    assert not worker.is_alive(), f"still waiting for the server after {bound} s"
    assert out, "generate ended without responses"
    return [time.monotonic() - started, *out]


@pytest.mark.parametrize("stall", ["trickle_headers", "trickle_body"])
def test_a_server_sending_a_byte_a_second_ends_each_attempt_at_its_timeout(stall: str) -> None:
    server = ChatServer(trickle=0.2)  # a byte every 0.2 s: each read returns well within any read timeout
    server.start()
    model = _model(server, max_retries="1", backoff="0.01", max_backoff="0.01")
    try:
        elapsed, response, fine = _generate_within(
            model,
            [make_request("s1", [f"#id=s1 #do={stall} hi"]), make_request("s2", ["#id=s2 #do=ok hi"], doc_id=1)],
            bound=15,
        )
    finally:
        model.close()
        server.stop()
    assert response.text is None and response.error.startswith(
        "provider_error: gave up after 2 attempts: timeout after 1s (ReadTimeout)"
    ), response.error
    assert fine.text == "answer:s2"
    assert elapsed < 6, elapsed  # two attempts of 1 s and a backoff, with room for a busy machine
    assert len(server.for_sample("s1")) == 2


@pytest.mark.parametrize("kind", ["huge", "huge_unsized"])
def test_an_answer_over_the_cap_is_refused_before_it_is_read(kind: str) -> None:
    server = ChatServer(huge_bytes=20_000_000)
    server.start()
    model = _model(server)
    settings = GenerationSettings(max_gen_toks=16)
    try:
        elapsed, response = _generate_within(
            model, [make_request("s1", [f"#id=s1 #do={kind} hi"], settings=settings)], bound=20
        )
    finally:
        model.close()
        server.stop()
    cap = model.response_cap(make_request("s1", ["x"], settings=settings))
    assert cap == 8 * (64 * 16 + 1024) + 65536
    said = "declares" if kind == "huge" else "sent more than"
    assert response.text is None and response.error.startswith(f"malformed_response: the answer {said} "), (
        response.error
    )
    assert f"over the cap of {cap} bytes (max_response_bytes); not read, not cached" in response.error


def _toy_run(server: ChatServer, toy_dir: Path, toy_tasks: Path, out: Path, *args: str) -> int:
    return main(
        [
            "--tasks",
            "toy_colors",
            "--include_path",
            str(toy_tasks),
            "--data_dir",
            str(toy_dir),
            "--model",
            "openai",
            "--model_args",
            ",".join([f"model=m,base_url={server.base_url},api_key=k,timeout=5,max_retries=0", *args]),
            "--output_path",
            str(out),
            "--no_progress",
            "--allow_failures",
        ]
    )  # some samples fail, on purpose


def _statuses(out: Path) -> list[str]:
    (journal,) = out.glob("*/journal_toy_colors.jsonl")
    return [json.loads(line)["status"] for line in journal.read_text().splitlines()[1:]]


def _cached(out: Path) -> list[str]:
    (cache,) = out.glob("*/cache.sqlite3")
    with sqlite3.connect(cache) as db:
        return [json.loads(row)["text"] for (row,) in db.execute("SELECT response FROM responses")]


@pytest.mark.parametrize("cap", ["default", "raised"])
def test_an_enormous_answer_is_never_cached_and_a_rerun_asks_again(
    toy_dir: Path, toy_tasks: Path, tmp_path: Path, capsys, cap: str
) -> None:
    """`raised`: the byte cap let through, the answer is still over the length the runner accepts (64 characters
    per max_gen_toks): refused as enormous, and not cached either."""
    extra = ["max_response_bytes=100000000"] if cap == "raised" else []
    server = ChatServer(answer=lambda body: "red", faults=["huge"] * 5, huge_bytes=2_000_000)
    server.start()
    try:
        assert _toy_run(server, toy_dir, toy_tasks, tmp_path, *extra) == 0
        assert sorted(_statuses(tmp_path)) == ["error"] * 5 + ["ok"] and _cached(tmp_path) == ["red"]
        first = len(server.received)
        assert _toy_run(server, toy_dir, toy_tasks, tmp_path, *extra) == 0  # the server is healthy now
    finally:
        server.stop()
    assert len(server.received) - first == 5 and _statuses(tmp_path) == ["ok"] * 6
    assert _cached(tmp_path) == ["red"] * 6
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "kind, message",
    [
        ("deep", "malformed_response: body is JSON nested too deeply to read"),
        # the body's first 500 characters, and how long it was
        ("deep_error", 'provider_error: HTTP 400: {"error": ' + "[" * 490 + "... (cut: 10,011 characters in all)"),
    ],
)
def test_json_nested_5000_deep_is_one_error_per_sample_and_no_traceback(
    toy_dir: Path, toy_tasks: Path, tmp_path: Path, capsys, kind: str, message: str
) -> None:
    server = ChatServer(faults=[kind] * 5, deep=5000)  # and one sample answered, so the run scores something
    server.start()
    try:
        code = _toy_run(server, toy_dir, toy_tasks, tmp_path)
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err and "RecursionError" not in err, err
    (journal,) = tmp_path.glob("*/journal_toy_colors.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert sorted((r["status"], r.get("error")) for r in records) == [("error", message)] * 5 + [("ok", None)]
    assert [len(r["error"]) < 600 for r in records if "error" in r] == [True] * 5
