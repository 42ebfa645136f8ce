"""A bound on the whole wall time of one HTTP request, and on the bytes its answer may hold, for every API backend.

httpx's timeouts bound each network operation (connect, one read, one write), not a request: a server that sends
its headers or its body a byte a second never trips a read timeout and holds the request for as long as it
likes. Here every socket operation of a request gets the smaller of its own timeout and what is left of the
request's `deadline` (a thread-local set around one attempt), so the attempt ends at its deadline whatever the
server does, with the HTTP stack's own `ReadTimeout` (`WriteTimeout`, `ConnectTimeout`), which callers already retry.
The bound is enforced by a network backend under the client's connection pool (`deadline_transport`); a request sent
through a proxy from the environment (`HTTPS_PROXY`) is bounded by `read_capped`'s clock while its body streams in.

Two HTTP stacks are served: httpx over httpcore (the `openai` and `gemini` backends) and its fork httpx2 over
httpcore2, which Anthropic's SDK requires; `deadline_transport(limits, stack)` builds either from the same classes.

`read_capped` reads an answer's body only up to a byte cap (a `Content-Length` over it is refused before a byte
of the body is read), so an enormous answer never sits in memory or in the response cache. A backend whose SDK reads
the body itself gets the same cap from the transport (`capped(n)` around the call): the body streams through
`capped_chunks` as the SDK reads it.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpcore
import httpx

_STATE = threading.local()
STACKS = {"httpx": "httpcore", "httpx2": "httpcore2"}  # an httpx flavour -> the httpcore flavour under it


class BodyTooLarge(Exception):
    """An answer's body is over the cap; `size` is what the server declared or what had arrived."""

    def __init__(self, size: int, cap: int, declared: bool) -> None:
        said = "declares" if declared else "sent more than"
        super().__init__(f"the answer {said} {size} bytes, over the cap of {cap} bytes (max_response_bytes)")


class BadEncoding(ValueError):
    """An answer compressed in a way not asked for, or whose compressed body does not decompress."""


@contextmanager
def _bound(name: str, value: float) -> Iterator[None]:
    """This thread's bound `name` set to `value` while inside, the one outside it restored after."""
    previous = getattr(_STATE, name, None)
    setattr(_STATE, name, value)
    try:
        yield
    finally:
        setattr(_STATE, name, previous)


def deadline(seconds: float) -> AbstractContextManager[None]:
    """Bound every socket operation made in this thread, while inside, to end `seconds` from now."""
    return _bound("at", time.monotonic() + seconds)


def capped(cap: int) -> AbstractContextManager[None]:
    """Bound the body of every answer read in this thread, while inside, through a `deadline_transport`, to `cap`."""
    return _bound("cap", cap)


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


@dataclass(frozen=True)
class _Expiry:
    """The timeout errors of one httpcore flavour, raised when a request's deadline has passed."""

    read: type[Exception]
    write: type[Exception]
    connect: type[Exception]


class _BoundedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, expiry: _Expiry) -> None:
        self._inner, self._expiry = inner, expiry

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, self._expiry.read))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # One bounded send per slice: a server that reads a byte a second cannot stretch a large upload past it.
        for start in range(0, len(buffer), 65536):
            self._inner.write(buffer[start : start + 65536], _left(timeout, self._expiry.write))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _BoundedStream(
            self._inner.start_tls(ssl_context, server_hostname, _left(timeout, self._expiry.connect)), self._expiry
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    """httpcore's own backend (or httpcore2's: the same calls), every socket operation bounded by `deadline`."""

    def __init__(self, core: ModuleType) -> None:
        self._inner: httpcore.NetworkBackend = core.SyncBackend()
        self._expiry = _Expiry(core.ReadTimeout, core.WriteTimeout, core.ConnectTimeout)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host, port, _left(timeout, self._expiry.connect), local_address, socket_options
        )
        return _BoundedStream(stream, self._expiry)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_unix_socket(path, _left(timeout, self._expiry.connect), socket_options)
        return _BoundedStream(stream, self._expiry)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def http_stack(stack: str) -> ModuleType:
    """The httpx flavour named (`httpx`, `httpx2`), imported."""
    if stack not in STACKS:
        raise ValueError(f"unknown HTTP stack {stack!r}; known: {', '.join(STACKS)}")
    return importlib.import_module(stack)


