"""The Host names the viewer answers: those it was started for, so that a web page the user visits elsewhere cannot
read its pages by DNS rebinding (pointing a name of its own at 127.0.0.1: the browser then sends that name as the
request's `Host`, which no page of ours is served under).

Answered: `127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT` and `--host`'s own `HOST:PORT`. Listening on every address
(`--host 0.0.0.0` or `::`), also the machine's own name and any IP address (`10.1.2.3:PORT`): an address in the
`Host` header is the origin the browser holds, which no other site's page can read across. Anything else, a missing
or malformed header included, is refused with 421 (Misdirected Request) before any page is read.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
EVERY_ADDRESS = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class ServedHosts:
    """The names (lower case, IPv6 without brackets) and the port the server answers under."""

    names: frozenset[str]
    port: int
    any_address: bool = False  # bound to every address: any IP literal is answered too

    def allows(self, header: str | None) -> bool:
        """Whether a request's `Host` header names this server."""
        parsed = split_host(header)
        if parsed is None:
            return False
        name, port = parsed
        if port != self.port:
            return False
        return name in self.names or (self.any_address and is_address(name))


def served_hosts(host: str, port: int) -> ServedHosts:
    """What a server listening on `host`:`port` answers (see the module's docstring)."""
    names = {*LOOPBACK_NAMES, host.strip("[]").lower()}
    any_address = host in EVERY_ADDRESS
    if any_address:
        names.add(socket.gethostname().lower())
    return ServedHosts(frozenset(names - {""}), port, any_address)


def split_host(header: str | None) -> tuple[str, int] | None:
    """(name, port) of a `Host` header (`name`, `name:port`, `[v6]:port`; port 80 when none), or None."""
    if not header or not header.isascii() or any(c.isspace() or c in "/@?#\\" for c in header):
        return None
    if header.startswith("["):
        name, bracket, rest = header[1:].partition("]")
        if not bracket or not is_address(name) or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else "80"
    else:
        name, colon, port_text = header.partition(":")
        if not colon:
            port_text = "80"
    if not name or not port_text.isdigit() or len(port_text) > 5 or not 0 < int(port_text) < 65536:
        return None
    return name.lower(), int(port_text)


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostCheck:
    """ASGI middleware: every request whose `Host` the server was not started for is refused (421)."""

    def __init__(self, app: ASGIApp, hosts: ServedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self.hosts.allows(Headers(scope=scope).get("host")):
            refusal = PlainTextResponse(
                "harness view: refused: the Host header names no address this server was started for\n",
                status_code=421,
                headers={"Cache-Control": "no-store"},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)
