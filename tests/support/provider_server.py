"""A loopback HTTP server that records every request and answers it as a provider would, for the tests of the API
backends that speak a provider's own wire format (`gemini_server.py`, `anthropic_server.py`; the chat-completions one
is `chat_server.py`).

Each request's text names its sample and what the server should do: `#id=s1 #do=ok`. The scenarios every provider
server shares (per sample, counting that sample's attempts):

    ok            200 with the provider's answer "answer:<id>" and its usage block
    rate_once     1st attempt: 429 with `Retry-After: 1`; then ok
    fail_once     1st attempt: 500; then ok
    always_500    500 forever
    timeout_once  1st attempt: answers only after 5 s (beyond the client's timeout); then ok
    malformed     200 with an HTML body
    huge          200 whose body declares and sends `huge_bytes` bytes
    auth          401
    bad_request   400 (not retried)

A subclass adds its provider's own (`extra_scenario`) and writes its answers (`answer`, `error`). `LoopbackServer`, the
server itself (its thread, its port, what it received), is the chat server's too.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_TAG = re.compile(r"#(id|do)=(\S+)")


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw: bytes
    body: Any
    at: float


def tags_in(texts: list[str]) -> dict[str, str]:
    return dict(_TAG.findall(" ".join(texts)))


def message_texts(body: dict[str, Any]) -> list[str]:
    """The texts of a chat-style body's `messages` (OpenAI's, Anthropic's): each content that is a string, and each
    text part of one that is a list."""
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.extend(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return texts


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (an ephemeral port), in a thread of its own, that records what it receives and
    counts each sample's attempts: what the provider servers and `chat_server.ChatServer` share. A subclass's `start`
    serves its request handler (`_serve`); `stop` ends it, and any answer held back (`_stopping`)."""

    url_path = ""  # what follows host:port in `base_url`

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.url_path}"

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class ProviderServer(LoopbackServer):
    received: list[Received]

    def __init__(self, *, huge_bytes: int = 10_000_000) -> None:
        super().__init__()
        self.huge_bytes = huge_bytes

    # -- what a provider server says ---------------------------------------------------------------

    def texts(self, body: Any) -> list[str]:
        """The request's texts, where its tags are read."""
        raise NotImplementedError

    def answer(self, record: Received, sample: str, do: str) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, headers) of a 200 answer for `do` (ok, or a provider's own scenario)."""
        raise NotImplementedError

    def error(self, status: int, message: str) -> Any:
        raise NotImplementedError

    def route(self, handler: Any, record: Received) -> bool:
        """Answer a request that is not a generation (an upload, a batch call): True if answered."""
        return False

    # -- the server --------------------------------------------------------------------------------

    def send(self, handler: Any, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json" if not isinstance(payload, bytes) else "text/html")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _record(self, method: str) -> Received:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                split = urlsplit(self.path)
                record = Received(
                    method,
                    split.path,
                    parse_qs(split.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    raw,
                    body,
                    time.monotonic(),
                )
                with server._lock:
                    server.received.append(record)
                return record

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                record = self._record("GET")
                if not server.route(self, record):
                    server.send(self, 404, server.error(404, f"no route {record.path}"))

            def do_POST(self) -> None:  # noqa: N802
                record = self._record("POST")
                try:
                    if server.route(self, record):
                        return
                    tags = tags_in(server.texts(record.body))
                    sample, do = tags.get("id", "?"), tags.get("do", "ok")
                    with server._lock:
                        server.attempts[sample] = attempt = server.attempts.get(sample, 0) + 1
                    server._generation(self, record, sample, do, attempt)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout tests)

        self._serve(Handler)

    def _generation(self, handler: Any, record: Received, sample: str, do: str, attempt: int) -> None:
        if do == "rate_once" and attempt == 1:
            self.send(handler, 429, self.error(429, "rate limited"), {"Retry-After": "1"})
        elif do == "fail_once" and attempt == 1 or do == "always_500":
            self.send(handler, 500, self.error(500, "internal error"))
        elif do == "timeout_once" and attempt == 1:
            self._stopping.wait(5.0)
            self._ok(handler, record, sample, "ok")
        elif do == "malformed":
            self.send(handler, 200, b"<html>gateway hiccup</html>")
        elif do == "huge":
            self.send(handler, 200, b"x" * self.huge_bytes)
        elif do == "auth":
            self.send(handler, 401, self.error(401, "API key not valid"))
        elif do == "bad_request":
            self.send(handler, 400, self.error(400, "image could not be processed"))
        else:
            self._ok(handler, record, sample, do)

    def _ok(self, handler: Any, record: Received, sample: str, do: str) -> None:
        status, body, headers = self.answer(record, sample, do)
        self.send(handler, status, body, headers)

    def for_sample(self, sample: str) -> list[Received]:
        return [r for r in self.received if r.body is not None and tags_in(self.texts(r.body)).get("id") == sample]
