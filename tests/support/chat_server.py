"""A small OpenAI chat-completions server on 127.0.0.1 (an ephemeral port) for the `openai` tests.

Each request's text names its sample and what the server should do with it: `#id=s1 #do=ok`.
Scenarios (per sample, counting that sample's attempts):

    ok            200 with content "answer:<id>" and a usage block
    slow          waits 0.2 s, then answers like ok (for the concurrency test)
    rate_once     1st attempt: 429 with `Retry-After: 1`; then ok
    rate_ms_once  1st attempt: 429 with `retry-after-ms: 50`; then ok
    date_once     1st attempt: 500 with `Retry-After` an HTTP date in 2099; then ok
    fail_once     1st attempt: 500; then ok
    fail_twice    1st and 2nd attempts: 500; then ok
    timeout_once  1st attempt: answers only after 5 s (beyond the client's timeout); then ok
    always_500    500 forever
    refuse        200 with message.refusal
    filter        200 with finish_reason "content_filter" and no content
    filter_400    400 with Azure's content_filter error code
    malformed     200 with an HTML body
    no_choices    200 with a JSON body without choices
    bad_request   400 (must not be retried)
    no_vision     400 saying the model does not accept images (a text-only model behind the server)
    auth          401
    echo_key      400 whose error message quotes the request's Authorization header (a leaky proxy)
    echo_key_refused  400 with a content_filter code, its message quoting the Authorization header (a refusal,
                  which the response cache keeps)
    echo_key_once 1st attempt: 500 quoting the Authorization header (logged as a retry); then ok
    echo_key_answer   200 whose answer quotes the Authorization header (a leaky gateway)
    trickle_headers   sends its status line and headers one byte every `trickle` seconds (a stalled server)
    trickle_body      sends its headers, then its body one byte every `trickle` seconds
    huge          200 whose answer is `huge_bytes` of text (an enormous answer)
    huge_unsized  the same, without Content-Length (sent until the client hangs up)
    deep          200 whose body is JSON nested `deep` levels deep
    deep_error    400 whose error body is nested `deep` levels deep
    huge_error    400 whose error message is `huge_bytes` characters (a provider pasting a megabyte into its error)

`usage(body)`, where given, makes each answer's usage block (a provider reporting many tokens: the budget tests).
A request without a `#do=` tag takes the next entry of `faults` (a scenario above, as that request's
first attempt: "rate_once", "fail_once", "timeout_once"), or else is answered with
`answer(body)` (default "answer:<id>"). Every request is recorded (path, query, headers, parsed body,
arrival time); `max_in_flight` is the most requests handled at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.openai_batches import OpenAIBatchDesk
from tests.support.provider_server import LoopbackServer, message_texts, tags_in


@dataclass
class Received:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    at: float

    @property
    def tags(self) -> dict[str, str]:
        return tags_in(message_texts(self.body))


class ChatServer(LoopbackServer):
    url_path = "/v1"
    received: list[Received]

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], str] | None = None,
        faults: list[str] | None = None,
        *,
        trickle: float = 1.0,
        huge_bytes: int = 100_000_000,
        deep: int = 5000,
        usage: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        batches: OpenAIBatchDesk | None = None,
    ) -> None:
        self.batches = batches  # OpenAI's Batch API (tests/support/openai_batches.py), where a test serves it
        self.answer = answer
        self.usage = usage  # the usage block of an answer, from the request's body (default: 10 + images, 3)
        self.faults = list(faults or [])
        self.trickle = trickle
        self.huge_bytes = huge_bytes
        self.deep = deep
        super().__init__()
        self.batch_calls: list[tuple[str, str]] = []  # the Batch API's calls (method, path), in order
        self.in_flight = 0
        self.max_in_flight = 0

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            _counted = False  # whether this request is counted in `in_flight`

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _batch_answer(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                path = urlsplit(self.path).path
                with server._lock:
                    server.batch_calls.append(("GET", path))
                if server.batches is None:
                    self._batch_answer(404, {"error": {"message": "no batches here"}})
                else:
                    self._batch_answer(*server.batches.get(path))

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                path = urlsplit(self.path).path
                if server.batches is not None and path in ("/v1/files", "/v1/batches"):
                    with server._lock:
                        server.batch_calls.append(("POST", path))
                    self._batch_answer(*server.batches.post(path, raw, self.headers.get("Content-Type", "")))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                split = urlsplit(self.path)
                record = Received(
                    split.path,
                    parse_qs(split.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.monotonic(),
                )
                with server._lock:
                    server.received.append(record)
                    sample = record.tags.get("id", "?")
                    server.attempts[sample] = attempt = server.attempts.get(sample, 0) + 1
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    do = record.tags.get("do")
                    if do is None:
                        do, attempt = (server.faults.pop(0), 1) if server.faults else ("ok", attempt)
                self._counted = True
                try:
                    self._answer(record, do, sample, attempt)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)
                finally:
                    self._done()

            def _done(self) -> None:
                """The request leaves `in_flight` before its answer's last byte goes out: the client may send its next
                request as soon as it has read this one, before this thread gets to run again (a loaded machine)."""
                if self._counted:
                    self._counted = False
                    with server._lock:
                        server.in_flight -= 1

            def _send(
                self,
                status: int,
                payload: Any,
                headers: dict[str, str] | None = None,
                content_type: str = "application/json",
            ) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self._done()
                self.wfile.write(data)

            def _ok(self, record: Received, sample: str, **message: Any) -> None:
                n_images = sum(
                    1
                    for m in record.body["messages"]
                    if isinstance(m.get("content"), list)
                    for p in m["content"]
                    if p.get("type") == "image_url"
                )
                finish = message.pop("finish_reason", "stop")
                text = server.answer(record.body) if server.answer else f"answer:{sample}"
                msg = {"role": "assistant", "content": text, **message}
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{sample}",
                        "object": "chat.completion",
                        "model": record.body.get("model"),
                        "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                        "usage": server.usage(record.body)
                        if server.usage
                        else {
                            "prompt_tokens": 10 + n_images,
                            "completion_tokens": 3,
                            "total_tokens": 13 + n_images,
                            "completion_tokens_details": {"reasoning_tokens": 0},
                        },
                    },
                )

            def _trickle(self, data: bytes) -> None:
                for k in range(len(data)):
                    if server._stopping.wait(server.trickle):
                        return
                    self.wfile.write(data[k : k + 1])
                    self.wfile.flush()

            def _completion(self, text: str) -> bytes:
                return json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                    }
                ).encode()

            def _answer(self, record: Received, do: str, sample: str, attempt: int) -> None:
                if do == "trickle_headers":
                    body = self._completion(f"answer:{sample}")
                    self._trickle(
                        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
                        f"\r\n\r\n".encode()
                        + body
                    )
                elif do == "trickle_body":
                    body = self._completion(f"answer:{sample}")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.flush()
                    self._trickle(body)
                elif do in ("huge", "huge_unsized"):
                    head, tail = self._completion("\x00").split(b"\\u0000")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if do == "huge":
                        self.send_header("Content-Length", str(len(head) + server.huge_bytes + len(tail)))
                    else:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(head)
                    block = b"x" * 65536
                    for start in range(0, server.huge_bytes, len(block)):
                        self.wfile.write(block[: min(len(block), server.huge_bytes - start)])
                    self.wfile.write(tail)
                elif do == "deep":
                    self._send(200, b"[" * server.deep + b"]" * server.deep)
                elif do == "deep_error":
                    self._send(400, b'{"error": ' + b"[" * server.deep + b"]" * server.deep + b"}")
                elif do == "huge_error":
                    self._send(400, {"error": {"message": "y" * server.huge_bytes, "code": "huge"}})
                elif do == "ok":
                    self._ok(record, sample)
                elif do == "slow":
                    server._stopping.wait(0.2)
                    self._ok(record, sample)
                elif do == "rate_once" and attempt == 1:
                    self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "1"})
                elif do == "date_once" and attempt == 1:
                    headers = {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}
                    self._send(500, {"error": {"message": "come back later"}}, headers)
                elif do == "rate_ms_once" and attempt == 1:
                    self._send(429, {"error": {"message": "rate limited"}}, {"retry-after-ms": "50"})
                elif (do == "fail_twice" and attempt <= 2) or (do == "fail_once" and attempt == 1):
                    self._send(500, {"error": {"message": "internal error"}})
                elif do == "timeout_once" and attempt == 1:
                    server._stopping.wait(5.0)
                    self._ok(record, sample)
                elif do == "always_500":
                    self._send(500, {"error": {"message": "still broken"}})
                elif do == "refuse":
                    self._ok(record, sample, content=None, refusal="I can't help with that.")
                elif do == "filter":
                    self._ok(record, sample, content=None, finish_reason="content_filter")
                elif do == "filter_400":
                    self._send(400, {"error": {"message": "The prompt was filtered", "code": "content_filter"}})
                elif do == "malformed":
                    self._send(200, b"<html>gateway hiccup</html>", content_type="text/html")
                elif do == "no_choices":
                    self._send(200, {"id": "x", "object": "chat.completion"})
                elif do == "bad_request":
                    self._send(400, {"error": {"message": "image could not be processed", "code": "invalid_image"}})
                elif do == "no_vision":
                    self._send(
                        400,
                        {
                            "error": {
                                "message": "This model does not support image inputs",
                                "type": "BadRequestError",
                                "code": 400,
                            }
                        },
                    )
                elif do == "auth":
                    self._send(401, {"error": {"message": "Incorrect API key provided"}})
                elif do == "echo_key":
                    self._send(400, {"error": {"message": f"rejected {record.headers.get('authorization')}"}})
                elif do == "echo_key_refused":
                    self._send(
                        400,
                        {
                            "error": {
                                "message": f"filtered for {record.headers.get('authorization')}",
                                "code": "content_filter",
                            }
                        },
                    )
                elif do == "echo_key_once" and attempt == 1:
                    self._send(500, {"error": {"message": f"upstream refused {record.headers.get('authorization')}"}})
                elif do == "echo_key_answer":
                    self._ok(record, sample, content=f"you sent {record.headers.get('authorization')}")
                else:
                    self._ok(record, sample)

        self._serve(Handler)

    def for_sample(self, sample: str) -> list[Received]:
        return [r for r in self.received if r.tags.get("id") == sample]
