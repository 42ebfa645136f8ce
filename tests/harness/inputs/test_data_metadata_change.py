"""Issue 30, item 8: a data file whose metadata changes while a run reads it (`chmod`, a hard link, `touch`: its
bytes the same) is hashed again and the run goes on; only bytes that really changed make `invalid_input`.
Before, any such change turned the rest of the run into final `invalid_input` samples (exit 0, never retried)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support.chat_server import ChatServer
from tests.support.toy_benchmark import build_toy


def _flip_an_image_byte(path: Path) -> None:
    """Change one byte of the first JPEG's scan data in place (same size, same inode)."""
    data = bytearray(path.read_bytes())
    end = data.index(b"\xff\xd9")  # the first image's end-of-image marker
    with open(path, "r+b") as handle:
        handle.seek(end - 10)
        handle.write(bytes([data[end - 10] ^ 0x55]))


CHANGES = {
    "chmod": lambda path: os.chmod(path, 0o600),
    "a hard link": lambda path: os.link(path, path.with_name("linked.parquet.bak")),
    "touch": lambda path: os.utime(path, (1, 1)),
    "its bytes": _flip_an_image_byte,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_metadata_change_mid_run_is_hashed_again_and_only_changed_bytes_are_invalid(
    tmp_path: Path, toy_tasks: Path, capsys, change: str
) -> None:
    build_toy(tmp_path / "data", configs=["colors"])
    (data_file,) = (tmp_path / "data" / "toy" / "colors").glob("*.parquet")
    changed: list[bool] = []

    def answer(body: dict) -> str:  # the first request's answer arrives, then the file changes under the run
        if not changed:
            CHANGES[change](data_file)
            changed.append(True)
        return "red"

    server = ChatServer(answer=answer)
    server.start()
    try:
        code = main(
            [
                "--tasks",
                "toy_colors",
                "--include_path",
                str(toy_tasks),
                "--data_dir",
                str(tmp_path / "data"),
                "--model",
                "openai",
                "--model_args",
                f"model=m,base_url={server.base_url},api_key=k,concurrency=1,chunk_size=1",
                "--output_path",
                str(tmp_path / "out"),
                "--no_progress",
            ]
        )
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err, err
    (journal,) = (tmp_path / "out").glob("*/journal_toy_colors.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    statuses = [r["status"] for r in records]
    if change == "its bytes":
        assert statuses == ["ok"] + ["invalid_input"] * 5
        assert "changed while the run read it" in records[1]["error"]
    else:
        assert statuses == ["ok"] * 6 and len(server.received) == 6


def test_an_image_the_disk_fails_to_read_is_an_error_tried_again_not_invalid_input(tmp_path: Path) -> None:
    """An I/O error says nothing about the bytes: the sample is an error (a rerun tries it again), not final."""
    import errno

    from harness.api import error_status
    from harness.models.registry import get_model_class
    from harness.running.cache import CACHE_FILENAME, CachingModel, ResponseCache
    from tests.support.model_requests import encode_image, image_ref, make_request

    sound = image_ref(encode_image((1, 2, 3), (8, 8), "JPEG"))  # its sha256 and size; loading it is what fails

    def fail() -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    unreadable = type(sound)(sound.sha256, fail, 1, 1)
    server = ChatServer()
    server.start()
    model = get_model_class("openai").from_args({"model": "m", "base_url": server.base_url, "api_key": "k"})
    cached = CachingModel(model, ResponseCache(tmp_path / CACHE_FILENAME))
    try:
        for backend in (model, cached):
            (response,) = backend.generate([make_request("s", ["#id=s look", unreadable])])
            assert "Input/output error" in response.error and error_status(response.error) == "error", response.error
    finally:
        cached.close()
        server.stop()
    assert server.received == []
