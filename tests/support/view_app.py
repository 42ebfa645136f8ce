"""The viewer (`harness view`) over a results folder, as its tests drive it: in process through Starlette's test
client, or served by uvicorn on a free loopback port for a browser or a client that sends requests byte for byte."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

VIEW_HOST, VIEW_PORT = "127.0.0.1", 8765  # the Host an in-process app is started for
VIEW_BASE = f"http://{VIEW_HOST}:{VIEW_PORT}"


def view_client(results: Path, host: str = VIEW_HOST, port: int = VIEW_PORT, **options: Any) -> Any:
    """A test client of the viewer's app over `results`, started for `host:port` (`options` go to `create_app`)."""
    from starlette.testclient import TestClient

    from harness.view.app import create_app, served_hosts

    return TestClient(create_app(results, hosts=served_hosts(host, port), **options), base_url=f"http://{host}:{port}")


@contextmanager
def served_view(results: Path, log_level: str = "warning") -> Iterator[int]:
    """The viewer's app over `results` served by uvicorn on a free loopback port (yielded) until the block ends."""
    import uvicorn

    from harness.view.app import create_app, served_hosts

    sock = socket.socket()
    sock.bind((VIEW_HOST, 0))
    port = sock.getsockname()[1]
    app = create_app(results, hosts=served_hosts(VIEW_HOST, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
