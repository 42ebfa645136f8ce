"""A release's tar archive, streamed: one sequential pass, nothing unpacked, every member name checked (a zip
archive, `zip_files`, is read the same way, member by member).

    for member in archive_files(path):
        if member.name in wanted:
            data = member.read()

Only regular files are handed out; their names are normalised and must stay inside the archive
(`builders.core.release_paths.relative_name`), and a symbolic or hard link member pointing out of it is refused
too, so a hostile archive is a `BuildError` naming the archive and the member. A damaged or truncated archive
(gzip or tar) is a one-line `BuildError` naming it, wherever the damage is met: when opening, between members or
inside one.
"""

from __future__ import annotations

import functools
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from builders.core.errors import BuildError
from builders.core.release_paths import relative_name

# What `tarfile` and its decompressors raise on a damaged or truncated stream.
DAMAGED = (tarfile.TarError, EOFError, zlib.error, OSError)
T = TypeVar("T")


@dataclass(frozen=True)
class ArchiveFile:
    """One regular file of an archive being streamed: valid until the stream moves past it."""

    name: str  # normalised, relative, inside the archive
    _open: Callable[[], IO[bytes]]
    _guard: Callable[[Callable[[], T]], T]

    def read(self) -> bytes:
        return self._guard(lambda: self._open().read())

    def copy_to(self, target: IO[bytes], block: int = 1 << 20) -> None:
        """Copy the member's bytes into `target` (a file), in blocks; only reading is the archive's fault."""
        source = self._guard(self._open)
        while data := self._guard(lambda: source.read(block)):
            target.write(data)


def archive_files(archive: Path) -> Iterator[ArchiveFile]:
    """The regular files of a tar archive (any compression), in archive order."""
    where = str(archive)

    def guard(step: Callable[[], T]) -> T:
        try:
            return step()
        except DAMAGED as exc:
            raise BuildError(f"{where}: not a readable tar archive, damaged or cut short ({exc})") from None

    tar = guard(lambda: tarfile.open(archive, mode="r|*"))  # a stream: one sequential pass, no seeking
    with tar:
        members = iter(tar)
        while (member := guard(lambda: next(members, None))) is not None:
            name = member_name(member, where)
            if not member.isfile():
                continue

            def open_member(member: tarfile.TarInfo = member) -> IO[bytes]:
                handle = tar.extractfile(member)
                assert handle is not None  # a regular file always has one
                return handle

            yield ArchiveFile(name, open_member, guard)


def member_name(member: tarfile.TarInfo, archive: str) -> str:
    """A member's normalised name; an absolute or escaping name, or a link member pointing out of the archive,
    is a `BuildError` naming the archive and the member."""
    where = f"{archive}: member {member.name!r}"
    name = relative_name(member.name, where)
    if member.issym():  # relative to the link's own folder (an absolute target stays absolute through join)
        relative_name(posixpath.join(posixpath.dirname(name), member.linkname), f"{where} (a symbolic link)")
    elif member.islnk():  # relative to the archive's root
        relative_name(member.linkname, f"{where} (a hard link)")
    return name


def zip_files(archive: Path) -> Iterator[ArchiveFile]:
    """The regular files of a zip archive, in its directory's order; names checked as for a tar archive, links
    and folders left out (a link member cannot lead anywhere then)."""
    where = str(archive)

    def guard(step: Callable[[], T]) -> T:
        try:
            return step()
        except (zipfile.BadZipFile, *DAMAGED) as exc:
            raise BuildError(f"{where}: not a readable zip archive, damaged or cut short ({exc})") from None

    with guard(lambda: zipfile.ZipFile(archive)) as zipped:
        for info in guard(zipped.infolist):
            name = relative_name(info.filename, f"{where}: member {info.filename!r}")
            if info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
                continue
            yield ArchiveFile(name, functools.partial(zipped.open, info), guard)
