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
import os
import posixpath
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from builders.core.errors import BuildError
from builders.core.release_bounds import (
    ARCHIVE_MEMBERS,
    TAR_LONG_NAME,
    TAR_PAX_HEADER,
    Bound,
    Inflation,
    LineBound,
    copy_bounded,
    copy_lines_bounded,
    open_release_file,
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

    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(open_release_file(archive, where))
        inflation = Inflation(os.fstat(handle.fileno()).st_size)
        tar = guard(lambda: _open_stream(handle, where, stack))
        stack.enter_context(tar)
        while (member := guard(tar.next)) is not None:
            vars(tar)[
                "members"
            ].clear()  # a stream is read once: the members passed are not kept (4,000,000 took 1.7 GB)
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


def _open_stream(handle: IO[bytes], where: str, stack: contextlib.ExitStack) -> tarfile.TarFile:
    """The archive as a tar stream: one sequential pass, no seeking, each header read within its bounds
    (`_bounded_headers`). A gzipped one is inflated by `gzip` (in bounded blocks, where tarfile's own stream holds
    whole inflated blocks and copies them at every read, which takes minutes over a highly compressed member); any
    other compression by tarfile."""
    gzipped = handle.read(2) == b"\x1f\x8b"
    handle.seek(0)
    headers = _bounded_headers(where)
    if gzipped:
        inflated = stack.enter_context(gzip.GzipFile(fileobj=handle, mode="rb"))
        return tarfile.open(fileobj=inflated, mode="r|", tarinfo=headers)
    return tarfile.open(fileobj=handle, mode="r|*", tarinfo=headers)


# How many extension headers (long names, PAX) may precede one member: a member has at most a PAX header, a long
# name and a long link name; a chain of thousands would recurse in tarfile until Python's stack gives out.
EXTENSION_CHAIN = 8
_LONG_NAMES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
_PAX = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)


def _bounded_headers(where: str) -> type[tarfile.TarInfo]:
    """tarfile's header class for one archive, reading an extension header (a GNU long name, a PAX header) only
    within its bound (`release_bounds.TAR_LONG_NAME`, `TAR_PAX_HEADER`), at most `EXTENSION_CHAIN` of them in a row,
    at most `release_bounds.ARCHIVE_MEMBERS` members, and no sparse member (no release holds one, and tarfile reads
    a sparse map of any length): past any of these, a `BuildError` naming the archive, before the header's bytes
    are read."""
    state = {"members": 0, "chain": 0}

    class BoundedHeader(tarfile.TarInfo):
        def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
            bound = TAR_LONG_NAME if self.type in _LONG_NAMES else TAR_PAX_HEADER if self.type in _PAX else None
            if self.type == tarfile.GNUTYPE_SPARSE:
                raise _sparse(where, self.name)
            if bound is None:
                state["chain"] = 0
                state["members"] += 1
                if state["members"] > ARCHIVE_MEMBERS:
                    raise BuildError(
                        f"{where}: more than {ARCHIVE_MEMBERS:,} members, more than any archive of a release holds; "
                        "not read (an archive of this many members is damaged or hostile)"
                    )
            else:
                if self.size > bound.most:
                    raise bound.refuse(f"{where}: a header at byte {self.offset:,}", self.size)
                state["chain"] += 1
                if state["chain"] > EXTENSION_CHAIN:
                    raise BuildError(
                        f"{where}: more than {EXTENSION_CHAIN} extension headers (long names, PAX) in a row at byte "
                        f"{self.offset:,}, where a member has at most three; not read (damaged or hostile)"
                    )
            return super()._proc_member(tarfile_)  # type: ignore[misc]  # tarfile's own hook, private in typeshed

        def _proc_gnusparse_10(self, *args: object) -> None:  # a PAX 1.0 sparse member: its map is read from data
            raise _sparse(where, self.name)

    return BoundedHeader


def _sparse(where: str, name: str) -> BuildError:
    return BuildError(f"{where}: member {name!r} is a sparse file, which no release holds; not read")


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


# The compression methods `zipfile` reads; a release zips with deflate.
ZIP_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}


def zip_files(archive: Path) -> Iterator[ArchiveFile]:
    """The regular files of a zip archive, in its directory's order; names checked as for a tar archive, links
    and folders left out (a link member cannot lead anywhere then); an archive whose directory declares more than
    `release_bounds.ARCHIVE_MEMBERS` members refused before the directory is read."""
    where = str(archive)

    def guard(step: Callable[[], T]) -> T:
        try:
            return step()
        except (zipfile.BadZipFile, *DAMAGED) as exc:
            raise BuildError(f"{where}: not a readable zip archive, damaged or cut short ({exc})") from None

    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(open_release_file(archive, where))
        declared = guard(lambda: zip_entry_count(handle))
        if declared is not None and declared > ARCHIVE_MEMBERS:
            raise BuildError(
                f"{where}: its directory declares {declared:,} members, more than any archive of a release holds "
                f"({ARCHIVE_MEMBERS:,}); not read (an archive of this many members is damaged or hostile)"
            )
        zipped = stack.enter_context(guard(lambda: zipfile.ZipFile(handle)))
        for info in guard(zipped.infolist):
            name = relative_name(info.filename, f"{where}: member {info.filename!r}")
            if info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
                continue
            member = f"{where}: member {name!r}"
            yield ArchiveFile(
                name, info.file_size, member, functools.partial(_open_zip_member, zipped, info, member), guard
            )


def _open_zip_member(zipped: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> IO[bytes]:
    """A zip member opened for reading; one encrypted, or compressed by a method `zipfile` cannot inflate (AES is
    method 99), is a `BuildError`: no release encrypts, and each zips with deflate."""
    if info.flag_bits & 0x1:
        raise BuildError(f"{where}: an encrypted member, which no release holds; not read")
    if info.compress_type not in ZIP_METHODS:
        raise BuildError(
            f"{where}: compressed by method {info.compress_type}, which no release uses (this reader inflates "
            f"{', '.join(ZIP_METHODS.values())}); not read"
        )
    try:
        return zipped.open(info)
    except (NotImplementedError, RuntimeError) as exc:  # zipfile's words for a feature it lacks (patched data, ...)
        raise BuildError(f"{where}: {exc}, which no release uses; not read") from None


_EOCD = struct.Struct("<4s4H2LH")  # the end of a zip's central directory
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")


def zip_entry_count(handle: IO[bytes]) -> int | None:
    """The members a zip's central directory declares (its end record's count, or the zip64 record's), read from
    the archive's last 64 KiB before `zipfile` reads the directory; None where no end record is found (zipfile then
    says the archive is damaged)."""
    end = handle.seek(0, os.SEEK_END)
    start = max(0, end - _EOCD.size - 0xFFFF)
    handle.seek(start)
    tail = handle.read(end - start)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        return None
    count = _EOCD.unpack_from(tail, at)[4]
    if count != 0xFFFF or at < _ZIP64_LOCATOR.size:
        return int(count)
    signature, _, record, _ = _ZIP64_LOCATOR.unpack_from(tail, at - _ZIP64_LOCATOR.size)
    if signature != b"PK\x06\x07":
        return int(count)
    handle.seek(record)
    data = handle.read(_ZIP64_EOCD.size)
    if len(data) < _ZIP64_EOCD.size or data[:4] != b"PK\x06\x06":
        return None
    return int(_ZIP64_EOCD.unpack(data)[7])
