"""A release's tar archive, streamed: one sequential pass, nothing unpacked, every member name checked (a zip
archive, `zip_files`, is read the same way, member by member), every member read within a bound.

    for member in archive_files(path):
        if member.name in wanted:
            data = member.read(bound)             # `builders.core.release_bounds`: past the bound, a BuildError

Only regular files are handed out; their names are normalised and must stay inside the archive
(`builders.core.release_paths.relative_name`), and a symbolic or hard link member pointing out of it is refused
too, so a hostile archive is a `BuildError` naming the archive and the member. A damaged or truncated archive
(gzip or tar) is a one-line `BuildError` naming it, wherever the damage is met: when opening, between members or
inside one. A member is read only against a bound (`builders.core.release_bounds`): one whose declared size
passes it is refused before a byte of it is read, and one that inflates past it (whatever it declared) stops
there; either is a one-line `BuildError` naming the archive and the member. A tar stream inflates every member
it passes, wanted or not, so the members of a tar archive may declare at most `release_bounds.Inflation` allows
in all (100 times the archive's own size, and at least 256 MiB): past that, the member that passes it is refused.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
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
from builders.core.release_bounds import (
    Bound,
    Inflation,
    LineBound,
    copy_bounded,
    copy_lines_bounded,
    read_bounded,
)
from builders.core.release_paths import relative_name

# What `tarfile` and its decompressors raise on a damaged or truncated stream.
DAMAGED = (tarfile.TarError, EOFError, zlib.error, OSError)
T = TypeVar("T")


@dataclass(frozen=True)
class ArchiveFile:
    """One regular file of an archive being streamed: valid until the stream moves past it."""

    name: str  # normalised, relative, inside the archive
    size: int  # as the archive declares it (a tar header, a zip directory entry)
    where: str  # the archive and the member, for messages
    _open: Callable[[], IO[bytes]]
    _guard: Callable[[Callable[[], T]], T]

    def _check(self, bound: Bound) -> IO[bytes]:
        if self.size > bound.most:
            raise bound.refuse(self.where, self.size)
        return self._guard(self._open)

    def read(self, bound: Bound) -> bytes:
        """The member's bytes, within `bound`."""
        source = self._check(bound)
        return read_bounded(lambda n: self._guard(lambda: source.read(n)), bound, self.where)

    def copy_to(self, target: IO[bytes], bound: Bound) -> None:
        """Copy the member's bytes into `target` (a file), in blocks, within `bound`; only reading is the archive's
        fault."""
        source = self._check(bound)
        copy_bounded(lambda n: self._guard(lambda: source.read(n)), target, bound, self.where)

    def copy_lines_to(self, target: IO[bytes], lines: LineBound, total: Bound) -> None:
        """Copy a text member line by line into `target`, each line within `lines.line`, at most `lines.most_lines`
        lines and `total` bytes (so a member of endless newlines stops at once, not after gigabytes)."""
        source = self._check(total)
        copy_lines_bounded(lambda n: self._guard(lambda: source.read(n)), target, lines, total, self.where)


def archive_files(archive: Path) -> Iterator[ArchiveFile]:
    """The regular files of a tar archive (any compression), in archive order."""
    where = str(archive)

    def guard(step: Callable[[], T]) -> T:
        try:
            return step()
        except DAMAGED as exc:
            raise BuildError(f"{where}: not a readable tar archive, damaged or cut short ({exc})") from None

    inflation = Inflation(guard(lambda: archive.stat().st_size))
    with contextlib.ExitStack() as stack:
        tar = guard(lambda: _open_stream(archive, stack))
        stack.enter_context(tar)
        members = iter(tar)
        while (member := guard(lambda: next(members, None))) is not None:
            name = member_name(member, where)
            if not member.isfile():
                continue
            # A stream inflates every member it passes, wanted or not: bounded for the archive as a whole.
            inflation.add(member.size, f"{where}: member {name!r}")

            def open_member(member: tarfile.TarInfo = member) -> IO[bytes]:
                handle = tar.extractfile(member)
                assert handle is not None  # a regular file always has one
                return handle

            yield ArchiveFile(name, member.size, f"{where}: member {name!r}", open_member, guard)


def _open_stream(archive: Path, stack: contextlib.ExitStack) -> tarfile.TarFile:
    """The archive as a tar stream: one sequential pass, no seeking. A gzipped one is inflated by `gzip` (in
    bounded blocks, where tarfile's own stream holds whole inflated blocks and copies them at every read, which
    takes minutes over a highly compressed member); any other compression by tarfile."""
    with open(archive, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        return tarfile.open(fileobj=stack.enter_context(gzip.open(archive, "rb")), mode="r|")
    return tarfile.open(archive, mode="r|*")


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
            yield ArchiveFile(
                name, info.file_size, f"{where}: member {name!r}", functools.partial(zipped.open, info), guard
            )
