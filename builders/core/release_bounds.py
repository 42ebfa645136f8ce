"""How much of one release file a build reads: every archive member, gzip stream and file read whole is read
against a bound that the real releases' own sizes justify, so that a small archive that inflates to gigabytes (a
"bomb") stops at the bound with one line naming the member, in seconds and within the bound's memory.

    data = member.read(IMAGE)                           # `release_archive.ArchiveFile`: a BuildError past its bound
    data = read_file(path, ANNOTATION, str(path))       # a file of a release folder, the same bound
    for number, line in bounded_lines(handle, JSONL, where): ...

A bound is checked twice: against the size the archive declares (a tar header, a zip directory entry: refused
before a byte is read) and against the bytes actually read (a reader never takes more than the bound and one byte).

A benchmark declares its own bounds beside its release reader (`builders/<benchmark>/bounds.py`), each with the
figures behind it: the largest files of the real releases (from their Hub repos, code repos and papers), with a margin
of several times; none is a setting, since no release comes near it. A release that one day does would be a new
release: raise the bound there, with its figures. What holds for every archive whatever its benchmark (how far a
whole archive may inflate) is here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from builders.core import contract
from builders.core.errors import BuildError

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
_size = contract.size_text


@dataclass(frozen=True)
class Bound:
    """The most bytes one file (or one line) of a release may hold; `what` names the kind for the message."""

    most: int
    what: str

    def refuse(self, where: str, size: int | None = None) -> BuildError:
        held = f"{size:,} bytes" if size is not None else f"more than {self.most:,} bytes"
        return BuildError(
            f"{where}: {held}, over the {_size(self.most)} that {self.what} of this release can hold; not read "
            "(an archive that inflates this far is damaged or hostile)"
        )


@dataclass(frozen=True)
class LineBound:
    """A jsonl file read line by line: the longest line, and the most lines."""

    line: Bound
    most_lines: int


# An archive of a release, whatever its benchmark. The most members one may hold, folders and links counted: MileBench's
# six part archives hold its 97,855 images between them, and MMLongBench's archives the images of 13,331 examples drawn
# from shared pools, so no release archive comes near 100,000 members (a tar stream of 4,000,000 empty members, 28 MB,
# took over 600 s and 1.7 GB to pass before this bound).
ARCHIVE_MEMBERS = 1_000_000
# A tar header's own extensions, read whole by `tarfile` before the member: a GNU long name or link name (Linux's
# PATH_MAX is 4,096 bytes; the releases' longest member names are under 200 characters) and a PAX header (a path, a
# link, times, ids and, from macOS or libarchive, extended attributes: a few hundred bytes to a few KB). A 1.5 MiB
# archive declaring a 1.5 GiB long name ended in a MemoryError before these bounds.
TAR_LONG_NAME = Bound(64 * KiB, "a tar member's long name (a GNU long-name header)")
TAR_PAX_HEADER = Bound(1 * MiB, "a tar member's PAX header")
# A source folder's own files that no release bound above covers (COCO, OK-VQA, MMStar): an image (the largest of any
# source are MileBench's Combined-image grids of 10-20 MB; a COCO photo is under 1 MB) and an annotation or question
# file (COCO's instances_val2014.json, the largest, is 157 MB).
SOURCE_IMAGE = Bound(256 * MiB, "an image file")
SOURCE_ANNOTATION = Bound(1 * GiB, "an annotation file")
# A file downloaded from a Hub release, checked before a byte of it is hashed where its benchmark declares no tighter
# bound (`hub_source.HubFile.most`): the largest files of the releases are MileBench's part archives (3.97 GB), so
# a blob of 64 GiB is no file of a release.
HUB_BLOB = Bound(64 * GiB, "a file of a Hub release")


# What a whole archive may inflate to: gzip makes text 3-10 times smaller and leaves JPEG and PNG as they are, so
# no release archive comes near 100 times its size; only long runs of one byte (a bomb) do, up to 1,000 times. The
# floor lets a small archive of small files be.
INFLATION_RATIO = 100
INFLATION_FLOOR = 256 * MiB


class Inflation:
    """The bytes an archive's members declare, counted against what its size on disk allows."""

    def __init__(self, archive_size: int) -> None:
        self.archive_size = archive_size
        self.allowed = max(INFLATION_FLOOR, INFLATION_RATIO * archive_size)
        self.held = 0

    def add(self, size: int, where: str) -> None:
        self.held += size
        if self.held > self.allowed:
            raise BuildError(
                f"{where}: {size:,} bytes, which bring the archive's members to {self.held:,} bytes, over "
                f"{INFLATION_RATIO} times the archive's own {self.archive_size:,} (or {_size(INFLATION_FLOOR)}), which "
                "no release archive inflates to; not read (an archive that inflates this far is damaged or hostile)"
            )


def read_bounded(read: Callable[[int], bytes], bound: Bound, where: str) -> bytes:
    """All of a stream (`read(n)` as a file's), but never more than `bound.most` bytes and one more: past it, a
    `BuildError` naming `where`."""
    parts, held = [], 0
    while chunk := read(min(8 * MiB, bound.most + 1 - held)):
        parts.append(chunk)
        held += len(chunk)
        if held > bound.most:
            raise bound.refuse(where)
    return b"".join(parts)


