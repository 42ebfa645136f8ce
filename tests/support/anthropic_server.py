"""A loopback server that speaks the Anthropic Messages API (`POST /v1/messages`) as Anthropic's SDK calls it, for the
`anthropic` backend's tests. Every request is recorded.

Scenarios beyond `provider_server.py`'s: `overloaded_once` (1st attempt: 529, Anthropic's "overloaded"; then ok),
`refusal` (stop_reason "refusal", no text), `empty` (no content blocks, stop_reason end_turn).

Prompt caching, as the Messages API does it: a request whose blocks carry `cache_control` is checked (each
`{"type": "ephemeral"}`, at most four, else 400) and answered with the usage of a cache the server keeps: each marked
prefix (its blocks, the marks taken off) is written; a later request reads the longest of its marked prefixes already
written (`cache_read_input_tokens`) and writes what lies past it up to its last mark (`cache_creation_input_tokens`),
its other tokens `input_tokens`; a block weighs `len(text) // 4` tokens, an image `IMAGE_TOKENS`. `cache_seen` holds
each marked request's (read, written) tokens in the order they came.

Message Batches, for `--batch`: `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}` and its `results_url`.
A batch stays `in_progress` while `hold` is set, then ends at its next look: each item answered as a message would
be, except one tagged `#do=batch_error` (an `errored` result) or `#do=batch_expired` (`expired`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from typing import Any

from tests.support.provider_server import ProviderServer, Received, message_texts, tags_in

IMAGE_TOKENS = 100  # an image block's weight in the server's own count (its cache's)


class AnthropicServer(ProviderServer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cached: set[str] = set()  # the prefixes written to the server's prompt cache
        self.cache_seen: list[tuple[int, int]] = []  # each marked request's (read, written) tokens
        self.hold = threading.Event()
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_requests: dict[str, list[dict[str, Any]]] = {}
        self.created: list[str] = []
        self.looks = 0
        self._ids = itertools.count(1)

    def route(self, handler: Any, record: Received) -> bool:
        if not record.path.startswith("/v1/messages/batches"):
            return False
        parts = record.path.split("/")
        if record.method == "POST" and len(parts) == 4:
            batch_id = f"msgbatch_{next(self._ids)}"
            self.created.append(batch_id)
            self.batch_requests[batch_id] = record.body["requests"]
            self.batches[batch_id] = {
                "id": batch_id,
                "type": "message_batch",
                "processing_status": "in_progress",
                "request_counts": {
                    "processing": len(record.body["requests"]),
                    "succeeded": 0,
                    "errored": 0,
                    "canceled": 0,
                    "expired": 0,
                },
                "results_url": None,
                "created_at": "2026-11-24T00:00:00Z",
                "expires_at": "2026-11-25T00:00:00Z",
            }
            self.send(handler, 200, self.batches[batch_id])
            return True
        batch = self.batches.get(parts[4]) if len(parts) > 4 else None
        if batch is None:
            self.send(handler, 404, self.error(404, "no such batch"))
        elif len(parts) == 5:
            self.looks += 1
            if batch["processing_status"] == "in_progress" and not self.hold.is_set():
                batch["processing_status"] = "ended"
                batch["results_url"] = f"{self.base_url}/v1/messages/batches/{batch['id']}/results"
            self.send(handler, 200, batch)
        else:
            lines = [json.dumps(self._result(item)) for item in self.batch_requests[batch["id"]]]
            data = ("\n".join(lines) + "\n").encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/binary")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        return True

    def _result(self, item: dict[str, Any]) -> dict[str, Any]:
        tags = tags_in(self.texts(item["params"]))
        if tags.get("do") == "batch_error":
            error = {"type": "error", "error": {"type": "api_error", "message": "the item failed"}}
            return {"custom_id": item["custom_id"], "result": {"type": "errored", "error": error}}
        if tags.get("do") == "batch_expired":
            return {"custom_id": item["custom_id"], "result": {"type": "expired"}}
        record = Received("POST", "/v1/messages", {}, {}, b"", item["params"], time.monotonic())
        _, message, _ = self.answer(record, tags.get("id", "?"), "ok")
        return {"custom_id": item["custom_id"], "result": {"type": "succeeded", "message": message}}

    def texts(self, body: Any) -> list[str]:
        return message_texts(body) if isinstance(body, dict) else []

    def error(self, status: int, message: str) -> Any:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}

    @staticmethod
    def _blocks(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[int]]:
        """The request's blocks in cache order (system, then each message's) and which of them carry a mark."""
        system = body.get("system")
        blocks = [*(system if isinstance(system, list) else []), *(b for m in body["messages"] for b in m["content"])]
        return blocks, [k for k, block in enumerate(blocks) if "cache_control" in block]

    def _mark_problem(self, body: Any) -> str | None:
        """Why the API would refuse the request's `cache_control` marks, if it would."""
        if not isinstance(body, dict) or "messages" not in body:
            return None
        blocks, marks = self._blocks(body)
        if len(marks) > 4:
            return f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}."
        if any(blocks[k]["cache_control"] != {"type": "ephemeral"} for k in marks):
            return "cache_control: Input should be {'type': 'ephemeral'}"
        return None

    def _cached_usage(self, body: dict[str, Any]) -> dict[str, int] | None:
        """The usage of a request with `cache_control` marks, read from and written to the server's cache (None: no
        marks)."""
        blocks, marks = self._blocks(body)
        if not marks:
            return None
        bare = [{key: value for key, value in block.items() if key != "cache_control"} for block in blocks]
        weights = [len(b.get("text", "")) // 4 if b["type"] == "text" else IMAGE_TOKENS for b in bare]
        upto = [sum(weights[: k + 1]) for k in range(len(blocks))]
        prefixes = {k: hashlib.sha256(json.dumps(bare[: k + 1], sort_keys=True).encode()).hexdigest() for k in marks}
        with self._lock:
            read = max((upto[k] for k in marks if prefixes[k] in self.cached), default=0)
            written = upto[marks[-1]] - read
            self.cached.update(prefixes.values())
            self.cache_seen.append((read, written))
        return {
            "input_tokens": sum(weights) - read - written,
            "output_tokens": 3,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }

    def _generation(self, handler: Any, record: Received, sample: str, do: str, attempt: int) -> None:
        refused = self._mark_problem(record.body)
        if refused is not None:
            self.send(handler, 400, self.error(400, refused))
        elif do == "overloaded_once" and attempt == 1:
            self.send(handler, 529, self.error(529, "Overloaded"))
        else:
            super()._generation(handler, record, sample, do, attempt)

    def answer(self, record: Received, sample: str, do: str) -> tuple[int, Any, dict[str, str]]:
        images = sum(
            1
            for m in record.body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "image"
        )
        content: list[dict[str, Any]] = [{"type": "text", "text": f"answer:{sample}"}]
        stop = "end_turn"
        if do == "refusal":
            content, stop = [], "refusal"
        elif do == "empty":
            content = []
        return (
            200,
            {
                "id": f"msg_{sample}",
                "type": "message",
                "role": "assistant",
                "model": record.body.get("model"),
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": self._cached_usage(record.body) or {"input_tokens": 10 + images, "output_tokens": 3},
            },
            {},
        )
