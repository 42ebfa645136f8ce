"""A bound on the whole wall time of one HTTP request, and on the bytes its answer may hold.

httpx's timeouts bound each network operation (connect, one read, one write), not a request: a server that sends
its headers or its body a byte a second never trips a read timeout and holds the request for as long as it
likes. Here every socket operation of a request gets the smaller of its own timeout and what is left of the
request's `deadline` (a thread-local set around one attempt), so the attempt ends at its deadline whatever the
server does, with httpx's own `ReadTimeout` (`WriteTimeout`, `ConnectTimeout`), which callers already retry.
The bound is enforced by a network backend under httpx's connection pool (`deadline_transport`); a request sent
through a proxy from the environment (`HTTPS_PROXY`) is bounded by `read_capped`'s clock while its body
streams in.

`read_capped` reads an answer's body only up to a byte cap (a `Content-Length` over it is refused before a byte
of the body is read), so an enormous answer never sits in memory or in the response cache.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_STATE = threading.local()


class BodyTooLarge(Exception):
    """An answer's body is over the cap; `size` is what the server declared or what had arrived."""

    def __init__(self, size: int, cap: int, declared: bool) -> None:
        said = "declares" if declared else "sent more than"
        super().__init__(f"the answer {said} {size} bytes, over the cap of {cap} bytes (max_response_bytes)")


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Bound every socket operation made in this thread, while inside, to end `seconds` from now."""
    previous = getattr(_STATE, "at", None)
    _STATE.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _STATE.at = previous


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    at = getattr(_STATE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the request's total time bound was reached")
    return left if timeout is None else min(timeout, left)


def expired() -> bool:
    at = getattr(_STATE, "at", None)
    return at is not None and time.monotonic() >= at


class _BoundedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # One bounded send per slice: a server that reads a byte a second cannot stretch a large upload past it.
        for start in range(0, len(buffer), 65536):
            self._inner.write(buffer[start : start + 65536], _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _BoundedStream(
            self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        return _BoundedStream(
            self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        return _BoundedStream(
            self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options)
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    """httpx's own transport, its connection pool's network backend replaced by one that honours `deadline`."""
    transport = httpx.HTTPTransport(limits=limits)
    # httpx takes no network backend of its own: its pool is rebuilt as it builds it, with ours.
    transport._pool = httpcore.ConnectionPool(  # noqa: SLF001
        ssl_context=httpx.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_BoundedBackend(),
    )
    return transport


def read_capped(reply: httpx.Response, cap: int) -> bytes:
    """A streamed answer's body, refused with `BodyTooLarge` once over `cap` bytes (read or, for a compressed
    body, decompressed), before the rest is read; and ended by the request's deadline while it streams in.
    (The request asks for no compression: a body compressed all the same is decompressed here, within the cap.)"""
    declared = reply.headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > cap:
        raise BodyTooLarge(int(declared), cap, declared=True)
    chunks, size = [], 0
    for chunk in reply.iter_raw():
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(size, cap, declared=False)
        chunks.append(chunk)
        if expired():
            raise httpx.ReadTimeout("the request's total time bound was reached")
    raw = b"".join(chunks)
    encoding = reply.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise ValueError(f"the answer is compressed as {encoding!r}, which was not asked for")
    decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
    try:
        body = decoder.decompress(raw, cap + 1)
    except zlib.error as err:
        raise ValueError(f"the answer's {encoding} body does not decompress ({err})") from None
    if len(body) > cap:
        raise BodyTooLarge(len(body), cap, declared=False)
    return body