def copy_bounded(read: Callable[[int], bytes], target: IO[bytes], bound: Bound, where: str) -> int:
    """Copy a stream into `target` in blocks, stopping with a `BuildError` before it passes `bound`; returns the
    bytes copied."""
    held = 0
    while chunk := read(min(MiB, bound.most + 1 - held)):
        held += len(chunk)
        if held > bound.most:
            raise bound.refuse(where)
        target.write(chunk)
    return held


def copy_lines_bounded(
    read: Callable[[int], bytes], target: IO[bytes], bound: LineBound, total: Bound, where: str
) -> int:
    """Copy a text stream into `target` in blocks, stopping with a `BuildError` (naming `where` and, for a line, its
    number) at a line longer than `bound.line`, past `bound.most_lines` lines or past `total` bytes; the lines are
    counted and measured per block at C speed, so a million newlines cost milliseconds. Returns the bytes copied."""
    held = lines = current = 0  # bytes copied, newlines met, length of the line in progress
    while chunk := read(min(MiB, total.most + 1 - held)):
        held += len(chunk)
        if held > total.most:
            raise total.refuse(where)
        newlines = chunk.count(b"\n")
        if lines + newlines > bound.most_lines:
            raise _too_many_lines(bound, where)
        if newlines:
            pieces = chunk.split(b"\n")
            pieces[0] = b""  # the end of the line in progress: measured with what came before (`first`)
            first = current + chunk.find(b"\n")
            longest = max(range(len(pieces) - 1), key=lambda k: len(pieces[k]))
            if first > bound.line.most:
                raise bound.line.refuse(f"{where}:{lines + 1}")
            if len(pieces[longest]) > bound.line.most:
                raise bound.line.refuse(f"{where}:{lines + longest + 1}")
            current = len(pieces[-1])
        else:
            current += len(chunk)
        lines += newlines
        if current > bound.line.most:
            raise bound.line.refuse(f"{where}:{lines + 1}")
        target.write(chunk)
    return held


def _too_many_lines(bound: LineBound, where: str) -> BuildError:
    return BuildError(
        f"{where}: more than {bound.most_lines:,} lines, more than any file of this release holds; not read (an "
        "archive that inflates this far is damaged or hostile)"
    )


def open_release_file(path: str | os.PathLike[str], where: str | None = None) -> BinaryIO:
    """A file of a release opened for reading (`contract.open_regular`: without blocking, only a regular file; a
    verified Hub blob from the descriptor that was hashed); a FIFO, a device, a folder or a file that cannot be read
    is a `BuildError` naming `where` (a missing one stays a `FileNotFoundError`, for its caller to word)."""
    try:
        return contract.open_regular(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BuildError(f"{where or path}: cannot be read ({exc.strerror or exc})") from None


def check_size(handle: BinaryIO, bound: Bound, where: str) -> None:
    """Refuse an open file whose size (its descriptor's `fstat`) is over `bound`, before a byte of it is read: a
    sparse file is refused at its declared size, not after reading its gigabytes of zeros."""
    size = os.fstat(handle.fileno()).st_size
    if size > bound.most:
        raise bound.refuse(where, size)


def check_file_size(path: str | os.PathLike[str], bound: Bound, where: str | None = None) -> None:
    """`check_size` of a release file by its path (before a reader that opens it itself, a hash, reads it)."""
    with open_release_file(path, where) as handle:
        check_size(handle, bound, where or str(path))


def read_file(path: str | os.PathLike[str], bound: Bound, where: str | None = None) -> bytes:
    """A file of a release folder read whole, within `bound` (its size is checked before a byte is read)."""
    where = where or str(path)
    with open_release_file(path, where) as handle:
        check_size(handle, bound, where)
        return read_bounded(handle.read, bound, where)


def bounded_lines(
    readline: Callable[[int], bytes], bound: LineBound, where: str, total: Bound | None = None
) -> Iterator[tuple[int, bytes]]:
    """(1-based number, line with its newline) of a stream read line by line (`readline(limit)` as a file's): a
    line longer than `bound.line`, more than `bound.most_lines` lines, or (with `total`) more bytes in all than
    it allows, is a `BuildError` naming `where` and, for a line, its number."""
    held = 0
    number = 0
    while line := readline(bound.line.most + 1):
        number += 1
        if len(line) - line.endswith(b"\n") > bound.line.most:
            raise bound.line.refuse(f"{where}:{number}")
        if number > bound.most_lines:
            raise _too_many_lines(bound, where)
        held += len(line)
        if total is not None and held > total.most:
            raise total.refuse(where)
        yield number, line


def lines_of(
    path: Path, bound: LineBound, where: str | None = None, total: Bound | None = None
) -> Iterator[tuple[int, bytes]]:
    """`bounded_lines` of a file; with `total`, its size is checked before its first line is read."""
    where = where or str(path)
    with open_release_file(path, where) as handle:
        if total is not None:
            check_size(handle, total, where)
        yield from bounded_lines(handle.readline, bound, where, total)
