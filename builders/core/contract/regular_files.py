"""Opening a file of a folder someone else filled (a Hub cache, a release, a results folder, a checkpoint): the one
opener of the builders and the harness.

    with open_regular(path) as handle:                  # NotRegularFile for a FIFO, a socket, a device, a folder
        ...
    data = read_regular(path, 64 * MiB, "a results file")   # FileTooLarge past 64 MiB, before a byte is read

A file is opened without blocking (`O_NONBLOCK`: opening a FIFO with no writer, or some devices, would wait forever)
and handed out only once `fstat` on the open descriptor says it is a regular file; `follow=False` adds `O_NOFOLLOW`
(a link at the name itself is refused). Its size is checked against the caller's bound on the same descriptor, so
the bytes read are those of the file that was checked, whatever is renamed over its name meanwhile.

**Verified files are read from the descriptor that was hashed.** A file whose bytes were verified against a hash
(a Hub cache blob, `hub_cache.verified_blob`) is *pinned*: its open descriptor is kept, under its names (the
snapshot's link, the blob, a build's view of it), and `open_regular` of any of those names reads that descriptor
(through a reader of its own, `os.pread` at its own offset), never the name again: a blob swapped after it was
hashed is never read. Pins end with the build's work folder (`release_pins`).
"""

from __future__ import annotations

import errno
import io
import os
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A path that names something other than a regular file (a FIFO, a socket, a device, a folder)."""


class FileTooLarge(OSError):
    """A file larger than its reader's bound: refused before a byte of it is read."""


def size_text(n: int) -> str:
    """`64 MiB`, `1 GiB`, or `1,234 bytes`."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n:,} bytes"


def kind_of_mode(mode: int) -> str:
    """What a file of this mode is, in words: "a FIFO", "a socket", ..."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def too_large(path: str | os.PathLike[str], size: int | None, most: int, what: str) -> FileTooLarge:
    held = f"{size:,} bytes" if size is not None else f"more than {most:,} bytes"
    return FileTooLarge(errno.EFBIG, f"{held}, over the {size_text(most)} that {what} can hold; not read", str(path))


def open_descriptor(path: str | os.PathLike[str], *, follow: bool = True) -> int:
    """A descriptor of `path`, opened without blocking, once `fstat` says it is a regular file (`NotRegularFile`
    otherwise; `follow=False`: a link at `path` itself is an `OSError` with `ELOOP`)."""
    descriptor = os.open(path, _FLAGS | (0 if follow else os.O_NOFOLLOW))
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{kind_of_mode(mode)}, not a regular file", str(path))
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def open_regular(
    path: str | os.PathLike[str], *, follow: bool = True, most: int | None = None, what: str = "this file"
) -> BinaryIO:
    """`path` opened for reading: a pinned file from its verified descriptor, any other once it is known to be a
    regular file (`NotRegularFile`), of at most `most` bytes when given (`FileTooLarge`, naming `what`)."""
    pinned = _pinned_copy(path)
    descriptor = pinned if pinned is not None else open_descriptor(path, follow=follow)
    try:
        size = os.fstat(descriptor).st_size
        if most is not None and size > most:
            raise too_large(path, size, most, what)
        if pinned is not None:
            return io.BufferedReader(_PreadFile(descriptor, str(path)), buffer_size=MiB)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_regular(path: str | os.PathLike[str], most: int, what: str, *, follow: bool = True) -> bytes:
    """The whole of a regular file of at most `most` bytes (`what` names its kind in the refusal); a file that
    grows past the bound while it is read is refused too."""
    with open_regular(path, follow=follow, most=most, what=what) as handle:
        size = os.fstat(handle.fileno()).st_size  # read asks for what the file holds: `read(n)` allocates n bytes
        data = handle.read(min(size, most) + 1)
        if len(data) > size:  # it grew since: what more it holds, up to the bound
            data += handle.read(most + 1 - len(data))
    if len(data) > most:
        raise too_large(path, None, most, what)
    return data


def read_line(handle: BinaryIO, most: int) -> bytes | None:
    """The next line of `handle` (with its newline) when it is at most `most` bytes long; None past that, having
    read `most` + 1 bytes of it and skipped the rest up to its newline, so a reader of lines moves on in bounded
    memory. b"" at the end of the file."""
    line = handle.readline(most + 1)
    if len(line) <= most or line.endswith(b"\n"):
        return line
    while (rest := handle.readline(MiB)) and not rest.endswith(b"\n"):
        pass
    return None


# ------------------------------------------------------------------------------------------- verified files


@dataclass
class _Pin:
    descriptor: int
    names: set[str] = field(default_factory=set)


_PINS: dict[str, _Pin] = {}
_LOCK = threading.Lock()


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


def _pinned_copy(path: str | os.PathLike[str]) -> int | None:
    """A descriptor of its own (`os.dup`) of the file pinned as `path`, or None."""
    with _LOCK:
        entry = _PINS.get(_key(path)) if _PINS else None
        return os.dup(entry.descriptor) if entry is not None else None


def pin(descriptor: int, names: Iterable[str | os.PathLike[str]]) -> None:
    """Keep `descriptor` (a verified file's; the pin owns it from now on) and read it wherever one of `names` is
    opened. A name pinned before now reads the new descriptor."""
    entry = _Pin(descriptor)
    with _LOCK:
        for name in names:
            key = _key(name)
            entry.names.add(key)
            old = _PINS.get(key)
            _PINS[key] = entry
            if old is not None and old is not entry:
                old.names.discard(key)
                if not old.names:
                    os.close(old.descriptor)


def pin_name(path: str | os.PathLike[str], pinned_as: str | os.PathLike[str]) -> None:
    """Read `path` from the descriptor pinned as `pinned_as` (a view's link to a verified blob)."""
    with _LOCK:
        entry = _PINS.get(_key(pinned_as))
        if entry is None:
            raise KeyError(f"{pinned_as}: not a verified file")
        entry.names.add(_key(path))
        _PINS[_key(path)] = entry


def release_pins(under: str | os.PathLike[str]) -> None:
    """Forget every pin that has a name inside the folder `under` (a build's work folder, as it is removed), closing
    its descriptor; the pins of other builds stay."""
    prefix = _key(under).rstrip(os.sep) + os.sep
    with _LOCK:
        ending = {id(e): e for k, e in _PINS.items() if k.startswith(prefix)}
        for entry in ending.values():
            for name in entry.names:
                if _PINS.get(name) is entry:
                    del _PINS[name]
            os.close(entry.descriptor)


class _PreadFile(io.RawIOBase):
    """A read-only file over a descriptor that may be shared: every read is an `os.pread` at this reader's own
    offset, so several readers of one pinned file never move each other."""

    def __init__(self, descriptor: int, name: str) -> None:
        super().__init__()
        self._descriptor = descriptor
        self._offset = 0
        self.name = name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = os.pread(self._descriptor, len(buffer), self._offset)
        buffer[: len(data)] = data
        self._offset += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._offset, os.SEEK_END: os.fstat(self._descriptor).st_size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, "negative seek position", self.name)
        self._offset = base + offset
        return self._offset

    def tell(self) -> int:
        return self._offset

    def fileno(self) -> int:
        return self._descriptor

    def close(self) -> None:
        if not self.closed:
            os.close(self._descriptor)
        super().close()
