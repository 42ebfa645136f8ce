"""Which files of the results folder the viewer may open, and how it opens them.

A URL names a file (`inside`): a relative path that stays inside the folder once every link is followed, of a kind
the viewer shows; anything else is answered 404, never read. A file the viewer found itself (a results file, a
journal, a sample log) is opened only where it resolves inside the folder too (`contained`). Every file is opened
without blocking and read only when it is a regular file (`open_regular`): a FIFO, a socket or a device planted under
a file's name is refused at once instead of holding the request (and the server's shutdown) forever.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

# What the report links and the viewer shows: its figures and its text.
SERVED = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".md": "text/plain; charset=utf-8",
}


class NotRegularFile(OSError):
    """A path that names something other than a regular file (a FIFO, a socket, a device, a folder)."""


def inside(root: Path, relative: str) -> Path | None:
    """The file `relative` names under `root`, or None: absolute, `..`, a NUL, a backslash, a link (anywhere on the
    way) that leads out of `root`, not a regular file, or not a kind in `SERVED`."""
    if not relative or "\x00" in relative or "\\" in relative:
        return None
    pure = PurePosixPath(relative)
    if (
        pure.is_absolute()
        or any(part in ("..", "") for part in relative.split("/"))
        or pure.suffix.lower() not in SERVED
    ):
        return None
    return contained(root, root / pure)


def contained(root: Path, path: Path) -> Path | None:
    """`path` with every link followed, when that is a regular file inside `root`; else None."""
    if "\x00" in str(path):
        return None
    try:
        base = root.resolve()
        target = path.resolve(strict=True)
        if not target.is_relative_to(base) or not stat.S_ISREG(target.stat().st_mode):
            return None
    except (OSError, RuntimeError, ValueError):  # gone, a loop of links, a name the system refuses
        return None
    return target


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, never blocking on a FIFO or a device (`O_NONBLOCK`) and refused with
    `NotRegularFile` unless it is a regular file."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_regular(path: Path) -> bytes:
    with open_regular(path) as handle:
        return handle.read()
