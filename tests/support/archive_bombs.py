"""Archives that inflate far past their own size, made in a moment, as an attacker makes them: a run of one byte is
deflated once, ending in a full flush (which resets the compressor, so the same input gives the same bytes again),
and those bytes are repeated. A 2 MB `.tar.gz` then holds a 2 GiB member, and nothing of the 2 GiB is ever
written or held here; CRCs and sizes are the true ones, so an unbounded reader inflates the whole of it.

    tar_gz(path, [("mmlb_data/a.jsonl", Run(b"\\n", 2 << 30)), ("mmlb_data/b.jsonl", b"{}\\n")])
    zip_file(path, [("metadata_stitched/8_8.json", Run(b" ", 2 << 30))])
    gzip_run(path, Run(b"\\0", 2 << 30))
    gzip_parts(path, [header, Run(b"a", 1536 << 20), b"\\0" * 1024])   # raw parts: a tar of one hostile header
"""

from __future__ import annotations

import struct
import tarfile
import tracemalloc
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CHUNK = 16 << 20  # the run is deflated in chunks of this many bytes (its length must be a multiple of it)


@dataclass(frozen=True)
class Run:
    """`size` bytes, all `byte`: a member's content that is never held whole."""

    byte: bytes
    size: int

    def __post_init__(self) -> None:
        assert len(self.byte) == 1, "a run of one byte"
        assert self.size < CHUNK or self.size % CHUNK == 0, f"a run under {CHUNK} bytes, or a multiple of it"


Content = bytes | Run


@cache
def _run_crc(byte: bytes, size: int) -> int:
    """The CRC-32 of `size` bytes `byte`, from the CRC of one chunk combined with itself (no pass over the run)."""
    if size < CHUNK:
        return zlib.crc32(byte * size)
    crc, length = zlib.crc32(byte * CHUNK), CHUNK
    total, held = 0, 0
    count = size // CHUNK
    while count:  # binary powers of the chunk, as zlib's crc32_combine is used
        if count & 1:
            total = crc32_combine(total, crc, length) if held else crc
            held += length
        crc, length = crc32_combine(crc, crc, length), length * 2
        count >>= 1
    return total


def _gf2_times(matrix: list[int], vector: int) -> int:
    total, row = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, matrix[n]) for n in range(32)]


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """The CRC-32 of A + B from the CRCs of A and B and the length of B (zlib's `crc32_combine`)."""
    if length2 == 0:
        return crc1
    one_bit = [0xEDB88320] + [1 << n for n in range(31)]  # the operator for one zero bit
    operator = _gf2_square(_gf2_square(one_bit))  # four zero bits
    while length2:  # apply length2 zero bytes to crc1: 2**k of them for each bit k of length2 that is set
        operator = _gf2_square(operator)  # 2**k zero bytes
        if length2 & 1:
            crc1 = _gf2_times(operator, crc1)
        length2 >>= 1
    return crc1 ^ crc2


@cache
def _deflated_chunk(byte: bytes, length: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(byte * length) + compressor.flush(zlib.Z_FULL_FLUSH)


class _Deflater:
    """A raw deflate stream fed with bytes and runs, and the CRC-32 and length of what it holds."""

    def __init__(self) -> None:
        self.compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.parts: list[bytes] = []
        self.crc = 0
        self.size = 0

    def add(self, content: Content) -> None:
        if isinstance(content, bytes):
            self.parts += [self.compressor.compress(content), self.compressor.flush(zlib.Z_FULL_FLUSH)]
            self.crc = zlib.crc32(content, self.crc)
            self.size += len(content)
            return
        self.parts.append(self.compressor.flush(zlib.Z_FULL_FLUSH))
        if content.size < CHUNK:
            self.parts.append(_deflated_chunk(content.byte, content.size))
        else:
            self.parts += [_deflated_chunk(content.byte, CHUNK)] * (content.size // CHUNK)
        self.crc = _combine(self.crc, content)
        self.size += content.size

    def finish(self) -> bytes:
        self.parts.append(self.compressor.flush(zlib.Z_FINISH))
        return b"".join(self.parts)


def _combine(crc: int, run: Run) -> int:
    """The CRC-32 of what `crc` covers followed by `run`."""
    return crc32_combine(crc, _run_crc(run.byte, run.size), run.size)


def size_of(content: Content) -> int:
    return content.size if isinstance(content, Run) else len(content)


def tar_gz(path: Path, members: Sequence[tuple[str, Content]], *, links: Sequence[tarfile.TarInfo] = ()) -> Path:
    """A gzipped tar archive of `members` (regular files) and `links` (any other `TarInfo`s), in that order."""
    deflater = _Deflater()
    for name, content in members:
        info = tarfile.TarInfo(name)
        info.size, info.mtime = size_of(content), 0
        deflater.add(info.tobuf(format=tarfile.GNU_FORMAT))
        deflater.add(content)
        if info.size % 512:
            deflater.add(b"\0" * (512 - info.size % 512))
    for info in links:
        deflater.add(info.tobuf(format=tarfile.GNU_FORMAT))
    deflater.add(b"\0" * 1024)
    body = deflater.finish()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    path.write_bytes(header + body + struct.pack("<II", deflater.crc, deflater.size & 0xFFFFFFFF))
    return path


def gzip_run(path: Path, content: Content) -> Path:
    """A gzip file of `content`."""
    return gzip_parts(path, [content])


def gzip_parts(path: Path, parts: Sequence[Content]) -> Path:
    """A gzip file of `parts` one after another: raw tar headers and runs, for an archive no writer would make (a
    header declaring a long name of 1.5 GiB, followed by that many bytes)."""
    deflater = _Deflater()
    for content in parts:
        deflater.add(content)
    body = deflater.finish()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    path.write_bytes(header + body + struct.pack("<II", deflater.crc, deflater.size & 0xFFFFFFFF))
    return path


def zip_file(path: Path, members: Sequence[tuple[str, Content]], *, declared: dict[str, int] | None = None) -> Path:
    """A zip archive of deflated `members` (each under 4 GiB); `declared` gives a member a size its directory
    entry claims instead of the true one."""
    local, central = [], []
    offset = 0
    for name, content in members:
        deflater = _Deflater()
        deflater.add(content)
        data = deflater.finish()
        size = (declared or {}).get(name, deflater.size)
        encoded = name.encode()
        fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0, deflater.crc, len(data), size)
        header = b"PK\x03\x04" + fields + struct.pack("<HH", len(encoded), 0) + encoded
        local.append(header + data)
        central.append(
            b"PK\x01\x02"
            + struct.pack("<HH", 20, 20)
            + fields[2:]
            + struct.pack("<HHHHHII", len(encoded), 0, 0, 0, 0, 0o100644 << 16, offset)
            + encoded
        )
        offset += len(header) + len(data)
    directory = b"".join(central)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, len(central), len(central), len(directory), offset, 0)
    path.write_bytes(b"".join(local) + directory + end)
    return path


@dataclass
class PeakMemory:
    """The most bytes Python held at once while `peak_memory()` traced them (0 until the block ends)."""

    bytes: int = 0


@contextmanager
def peak_memory() -> Iterator[PeakMemory]:
    """Trace Python's allocations for the block (`tracemalloc`); once it ends without an error, the yielded
    `PeakMemory` holds their peak: what reading a bomb cost, against what its bound allows."""
    peak = PeakMemory()
    tracemalloc.start()
    try:
        yield peak
        peak.bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
