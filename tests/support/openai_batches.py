"""OpenAI's Batch API on the loopback chat-completions server (`ChatServer(batches=OpenAIBatchDesk())`), for the
`--batch` tests: `POST /v1/files` (multipart, purpose `batch`), `POST /v1/batches`, `GET /v1/batches/{id}` and
`GET /v1/files/{id}/content`. A batch stays `in_progress` while `hold` is set (a run killed between submission and
collection), then completes at its next look: each line answered as the server answers a chat request (`answer(body)`,
else "answer:<id>" from the `#id=` tag; its usage `usage(body)`, else 10 + images in, 3 out), except a line tagged
`#do=batch_error`, which goes to the error file, and `#do=batch_missing`, which is in neither file."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

from tests.support.provider_server import message_texts, tags_in


class OpenAIBatchDesk:
    def __init__(
        self,
        answer: Callable[[dict[str, Any]], str] | None = None,
        usage: Callable[[dict[str, Any]], dict[str, int]] | None = None,
    ) -> None:
        self.answer = answer  # an item's answer from its request body (default: "answer:<id>")
        self.usage = usage  # an item's usage block from its request body (default: 10 + images in, 3 out)
        self.hold = threading.Event()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []  # batch ids, in the order they were created
        self.looks = 0
        self._ids = itertools.count(1)
        self._lock = threading.RLock()  # completing a batch writes its files under the same lock

    def _file(self, data: bytes) -> str:
        with self._lock:
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = data
        return file_id

    def post(self, path: str, raw: bytes, content_type: str) -> tuple[int, Any]:
        if path == "/v1/files":
            boundary = content_type.split("boundary=", 1)[1].encode()
            parts = raw.split(b"--" + boundary)
            (payload,) = [p for p in parts if b'name="file"' in p]
            content = payload.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
            assert any(b'name="purpose"' in p and p.rstrip().endswith(b"batch") for p in parts)
            return 200, {"id": self._file(content), "object": "file", "purpose": "batch"}
        if path == "/v1/batches":
            request = json.loads(raw)
            assert request["endpoint"] == "/v1/chat/completions" and request["completion_window"] == "24h"
            with self._lock:
                batch_id = f"batch_{next(self._ids)}"
                self.created.append(batch_id)
                self.batches[batch_id] = {
                    "id": batch_id,
                    "object": "batch",
                    "status": "in_progress",
                    "input_file_id": request["input_file_id"],
                }
            return 200, self.batches[batch_id]
        return 404, {"error": {"message": f"no route {path}"}}

    def get(self, path: str) -> tuple[int, Any]:
        if path.startswith("/v1/batches/"):
            batch = self.batches.get(path.rsplit("/", 1)[1])
            if batch is None:
                return 404, {"error": {"message": "no such batch"}}
            with self._lock:
                self.looks += 1
                if batch["status"] == "in_progress" and not self.hold.is_set():
                    self._complete(batch)
            return 200, batch
        if path.startswith("/v1/files/") and path.endswith("/content"):
            data = self.files.get(path.split("/")[3])
            return (200, data) if data is not None else (404, {"error": {"message": "no such file"}})
        return 404, {"error": {"message": f"no route {path}"}}

    def _text(self, body: dict[str, Any], tags: dict[str, str]) -> str:
        return self.answer(body) if self.answer else f"answer:{tags.get('id', '?')}"

    def _complete(self, batch: dict[str, Any]) -> None:
        answers, errors = [], []
        for line in self.files[batch["input_file_id"]].decode().splitlines():
            item = json.loads(line)
            tags = tags_in(message_texts(item["body"]))
            if tags.get("do") == "batch_missing":
                continue
            if tags.get("do") == "batch_error":
                errors.append(
                    {
                        "custom_id": item["custom_id"],
                        "response": None,
                        "error": {"code": "server_error", "message": "the item failed"},
                    }
                )
                continue
            images = sum(
                1
                for m in item["body"]["messages"]
                if isinstance(m.get("content"), list)
                for p in m["content"]
                if p.get("type") == "image_url"
            )
            body = {
                "id": "chatcmpl-b",
                "object": "chat.completion",
                "model": item["body"].get("model"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": self._text(item["body"], tags)},
                    }
                ],
                "usage": self.usage(item["body"])
                if self.usage
                else {"prompt_tokens": 10 + images, "completion_tokens": 3, "total_tokens": 13 + images},
            }
            answers.append({"custom_id": item["custom_id"], "response": {"status_code": 200, "body": body}})
        batch["status"] = "completed"
        batch["output_file_id"] = self._file("".join(json.dumps(a) + "\n" for a in answers).encode())
        if errors:
            batch["error_file_id"] = self._file("".join(json.dumps(e) + "\n" for e in errors).encode())