def pooled_client(
    concurrency: int, timeout: float, stack: str = "httpx", headers: Mapping[str, str] | None = None
) -> httpx.Client:
    """An API backend's client in the flavour named (for httpx2, its class of the same name): a connection per
    concurrent request, `timeout` seconds an attempt, through `deadline_transport`, with these headers."""
    web = http_stack(stack)
    limits = web.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client: httpx.Client = web.Client(
        timeout=web.Timeout(timeout), limits=limits, transport=deadline_transport(limits, stack), headers=headers
    )
    return client


def deadline_transport(limits: httpx.Limits, stack: str = "httpx") -> httpx.BaseTransport:
    """The flavour's own transport, its connection pool's network backend replaced by one that honours `deadline`, and
    its answers' bodies bounded by `capped` (where a caller set a cap). (For httpx2, its classes of the same names.)"""
    web = http_stack(stack)
    core = importlib.import_module(STACKS[stack])
    transport = web.HTTPTransport(limits=limits)
    # httpx takes no network backend of its own: its pool is rebuilt as it builds it, with ours.
    transport._pool = core.ConnectionPool(  # noqa: SLF001
        ssl_context=web.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_BoundedBackend(core),
    )
    capping: type[httpx.BaseTransport] = _capping_transport_class(web)
    return capping(transport)  # type: ignore[call-arg]  # the class takes the transport it wraps


@functools.cache
def _capping_transport_class(web: ModuleType) -> type:
    class CappedBody(web.SyncByteStream):  # type: ignore[name-defined]  # the flavour's class, chosen at run time
        def __init__(self, inner: Iterable[bytes], encoding: str, cap: int) -> None:
            self._inner, self._encoding, self._cap = inner, encoding, cap

        def __iter__(self) -> Iterator[bytes]:
            yield from capped_chunks(self._inner, self._encoding, self._cap, web.ReadTimeout)

        def close(self) -> None:
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()

    class CappingTransport(web.BaseTransport):  # type: ignore[name-defined]  # the same
        """Answers read while a `capped` bound is set stream through `capped_chunks`, decompressed here (the headers
        then say identity), so an SDK that reads the whole body reads at most the cap."""

        def __init__(self, inner: httpx.BaseTransport) -> None:
            self._inner = inner

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = self._inner.handle_request(request)
            cap = getattr(_STATE, "cap", None)
            if cap is None:
                return response
            declared = response.headers.get("content-length", "")
            if declared.isdecimal() and int(declared) > cap:
                response.close()
                raise BodyTooLarge(int(declared), cap, declared=True)
            encoding = response.headers.get("content-encoding", "identity")
            headers = [
                (k, v)
                for k, v in response.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length")
            ]
            capped_response: httpx.Response = web.Response(
                response.status_code,
                headers=headers,
                stream=CappedBody(response.stream, encoding, cap),  # type: ignore[arg-type]  # a sync stream
                extensions=response.extensions,
            )
            return capped_response

        def close(self) -> None:
            self._inner.close()

    return CappingTransport


def capped_chunks(
    raw: Iterable[bytes], encoding: str, cap: int, timeout_error: type[Exception] = httpx.ReadTimeout
) -> Iterator[bytes]:
    """A body's chunks as they arrive, decompressed where the server compressed them, refused with `BodyTooLarge` once
    over `cap` bytes (read or decompressed) and ended by the request's deadline while they stream in."""
    encoding = encoding.strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise BadEncoding(f"the answer is compressed as {encoding!r}, which was not asked for")
    decoder = None if encoding in ("", "identity") else zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
    size = out = 0
    for chunk in raw:
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(size, cap, declared=False)
        if decoder is not None:
            try:
                chunk = decoder.decompress(chunk, cap + 1 - out)
            except zlib.error as err:
                raise BadEncoding(f"the answer's {encoding} body does not decompress ({err})") from None
            if decoder.unconsumed_tail:  # more than the cap would come out of what has arrived
                raise BodyTooLarge(out + len(chunk) + 1, cap, declared=False)
        out += len(chunk)
        if out > cap:
            raise BodyTooLarge(out, cap, declared=False)
        if expired():
            raise timeout_error("the request's total time bound was reached")
        yield chunk


def read_capped(reply: httpx.Response, cap: int) -> bytes:
    """A streamed answer's body, refused with `BodyTooLarge` once over `cap` bytes (read or, for a compressed
    body, decompressed), before the rest is read; and ended by the request's deadline while it streams in.
    (The request asks for no compression: a body compressed all the same is decompressed here, within the cap.)"""
    declared = reply.headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > cap:
        raise BodyTooLarge(int(declared), cap, declared=True)
    return b"".join(capped_chunks(reply.iter_raw(), reply.headers.get("content-encoding", "identity"), cap))
