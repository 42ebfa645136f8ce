"""A local HTTP server standing in for the Hugging Face Hub (`HF_ENDPOINT=http://127.0.0.1:PORT`), serving one dataset
repo at one commit as `huggingface_hub` asks for it, or failing the way the real one can:

    with HubServer("ZhaoweiWang/MMLongBench", {"0_mmlb_data.tar.gz": data}, failure="cut") as hub:
        env = {"HF_ENDPOINT": hub.url, ...}

`failure` (None: serve) is what every file request (and, for `gated`, `private`, `revision` and the 5xx, the
repo's listing) gets: `gated` (403, GatedRepo), `private` (401, RepoNotFound), `forbidden` (a bare 403, as a
firewall answers), `revision` (404, RevisionNotFound), `missing` (404, EntryNotFound), `unavailable` (503),
`slow` (no answer to a download for 30 s), `cut` (half the file, then the connection closes). With `proxy=True`
it answers as a proxy that refuses: 407 to everything (point HTTP_PROXY at it). The listing gives each file's size
(`listed_sizes` to list another).
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FAILURES = ("gated", "private", "forbidden", "revision", "missing", "unavailable", "slow", "cut")
_ERRORS = {
    "gated": (403, "GatedRepo", "Access to this dataset is restricted"),
    "private": (401, "RepoNotFound", "Repository not found"),
    "forbidden": (403, None, "Forbidden"),
    "revision": (404, "RevisionNotFound", "Invalid rev id"),
    "missing": (404, "EntryNotFound", "Entry not found"),
    "unavailable": (503, None, "Service Unavailable"),
}
_LISTING_FAILURES = ("gated", "private", "revision", "unavailable")


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hung up before the answer ended (a refused or cut download, a `slow` answer written after
        its test is over) is no error of the server's: socketserver would print its traceback into whichever test
        this worker runs then, whose captured stderr it fails."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]  # socketserver types it a socket


class HubServer:
    def __init__(
        self,
        repo: str,
        files: Mapping[str, bytes],
        *,
        failure: str | None = None,
        proxy: bool = False,
        listed_sizes: Mapping[str, int] | None = None,
    ) -> None:
        assert failure is None or failure in FAILURES, failure
        self.repo, self.files, self.failure, self.proxy = repo, dict(files), failure, proxy
        # The size the listing gives each file (its true size unless said otherwise), as the Hub lists with `blobs`.
        self.listed_sizes = {name: len(data) for name, data in files.items()} | dict(listed_sizes or {})
        self.requests: list[str] = []
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                if hub.proxy:
                    return self._error(407, None, "Proxy Authentication Required", {"Proxy-Authenticate": "Basic"})
                path = unquote(urlparse(self.path).path)
                listing = f"/api/datasets/{hub.repo}/revision/"
                if path.startswith(listing):
                    if hub.failure in _LISTING_FAILURES:
                        return self._error(*_ERRORS[hub.failure])
                    siblings = [{"rfilename": name, "size": hub.listed_sizes[name]} for name in hub.files]
                    return self._send(200, json.dumps({"id": hub.repo, "sha": COMMIT, "siblings": siblings}).encode())
                prefix = f"/datasets/{hub.repo}/resolve/"
                if not path.startswith(prefix):
                    return self._error(404, "RepoNotFound", "Repository not found")
                name = path[len(prefix) :].split("/", 1)[1]
                if hub.failure in _ERRORS:
                    return self._error(*_ERRORS[hub.failure])
                if name not in hub.files:
                    return self._error(404, "EntryNotFound", "Entry not found")
                data = hub.files[name]
                headers = {"ETag": f'"{hashlib.sha256(data).hexdigest()}"', "X-Repo-Commit": COMMIT}
                if not body:
                    return self._send(200, b"", headers, length=len(data))
                if hub.failure == "slow":
                    time.sleep(30)
                start = int(self.headers.get("Range", "bytes=0-").split("=")[1].split("-")[0] or 0)
                if hub.failure == "cut":  # promise the rest, send half of it, and hang up
                    self._send(206 if start else 200, b"", headers, length=len(data) - start, end=False)
                    self.wfile.write(data[start : start + max(1, (len(data) - start) // 2)])
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                return self._send(206 if start else 200, data[start:], headers)

            def _error(self, status: int, code: str | None, message: str, extra: dict | None = None) -> None:
                headers = {"X-Error-Message": message, **({"X-Error-Code": code} if code else {}), **(extra or {})}
                self._send(status, json.dumps({"error": message}).encode(), headers)

            def _send(
                self, status: int, data: bytes, headers: dict | None = None, length: int | None = None, end: bool = True
            ) -> None:
                self.send_response(status)
                for key, value in {"X-Repo-Commit": COMMIT, **(headers or {})}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                if end and data:
                    self.wfile.write(data)

        return Handler
