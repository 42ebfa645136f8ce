"""One run at a time per output folder: an advisory lock on `<model folder>/harness.lock`.

Two runs writing one model folder would interleave their journals and pay an API twice for every
request. The lock is `flock`: the operating system releases it when the process ends, however it ends,
so a killed run never blocks the next. The lock file holds the holder's pid and its command line with
every secret redacted (`harness.redact.redact_command`), nothing else, for the message the second run
gets; that message redacts what it reads again, by name, so a lock file written by an older version
prints no secret either. A run that ends, or fails to start, removes the lock file (and the model
folder, when the run created it and left it empty): only a killed run leaves one behind. A link or anything but a
regular file at its name (a FIFO) is refused in one line, and the holder is read back as the journal is (no link,
a regular file of at most `HOLDER_MOST` bytes).
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.file_writing import LinkRefused, NotReadBack, not_regular, open_no_follow, read_bytes, reporting
from harness.redact import redact_command

LOCK_NAME = "harness.lock"
HOLDER_MOST = 1 << 20  # its pid and command line (redacted); longer is no lock file of ours


class OutputLock:
    """Use as a context manager; raises `UserError` naming the holder when the folder is in use."""

    def __init__(self, folder: Path, argv: list[str], secrets: list[str] | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.argv = redact_command(argv, secrets or [])
        self._fd: int | None = None
        self._made: list[Path] = []  # folders this lock created, deepest first

    def __enter__(self) -> OutputLock:
        with reporting(self.path):
            self._made = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = self._acquire()
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps({"pid": os.getpid(), "argv": self.argv}) + "\n").encode(), 0)
            except BaseException:
                self._release(fd)
                raise
        self._fd = fd
        return self

    def _acquire(self) -> int:
        """A descriptor of the lock file holding the lock. The lock file is removed on release, so a lock taken
        on a file that has been removed (or replaced) since it was opened is no lock: try again."""
        while True:
            try:  # never through a link planted in its place: the link's target would be truncated
                fd = open_no_follow(self.path, os.O_RDWR | os.O_CREAT)
            except LinkRefused:
                self._remove_made()
                raise
            if not stat.S_ISREG(mode := os.fstat(fd).st_mode):  # a FIFO planted there: no lock file of ours
                os.close(fd)
                self._remove_made()
                raise NotReadBack(not_regular(self.path, mode))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe(self.path)
                os.close(fd)
                self._remove_made()
                raise UserError(
                    f"{self.folder} is in use by another harness run ({holder}); wait for it to finish, "
                    "or give this run another --output_path"
                ) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self._release(fd)

    def _release(self, fd: int) -> None:
        try:
            self.path.unlink(missing_ok=True)  # while still held: nobody can take a lock on it in between
        except OSError:
            pass  # a read-only folder: the lock is released all the same
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        self._remove_made()

    def _remove_made(self) -> None:
        for folder in self._made:
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (another run's files, or this run's results): keep it and its parents


def _describe(path: Path) -> str:
    try:
        holder: dict[str, Any] = json.loads(read_bytes(path, HOLDER_MOST, "a lock file") or "{}")
    except (OSError, UserError, ValueError, RecursionError):  # a link, a FIFO, a huge file: no holder to name
        holder = {}
    if not isinstance(holder, dict) or not holder.get("pid"):
        return "its process is starting"
    argv = holder.get("argv")
    command = " ".join(redact_command(str(a) for a in argv)) if isinstance(argv, list) else ""
    return f"pid {holder['pid']}" + (f": {command}" if command else "")
