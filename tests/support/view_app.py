"""The viewer (`harness view`) over a results folder, as its tests drive it: in process through Starlette's test
client, or served by uvicorn on a free loopback port for a browser or a client that sends requests byte for byte."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
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


def unmarked(page: str) -> str:
    """A page's HTML without the line ends it marks in names and keys (`<wbr>`, where a narrow window may end a line:
    `harness.view.shown.line_breaks`)."""
    return page.replace("<wbr>", "")


def shown_text(fragment: str) -> str:
    """The text a page's HTML `fragment` reads as: its entities unescaped, its marked line ends left out."""
    return html.unescape(unmarked(fragment))


def shown_prompts(results: Path, task: str) -> dict[str, str]:
    """Sample id -> the prompt text the viewer's sample page shows as sent, for the one model and `task` of `results`
    (each image it shows served)."""
    from harness.view.catalog import Catalog

    (model,) = Catalog(results).model_names()
    client = view_client(results)
    (journal,) = results.rglob(f"journal_{task}.jsonl")
    records = {r["sample_id"]: r for r in map(json.loads, journal.read_text().splitlines()[1:])}
    shown = {}
    for sample_id, record in records.items():
        if "prompt_sha256" not in record:  # screened out: nothing was sent
            continue
        page = client.get("/sample", params={"model": model, "task": task, "id": sample_id})
        assert page.status_code == 200
        assert "the request as the backend sent it" in page.text
        turn = re.search(r'<div class="turn turn-sent">.*?<span class="text">(.*?)</span>', page.text, flags=re.S)
        assert turn is not None, page.text[:2000]
        shown[sample_id] = shown_text(turn.group(1))
        images = re.findall(r'src="/image/([0-9a-f]{64})\?size=thumb"', page.text)
        assert images == [image["sha256"] for image in record["sent_images"]] and images
        for sha in images:  # each image as sent, served
            assert client.get(f"/image/{sha}").status_code == 200, (sample_id, sha)
    return shown


def as_shown(messages: list[dict[str, Any]]) -> str:
    """Chat messages as a server received them, each image's data URL named by its bytes' sha256 as the journal
    names it: the text the viewer shows for them."""
    for message in messages:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                header, data = part["image_url"]["url"].split(",", 1)
                assert header.startswith("data:image/") and header.endswith(";base64")
                part["image_url"]["url"] = f"sha256:{hashlib.sha256(base64.b64decode(data)).hexdigest()}"
    return json.dumps(messages, ensure_ascii=False)
