"""OpenAI's Batch API for the `openai` backend's `--batch`: the requests written as a JSONL file of chat-completions
calls (`custom_id`, `method`, `url`, `body`), uploaded (`POST /files`, purpose `batch`), submitted (`POST /batches`,
a 24 h window), polled (`GET /batches/{id}`) and collected (`GET /files/{output_file_id}/content`, and the error
file's lines as the items' errors). Each call goes through the backend's own attempts (retries, deadline, size cap)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from harness.api import BackendFatalError, Request, Response
from harness.models.backends.openai_chat.wire import parse_completion
from harness.models.shared.api_client.batching import CALL_BYTES, RESULT_BYTES, BatchState
from harness.models.shared.api_client.replies import excerpt, parse_body


class _Backend(Protocol):
    """What the batch calls use of the `openai` backend (`OpenAIChatModel`)."""

    def payload(self, request: Request) -> dict[str, object]: ...

    def call(self, method: str, path: str, cap: int, **send: object) -> bytes: ...


ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatches:
    provider = "openai"

    def __init__(self, model: _Backend) -> None:
        self.model = model

    def _json(self, method: str, path: str, cap: int = CALL_BYTES, **send: object) -> object:
        raw = self.model.call(method, path, cap, **send)
        data, unreadable = parse_body(raw)
        if data is None:
            raise BackendFatalError(f"openai batch: {method} {path}: {unreadable}")
        return data

    def submit(self, items: Sequence[tuple[str, Request]]) -> str:
        lines = [
            json.dumps(
                {"custom_id": item, "method": "POST", "url": "/v1/chat/completions", "body": self.model.payload(r)}
            )
            for item, r in items
        ]
        upload = self._json(
            "POST",
            "/files",
            files={"file": ("batch.jsonl", ("\n".join(lines) + "\n").encode(), "application/jsonl")},
            data={"purpose": "batch"},
        )
        file_id = upload.get("id") if isinstance(upload, dict) else None
        if not isinstance(file_id, str):
            raise BackendFatalError(f"openai batch: the upload's answer names no file id: {str(upload)[:200]}")
        batch = self._json(
            "POST",
            "/batches",
            json={"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
        )
        batch_id = batch.get("id") if isinstance(batch, dict) else None
        if not isinstance(batch_id, str):
            raise BackendFatalError(f"openai batch: the batch's answer names no id: {str(batch)[:200]}")
        return batch_id

    def _batch(self, batch_id: str) -> dict[str, object]:
        batch = self._json("GET", f"/batches/{batch_id}")
        if not isinstance(batch, dict):
            raise BackendFatalError(f"openai batch {batch_id}: not a batch object: {str(batch)[:200]}")
        return batch

    def state(self, batch_id: str) -> BatchState:
        batch = self._batch(batch_id)
        status = str(batch.get("status"))
        errors = batch.get("errors")
        failed = excerpt(json.dumps(errors), 300) if status != "completed" and errors else None
        return BatchState(status in ENDED, status, failed if status != "completed" else None)

    def results(self, batch_id: str) -> dict[str, Response]:
        batch = self._batch(batch_id)
        out: dict[str, Response] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if not isinstance(file_id, str):
                continue
            raw = self.model.call("GET", f"/files/{file_id}/content", RESULT_BYTES)
            for line in raw.decode("utf-8", "replace").splitlines():
                entry, _ = parse_body(line.encode())
                if isinstance(entry, dict) and isinstance(entry.get("custom_id"), str):
                    out[entry["custom_id"]] = _answer(entry)
        return out


def _answer(entry: dict[str, object]) -> Response:
    reply = entry.get("response")
    if isinstance(reply, dict) and reply.get("status_code") == 200:
        return parse_completion(reply.get("body"))
    error = entry.get("error") or (reply.get("body") if isinstance(reply, dict) else None)
    return Response(text=None, error=f"provider_error: batch item: {excerpt(json.dumps(error), 300)}")
