"""Every file a run writes and reads back gets the journal's treatment (issue 64, "one rule for every file"): a link
planted at its name is refused, never followed; anything but a regular file (a FIFO, which would hang the run) and a
file over its bound (a sparse one: nothing is read to find out) are one line, at once. A provider's text (an error
body, a batch's status) reaches the journal and the terminal as a bounded excerpt naming its full length."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.api import BackendFatalError
from harness.errors import UserError
from harness.file_writing import LinkRefused, NotReadBack
from harness.inputs.integrity import HASH_CACHE_ENV, open_files
from harness.models.backends.openai_chat.model import OpenAIChatModel
from harness.running.cache import ResponseCache
from harness.running.journal.prompt_store import PromptStore
from harness.running.journal.sample_store import SampleStore
from harness.running.lock import OutputLock
from tests.support.chat_server import ChatServer
from tests.support.model_requests import make_request
from tests.support.openai_batches import OpenAIBatchDesk
from tests.support.provider_tests import api_model, batch_settings, generated


def _within(seconds: float, call: Callable[[], object], fifo: Path | None = None) -> BaseException | None:
    """What `call` raised (None: nothing), failing the test where it takes longer than `seconds`; a FIFO the old code
    would wait on is opened from this side then, so the waiting call ends."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as err:  # the outcome under test
            raised[0] = err

    started = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        pytest.fail(f"still waiting after {time.monotonic() - started:.1f}s")
    return raised[0]


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def _one_line(err: BaseException | None, *words: str) -> str:
    assert err is not None, "nothing was refused"
    text = str(err)
    assert "\n" not in text and len(text) < 600, text[:600]
    for word in words:
        assert word in text, text[:600]
    return text


def _model(server: ChatServer, journal: Path, **args: str) -> OpenAIChatModel:
    settings = {**batch_settings(journal), "timeout": "5", "max_retries": "0"}
    return api_model("openai", OpenAIChatModel, server, settings, **args)


