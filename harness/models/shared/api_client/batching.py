"""`--batch`: an API backend's requests through its provider's batch interface (OpenAI's Batch API, Anthropic's Message
Batches, Gemini's batch mode), at the price those interfaces charge, with the batch ids journalled so that a killed run
resumes the batches it submitted instead of paying for them twice.

A request's batch item is named by what it sends (`item_id`: a hash of its task, sample and request body), so the same
request in a resumed run finds the item it had: `stream` looks each request up in the batch journal (a JSONL file in
the run's folder, a line per batch submitted, appended and flushed before the batch is polled), polls the batches that
hold some, submits one new batch for the rest, and once a batch has ended hands each of its answers to the runner as
the other backends' answers are (journalled at once). An item the provider failed (an error, a batch expired or
cancelled before reaching it) is sent again as a single request, through the backend's ordinary path and retries.

The batch journal is read back as the run's journal is (`harness.file_writing`): never through a link, a regular file of
at most `JOURNAL_MOST` bytes, refused in one line before a byte is read; a line is appended through no link either. What
a provider says of a batch (its status, why it failed) reaches the terminal as a bounded excerpt (`replies.excerpt`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from builders.core import contract
from harness.api import BackendFatalError, Request, Response, TextPart
from harness.file_writing import NotReadBack, not_regular, open_no_follow, read_bytes, reporting
from harness.models.shared.api_client.replies import excerpt

log = logging.getLogger(__name__)

# A line per batch, 35 bytes an item: millions of requests; more is no journal of ours.
JOURNAL_MOST = 256 * contract.MiB
CALL_BYTES = 1 << 20  # the answer to a batch call: a batch's record, an upload's
RESULT_BYTES = 1 << 30  # a batch's answers: at most the providers' own cap on a batch's output


@dataclass(frozen=True)
class BatchState:
    """A batch as its provider reports it: `ended` (nothing more will change), and why it failed, if it did."""

    ended: bool
    status: str
    failed: str | None = None


class BatchInterface(Protocol):
    """One provider's batch calls; each failure is a `BackendFatalError` (the calls retry as every request does)."""

    provider: str

    def submit(self, items: Sequence[tuple[str, Request]]) -> str:
        """Submit (item id, request) pairs as one batch, each request as the backend sends it; the batch's id."""
        ...

    def state(self, batch_id: str) -> BatchState: ...

    def results(self, batch_id: str) -> dict[str, Response]:
        """An ended batch's answers by item id (an item the provider failed: a `Response` with its error)."""
        ...


def request_identity(request: Request) -> dict[str, object]:
    """What a request asks, as JSON: its turns (each image by its hash), settings and processor settings."""
    turns = [
        [m.role, [p.text if isinstance(p, TextPart) else f"image:{p.image.sha256}" for p in m.content]]
        for m in request.messages
    ]
    return {
        "turns": turns,
        "settings": request.settings.to_dict(),
        "processor": dict(request.processor_kwargs),
        "prefix": request.assistant_prefix,
    }


def item_id(request: Request, body: Mapping[str, object]) -> str:
    """The batch item of `request` sending `body` (JSON naming each image by its hash, never by an upload's name, which
    a resumed run would not have): 32 hex digits, valid as every provider's custom id."""
    text = json.dumps([request.task, request.sample_id, body], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class BatchJournal:
    """The batches a run submitted: a JSONL file, a line per batch (`provider`, `batch_id`, its `items`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def batches(self) -> list[dict[str, object]]:
        if not self.path.exists():
            return []
        out = []
        with reporting(self.path):
            raw = read_bytes(self.path, JOURNAL_MOST, "a batch journal")
        lines = raw.decode("utf-8", "replace").splitlines()
        for number, line in enumerate(lines, 1):
            try:
                entry = json.loads(line)
            except ValueError:
                if number == len(lines):
                    continue  # a line cut short by a kill while it was written: that batch was never polled
                raise BackendFatalError(f"{self.path}:{number}: not a batch journal line") from None
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("batch_id"), str)
                and isinstance(entry.get("items"), list)
            ):
                out.append(entry)
        return out

    def add(self, provider: str, batch_id: str, items: Sequence[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"provider": provider, "batch_id": batch_id, "items": list(items), "submitted": time.time()})
        with reporting(self.path):
            # O_NONBLOCK: a FIFO planted since the journal was read fails at once (no reader) instead of waiting
            fd = open_no_follow(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK)
            with os.fdopen(fd, "ab") as out:
                if not stat.S_ISREG(mode := os.fstat(fd).st_mode):
                    raise NotReadBack(not_regular(self.path, mode))
                out.write((line + "\n").encode("utf-8"))
                out.flush()
                os.fsync(fd)


@dataclass
class BatchRun:
    """`stream` of an API backend in batch mode."""

    interface: BatchInterface
    journal: BatchJournal
    poll_seconds: float
    wait_seconds: float

    def stream(
        self,
        requests: Sequence[Request],
        bodies: Sequence[dict[str, object] | Response],
        single: Callable[[Request], Response],
    ) -> Iterator[tuple[int, Response]]:
        """Each request's answer (`bodies[i]`: what its batch item sends, as JSON that names each image by its hash, or
        the `Response` it already has, an input problem), through the batches that hold it or one new batch; `single`
        sends a failed item again."""
        ids: dict[int, str] = {}
        for i, body in enumerate(bodies):
            if isinstance(body, Response):
                yield i, body
            else:
                ids[i] = item_id(requests[i], body)
        holding: dict[str, str] = {}  # item id -> the latest batch that holds it
        for entry in self.journal.batches():
            items = entry["items"]
            if entry.get("provider") == self.interface.provider and isinstance(items, list):
                for item in items:
                    holding[str(item)] = str(entry["batch_id"])
        fresh = [(item, requests[i]) for i, item in ids.items() if item not in holding]
        if fresh:
            batch_id = self.interface.submit(fresh)
            self.journal.add(self.interface.provider, batch_id, [item for item, _ in fresh])
            log.warning("%s: batch %s submitted (%d requests)", self.interface.provider, excerpt(batch_id), len(fresh))
            for item, _ in fresh:
                holding[item] = batch_id
        wanted: dict[str, list[int]] = {}
        for i, item in ids.items():
            wanted.setdefault(holding[item], []).append(i)
        for batch_id, indices in wanted.items():
            answers = self._collect(batch_id)
            for i in indices:
                answer = answers.get(ids[i])
                if answer is None or not answer.ok and not answer.refused:
                    why = excerpt(answer.error) if answer is not None else "no answer in the batch"
                    log.warning("%s: batch %s: %s; sent alone", self.interface.provider, excerpt(batch_id), why)
                    answer = single(requests[i])
                yield i, answer

    def _collect(self, batch_id: str) -> dict[str, Response]:
        waited = 0.0
        while True:
            state = self.interface.state(batch_id)
            said, status = excerpt(batch_id, 100), excerpt(state.status, 100)  # the provider's words, bounded
            if state.ended:
                if state.failed:
                    log.warning("%s: batch %s %s: %s", self.interface.provider, said, status, excerpt(state.failed))
                return self.interface.results(batch_id)
            if waited >= self.wait_seconds:
                raise BackendFatalError(
                    f"{self.interface.provider} batch {said} still {status} after {waited:.0f}s (batch_wait); "
                    "the same command resumes it"
                )
            time.sleep(self.poll_seconds)
            waited += self.poll_seconds
