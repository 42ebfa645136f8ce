"""A loopback server that speaks the Gemini API as google-genai calls it, for the `gemini` backend's tests: the Files
API's resumable upload (`POST /upload/{version}/files` with `X-Goog-Upload-Command: start`, then the bytes to the
session URL it returns, `upload, finalize`) and `POST /{version}/models/{model}:generateContent`. Every request is
recorded; uploaded files are kept by name (`files`), so a test reads back the bytes a prompt's file URI names.

Scenarios beyond `provider_server.py`'s: `blocked` (the prompt blocked: `promptFeedback.blockReason`), `safety` (the
candidate stopped for SAFETY), `empty` (a candidate with no parts, finishReason STOP), `thoughts` (a thought part
before the answer). `upload_faults` is a list of statuses the next uploads' start calls answer with, in order.
`reply`: the answer's text from the request's body in place of `answer:<id>` (None: that default); "" is a candidate
with no parts, as `empty`.

Batch mode, for `--batch`: `POST /{version}/models/{model}:batchGenerateContent` (inlined requests) and
`GET /{version}/batches/{id}`. A job stays running while `hold` is set, then succeeds at its next look: each request
answered as `generateContent` would answer it, its `metadata` echoed, except one tagged `#do=batch_error` (an error in
place of its response).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

from tests.support.provider_server import ProviderServer, Received


class GeminiServer(ProviderServer):
    def __init__(
        self,
        upload_faults: list[int] | None = None,
        reply: Callable[[dict[str, Any]], str | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.reply = reply
        self.files: dict[str, tuple[str, bytes]] = {}  # file name -> (mime type, bytes)
        self.upload_faults = list(upload_faults or [])
        self._sessions: dict[str, str] = {}  # session id -> the mime type its start call declared
        self._ids = itertools.count(1)
        self._files_lock = threading.Lock()
        self.hold = threading.Event()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.job_requests: dict[str, list[dict[str, Any]]] = {}
        self.created: list[str] = []
        self.looks = 0

    def texts(self, body: Any) -> list[str]:
        if not isinstance(body, dict):
            return []
        return [
            p["text"] for c in body.get("contents", []) for p in c.get("parts", []) if isinstance(p.get("text"), str)
        ]

    def error(self, status: int, message: str) -> Any:
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
        return {"error": {"code": status, "message": message, "status": names.get(status, "INTERNAL")}}

    def route(self, handler: Any, record: Received) -> bool:
        if record.path.endswith(":batchGenerateContent"):
            name = f"batches/b{next(self._ids)}"
            self.created.append(name)
            self.job_requests[name] = record.body["batch"]["inputConfig"]["requests"]["requests"]
            model = record.path.rsplit("/", 1)[1].split(":")[0]
            self.jobs[name] = {"name": name, "metadata": {"state": "BATCH_STATE_PENDING", "model": f"models/{model}"}}
            self.send(handler, 200, self.jobs[name])
            return True
        if record.method == "GET" and "/batches/" in record.path:
            name = "batches/" + record.path.rsplit("/", 1)[1]
            job = self.jobs.get(name)
            if job is None:
                self.send(handler, 404, self.error(404, "no such batch"))
                return True
            self.looks += 1
            if job["metadata"]["state"] == "BATCH_STATE_PENDING" and not self.hold.is_set():
                answers = [self._batch_answer(item) for item in self.job_requests[name]]
                job["metadata"]["state"] = "BATCH_STATE_SUCCEEDED"
                job["metadata"]["output"] = {"inlinedResponses": {"inlinedResponses": answers}}
            self.send(handler, 200, job)
            return True
        if record.path.startswith("/upload/") and record.headers.get("x-goog-upload-command") == "start":
            with self._files_lock:
                fault = self.upload_faults.pop(0) if self.upload_faults else None
                session = str(next(self._ids))
            if fault:
                self.send(handler, fault, self.error(fault, "upload refused"))
                return True
            self._sessions[session] = record.headers.get("x-goog-upload-header-content-type", "")
            self.send(handler, 200, b"", {"X-Goog-Upload-URL": f"{self.base_url}/upload-session/{session}"})
            return True
        if record.path.startswith("/upload-session/"):
            session = record.path.rsplit("/", 1)[1]
            mime = self._sessions.pop(session)
            name = f"files/f{session}"
            with self._files_lock:
                self.files[name] = (mime, record.raw)
            file = {"name": name, "uri": f"{self.base_url}/v1beta/{name}", "mimeType": mime, "state": "ACTIVE"}
            self.send(handler, 200, {"file": file}, {"x-goog-upload-status": "final"})
            return True
        return False

    def _batch_answer(self, item: dict[str, Any]) -> dict[str, Any]:
        from tests.support.provider_server import tags_in

        tags = tags_in(self.texts(item["request"]))
        if tags.get("do") == "batch_error":
            return {"error": {"code": 500, "message": "the item failed"}, "metadata": item.get("metadata")}
        record = Received("POST", "", {}, {}, b"", item["request"], 0.0)
        _, answer, _ = self.answer(record, tags.get("id", "?"), "ok")
        return {"response": answer, "metadata": item.get("metadata")}

    def file_bytes(self, uri: str) -> tuple[str, bytes]:
        return self.files[uri.split("/v1beta/", 1)[1]]

    def answer(self, record: Received, sample: str, do: str) -> tuple[int, Any, dict[str, str]]:
        parts = [p for c in record.body["contents"] for p in c["parts"]]
        images = sum(1 for p in parts if "fileData" in p or "inlineData" in p or "file_data" in p or "inline_data" in p)
        usage = {"promptTokenCount": 10 + images, "candidatesTokenCount": 3, "totalTokenCount": 13 + images}
        text = self.reply(record.body) if self.reply is not None else None
        answer_parts: list[dict[str, Any]] = [{"text": f"answer:{sample}" if text is None else text}]
        finish = "STOP"
        if text == "":
            do = "empty"
        if do == "blocked":
            return 200, {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage}, {}
        if do == "safety":
            answer_parts, finish = [], "SAFETY"
        elif do == "empty":
            answer_parts = []
        elif do == "thoughts":
            answer_parts = [{"text": "let me think", "thought": True}, *answer_parts]
            usage["thoughtsTokenCount"] = 5
        candidate = {"content": {"role": "model", "parts": answer_parts}, "finishReason": finish, "index": 0}
        if not answer_parts:
            candidate["content"] = {"role": "model"}
        return 200, {"candidates": [candidate], "usageMetadata": usage, "modelVersion": record.path}, {}


def generation_bodies(server: GeminiServer) -> list[dict[str, Any]]:
    return [r.body for r in server.received if r.path.endswith(":generateContent")]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
