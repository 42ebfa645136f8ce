"""Writing the run's files: whole or not at all, scrubbed of secrets, and failing with one line.

A file written as a whole (results, sample logs, the judge log, a compacted or merged journal) goes to
`<name>.tmp`, is fsync'd and renamed over its target, so a reader sees the old file or the new one, never
half of one. Nothing the run writes is opened through a symbolic link: files are opened with `O_NOFOLLOW`,
and the temporary file is created anew (`O_EXCL`) after removing a leftover of a killed run, so a link
planted in the output folder (to a file the user cares about) is refused with one line (`LinkRefused`)
instead of having its target truncated and overwritten. Every text passes `harness.redact.scrub` on its way out. When the disk refuses (read-only,
full, over `ulimit -f`), the temporary file is removed and `OutputError` names the file and the system's
reason; the CLI prints that one line and exits 1, and the same command resumes from the journals, whose
lines were fsync'd as they were written.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Literal, TextIO

from harness.errors import OutputError, UserError
from harness.redact import scrub

TMP_SUFFIX = ".tmp"


class LinkRefused(UserError):
    """A file the run writes is a symbolic link: refused, never followed."""

    def __init__(self, path: Path) -> None:
        try:
            target = f" (to {os.readlink(path)})"
        except OSError:
            target = ""
        super().__init__(
            f"{path} is a symbolic link{target}: the harness writes this file itself and never "
            "through a link; remove the link, or give another --output_path"
        )
        self.path = path


def refuse_link(path: Path) -> None:
    """`LinkRefused` if `path` is a symbolic link (one that leads nowhere too)."""
    if path.is_symlink():
        raise LinkRefused(path)


def open_no_follow(path: Path, flags: int, mode: int = 0o644) -> int:
    """`os.open` that never follows a link at `path` itself (`LinkRefused` instead)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as err:
        if err.errno == errno.ELOOP or (err.errno == errno.EEXIST and path.is_symlink()):
            raise LinkRefused(path) from None
        raise


def open_text(path: Path, mode: Literal["w", "a"]) -> TextIO:
    """A text file opened without following a link: mode `w` (truncate or create), `a` (append or create)."""
    flags = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}[mode]
    return os.fdopen(open_no_follow(path, flags), mode, encoding="utf-8", errors="backslashreplace")


def read_bytes(path: Path) -> bytes:
    """A file's bytes, refusing a link at `path` (a file the run will write again)."""
    with os.fdopen(open_no_follow(path, os.O_RDONLY), "rb") as handle:
        return handle.read()


def create_exclusive(path: Path) -> int:
    """A new, empty file at `path` (a leftover regular file of a killed run is removed first; a link is refused);
    created with `O_EXCL`, so nothing planted between the removal and the creation is ever written through."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise LinkRefused(path)
        os.unlink(path)
    except FileNotFoundError:
        pass
    return open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)


@contextmanager
def reporting(path: Path) -> Iterator[None]:
    """Turn an `OSError` met while writing `path` into an `OutputError` naming it."""
    try:
        yield
    except OSError as err:
        raise OutputError(path, err) from None


def temporary(path: Path) -> Path:
    return path.with_name(path.name + TMP_SUFFIX)


def write_atomically(path: Path, fill: Callable[[BinaryIO], object]) -> Path:
    """Have `fill` write the whole of `path`'s new bytes to its temporary file, then rename it over `path` (a link
    at `path` itself is replaced, never written through); returns `path`. The caller scrubs what it writes."""
    tmp = temporary(path)
    created = False
    try:
        with reporting(tmp):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = create_exclusive(tmp)
            created = True
            with os.fdopen(fd, "wb") as handle:
                fill(handle)
                handle.flush()
                os.fsync(handle.fileno())
            tmp.replace(path)
    except BaseException:
        if created:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass  # nothing could be created there either
        raise
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    """Write `data` to `path` atomically, as it is (not scrubbed: a figure, a manifest of hashes); returns `path`."""
    return write_atomically(path, lambda handle: handle.write(data))


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    """Write `lines` (each scrubbed, a newline added) to `path` atomically; returns `path`."""

    def fill(handle: BinaryIO) -> None:
        for line in lines:
            handle.write((scrub(line) + "\n").encode("utf-8", "backslashreplace"))  # a lone surrogate

    return write_atomically(path, fill)


def write_text(path: Path, text: str) -> Path:
    """Write `text` (scrubbed) to `path` atomically; returns `path`."""
    return write_lines(path, [text.removesuffix("\n")])
