"""Writing the run's files: whole or not at all, scrubbed of secrets, and failing with one line.

A file written as a whole (results, sample logs, the judge log, a compacted or merged journal) goes to
`<name>.tmp`, is fsync'd and renamed over its target, so a reader sees the old file or the new one, never
half of one. Nothing the run writes is opened through a symbolic link: files are opened with `O_NOFOLLOW`,
and the temporary file is created anew (`O_EXCL`) after removing a leftover of a killed run, so a link
planted in the output folder (to a file the user cares about) is refused with one line (`LinkRefused`)
instead of having its target truncated and overwritten. A file the run reads back (a journal, its prompt store, its
batch ids) is read the same way: never through a link, only once `fstat` on the open descriptor says it is a regular
file (a FIFO would hang the run) of at most its bound (`NotReadBack`, one line, before a byte is read). Every text passes `harness.redact.scrub` on its way out. When the disk refuses (read-only,
full, over `ulimit -f`), the temporary file is removed and `OutputError` names the file and the system's
reason; the CLI prints that one line and exits 1, and the same command resumes from the journals, whose
lines were fsync'd as they were written.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, Literal, TextIO

from builders.core import contract
from harness.errors import OutputError, UserError
from harness.redact import scrub

READ_BACK_MOST = contract.GiB  # a 128K MMLongBench task's journal is a few MB; past 1 GiB it is no file of ours


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


class NotReadBack(UserError):
    """A file the run reads back that is not a regular file, or is over its bound: refused before a byte is read."""

    def __init__(self, err: OSError) -> None:
        super().__init__(
            f"{err.filename}: {err.strerror}; the harness reads back only a regular file it wrote itself; "
            "remove it, or give another --output_path"
        )


def refuse_link(path: Path) -> None:
    """`LinkRefused` if `path` is a symbolic link (one that leads nowhere too)."""
    if path.is_symlink():
        raise LinkRefused(path)


def refuse_irregular(path: Path) -> None:
    """`LinkRefused` for a link at `path`, `NotReadBack` for anything there but a regular file (a FIFO, a folder, a
    device); nothing where `path` does not exist. For a file another library opens by name (SQLite)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise LinkRefused(path)
    if not stat.S_ISREG(mode):
        raise NotReadBack(not_regular(path, mode))


def not_regular(path: Path, mode: int) -> OSError:
    """The error of `path`, of this `mode`, not being a regular file."""
    return contract.NotRegularFile(errno.EINVAL, f"{contract.kind_of_mode(mode)}, not a regular file", str(path))


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


def close_appended(handle: TextIO) -> None:
    """Close a file appended to line by line. Every line was made durable as it was written; bytes a failed write
    left buffered belong to lines never recorded (they are written again), so a second failure to write them is
    not news."""
    with suppress(OSError):
        handle.close()


def read_bytes(path: Path, most: int = READ_BACK_MOST, what: str = "a file the run wrote") -> bytes:
    """The bytes of a file the run will write again: a link at `path` is refused (`LinkRefused`), and so is anything
    but a regular file of at most `most` bytes (`NotReadBack`, naming `what`), before a byte is read."""
    try:
        return contract.read_regular(path, most, what, follow=False)
    except (contract.NotRegularFile, contract.FileTooLarge) as err:
        raise NotReadBack(err) from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise LinkRefused(path) from None
        raise


def read_whole_lines(path: Path) -> bytes:
    """An append-only file's whole lines (`read_bytes`'s rule): a last line cut short by a kill is dropped, from the
    file too, so the next append starts a line of its own."""
    raw = read_bytes(path)
    if raw and not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
        fd = open_no_follow(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, len(raw))
        finally:
            os.close(fd)
    return raw


def create_exclusive(path: Path) -> int:
    """A new, empty file at `path` (a leftover regular file of a killed run is removed first; a link is refused);
    created with `O_EXCL`, so nothing planted between the removal and the creation is ever written through."""
    with suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise LinkRefused(path)
        os.unlink(path)
    return open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)


@contextmanager
def reporting(path: Path) -> Iterator[None]:
    """Turn an `OSError` met while writing `path` into an `OutputError` naming it."""
    try:
        yield
    except OSError as err:
        raise OutputError(path, err) from None


def write_atomically(path: Path, fill: Callable[[BinaryIO], object]) -> Path:
    """Have `fill` write the whole of `path`'s new bytes to its temporary file, then rename it over `path` (a link
    at `path` itself is replaced, never written through); returns `path`. The caller scrubs what it writes."""
    tmp = path.with_name(path.name + ".tmp")
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
            with suppress(OSError):  # nothing could be created there either
                tmp.unlink(missing_ok=True)
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