class _WordyDesk(OpenAIBatchDesk):
    """A batch whose status is a `size`-character word, and so never ends."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get(self, path: str) -> tuple[int, Any]:
        code, batch = super().get(path)
        if path.startswith("/v1/batches/") and isinstance(batch, dict) and "status" in batch:
            return code, {**batch, "status": "z" * self.size}
        return code, batch


def _generate(server: ChatServer, journal: Path, **args: str) -> None:
    generated(_model(server, journal, **args), [make_request("s0", ["#id=s0 hello"])])


# ------------------------------------------------------------------------------------------- the batch journal


def test_a_link_at_the_batch_journal_is_refused_and_its_target_untouched(openai_batch_server, tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("mine\n")
    journal = tmp_path / "run" / "batches_model.jsonl"
    journal.parent.mkdir()
    journal.symlink_to(outside)
    err = _within(10, lambda: _generate(openai_batch_server, journal))
    assert isinstance(err, LinkRefused)
    _one_line(err, "batches_model.jsonl", "symbolic link")
    assert (
        outside.read_text() == "mine\n" and openai_batch_server.batches.created == []
    )  # nothing submitted, nothing paid


def test_a_fifo_batch_journal_is_refused_at_once(openai_batch_server, tmp_path):
    journal = tmp_path / "batches_model.jsonl"
    os.mkfifo(journal)
    err = _within(5, lambda: _generate(openai_batch_server, journal), fifo=journal)
    assert isinstance(err, NotReadBack)
    _one_line(err, "batches_model.jsonl", "a FIFO, not a regular file")


def test_an_oversized_batch_journal_is_refused_before_a_byte_is_read(openai_batch_server, tmp_path):
    journal = _sparse(tmp_path / "batches_model.jsonl", 2 << 30)
    err = _within(5, lambda: _generate(openai_batch_server, journal))
    assert isinstance(err, NotReadBack)
    _one_line(err, "batches_model.jsonl", "2,147,483,648 bytes, over the 256 MiB that a batch journal can hold")


# ------------------------------------------------------------------------------------------- a provider's words


def test_a_huge_batch_status_reaches_the_terminal_as_an_excerpt(tmp_path, caplog):
    server = ChatServer(batches=_WordyDesk(900_000))
    server.start()
    try:
        err = _within(30, lambda: _generate(server, tmp_path / "batches_model.jsonl", batch_wait="0.05"))
    finally:
        server.stop()
    assert isinstance(err, BackendFatalError)
    _one_line(err, "still zzzz", "(cut: 900,000 characters in all)", "the same command resumes it")
    assert all(len(record.getMessage()) < 1000 for record in caplog.records)


def test_a_megabyte_error_body_is_recorded_as_an_excerpt(tmp_path):
    server = ChatServer()
    server.huge_bytes = 1_000_000
    server.start()
    try:
        # the cap on an answer raised past the body: what is read of it is still recorded only as an excerpt
        model = _model(server, tmp_path / "unused.jsonl", batch_journal="", max_response_bytes="2000000")
        (response,) = generated(model, [make_request("s0", ["#id=s0 #do=huge_error"])])
    finally:
        server.stop()
    assert response.error is not None and not response.ok
    assert len(response.error) < 700 and "(cut: 1,000,000 characters in all)" in response.error, response.error[:700]


# ------------------------------------------------------------------------------------------- the run's other files


def test_a_fifo_prompt_store_is_refused_at_once(tmp_path):
    store = tmp_path / "prompts_task.jsonl"
    os.mkfifo(store)
    err = _within(5, lambda: PromptStore(store), fifo=store)
    assert isinstance(err, NotReadBack)
    _one_line(err, "prompts_task.jsonl", "a FIFO")


def test_an_oversized_prompt_store_is_refused_before_a_byte_is_read(tmp_path):
    store = _sparse(tmp_path / "prompts_task.jsonl", (1 << 30) + 1)
    err = _within(5, lambda: PromptStore(store))
    assert isinstance(err, NotReadBack)
    _one_line(err, "prompts_task.jsonl", "1,073,741,825 bytes, over the 1 GiB")


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_fifo_at_the_cache_or_its_side_file_is_named_as_one(tmp_path, suffix):
    cache = tmp_path / "cache.sqlite"
    os.mkfifo(cache.with_name(cache.name + suffix))
    err = _within(5, lambda: ResponseCache(cache))
    assert isinstance(err, UserError)
    _one_line(err, f"cache.sqlite{suffix}", "a FIFO, not a regular file")


def test_a_fifo_at_the_lock_is_named_as_one(tmp_path):
    os.mkfifo(tmp_path / "harness.lock")

    def take() -> None:
        with OutputLock(tmp_path, ["harness", "run"]):
            pass

    err = _within(5, take)
    assert isinstance(err, UserError)
    _one_line(err, "harness.lock", "a FIFO, not a regular file")


def test_a_fifo_at_the_journal_is_refused_at_once(tmp_path):
    journal = tmp_path / "journal_t.jsonl"
    os.mkfifo(journal)
    err = _within(5, lambda: SampleStore(journal, "t", {"model": "m"}), fifo=journal)
    assert isinstance(err, NotReadBack)
    _one_line(err, "journal_t.jsonl", "a FIFO, not a regular file")


def test_a_huge_file_at_the_older_journal_name_is_not_read_whole(tmp_path):
    legacy = _sparse(tmp_path / "samples_t.jsonl", 2 << 30)  # one 2 GiB line: no header of ours
    journal = tmp_path / "journal_t.jsonl"
    err = _within(5, lambda: SampleStore(journal, "t", {"model": "m"}).close())
    assert err is None and legacy.stat().st_size == 2 << 30 and journal.read_text().startswith('{"type": "header"')


def test_a_fifo_at_the_hash_cache_is_an_empty_cache(tmp_path, monkeypatch):
    cache = tmp_path / "file_hashes.json"
    os.mkfifo(cache)
    monkeypatch.setenv(HASH_CACHE_ENV, str(cache))
    data = tmp_path / "rows.parquet"
    data.write_bytes(b"some rows")
    err = _within(5, lambda: open_files([data]), fifo=cache)
    assert err is None
    assert cache.is_file() and json.loads(cache.read_text()) != {}  # written anew, a regular file
