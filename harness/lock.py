"""One run at a time per output folder: an advisory lock on `<model folder>/harness.lock`.

Two runs writing one model folder would interleave their journals and pay an API twice for every
request. The lock is `flock`: the operating system releases it when the process ends, however it ends,
so a killed run never blocks the next. The lock file records who holds it (pid, host, start time,
command), for the message the second run gets.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from harness.errors import UserError

LOCK_NAME = "harness.lock"


class OutputLock:
    """Use as a context manager; raises `UserError` naming the holder when the folder is in use."""

    def __init__(self, folder: Path, argv: list[str] | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.argv = list(argv if argv is not None else sys.argv)
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(self.path)
            os.close(fd)
            raise UserError(f"{self.folder} is in use by another harness run ({holder}); wait for it to finish, "
                            "or give this run another --output_path") from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": self.argv}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _describe(path: Path) -> str:
    try:
        holder: dict[str, Any] = json.loads(path.read_text() or "{}")
    except (OSError, json.JSONDecodeError):
        holder = {}
    if not holder.get("pid"):
        return "its process is starting"
    command = " ".join(str(a) for a in holder.get("argv", []))
    return f"pid {holder['pid']} on {holder.get('host', '?')}, started {holder.get('started', '?')}: {command}"
