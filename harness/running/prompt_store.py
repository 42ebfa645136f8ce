"""The texts of a task's requests as sent, `prompts_<task>.jsonl` beside its journal (issue 62 item 1): every journal
record names its text by `prompt_sha256`, and the text is kept here once, content-addressed and compressed.

A text is cut into chunks at content-defined places (after a line or a sentence whose CRC falls on a boundary), so
texts sharing a long stretch (MMLongBench's rows of one context at its other depths, or with other questions) share
its chunks: each chunk is stored once, zlib-compressed, by its sha256, and each text as the list of its chunks. Lines:
`{"chunk": sha256, "zlib": base64}` and, after its chunks, `{"text": sha256, "chunks": [sha256, ...]}`.

Written as the journal is: append-only, never through a link, fsync'd before the journal lines that name its texts,
so a record's text is on disk before the record; a line cut short by a kill is dropped when the store is opened again.
Read whole (`PromptTexts.read`), each line within a bound, from a regular file only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, TextIO

from builders.core import contract
from harness.file_writing import open_no_follow, open_text, read_bytes, refuse_link, reporting, write_lines
from harness.redact import scrub

# A chunk ends after a piece (a line, or a sentence) whose CRC is 0 modulo this (some 8 KiB of prose on average)...
BOUNDARY = 64
CHUNK_LEAST = 1024  # ...once it holds this many characters
CHUNK_MOST = 64 * 1024  # a text with no boundary (one long line) is cut here
LINE_MOST = 64 * contract.MiB  # the longest store line read: a chunk is at most CHUNK_MOST characters, compressed
_PIECES = re.compile(r"[^\n.]*[\n.]|[^\n.]+")


def prompts_name(journal_name: str) -> str:
    """`prompts_<task>.jsonl` beside `journal_<task>.jsonl`."""
    return "prompts_" + journal_name.removeprefix("journal_")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunks(text: str) -> list[str]:
    """`text` cut at content-defined places: the same stretch of text is cut the same way wherever it stands."""
    found: list[str] = []
    current: list[str] = []
    size = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        while size + len(piece) > CHUNK_MOST:  # no boundary in reach: cut at the ceiling
            take = CHUNK_MOST - size
            current.append(piece[:take])
            found.append("".join(current))
            current, size, piece = [], 0, piece[take:]
        current.append(piece)
        size += len(piece)
        if size >= CHUNK_LEAST and zlib.crc32(piece.encode("utf-8", "surrogatepass")) % BOUNDARY == 0:
            found.append("".join(current))
            current, size = [], 0
    if current:
        found.append("".join(current))
    return found


class PromptStore:
    """A task's store of texts as sent, opened for appending beside its journal (`path` None: nothing is kept, each
    text is only named by its hash)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._texts: set[str] = set()
        self._chunks: set[str] = set()
        self._pending: list[str] = []
        self._file: TextIO | None = None
        if path is None:
            return
        with reporting(path):
            refuse_link(path)
            if path.exists():
                self._read_known(path)

    def _read_known(self, path: Path) -> None:
        raw = read_bytes(path)
        if not raw.endswith(b"\n") and raw:  # killed mid-line: the whole lines stand, the cut one goes
            raw = raw[: raw.rfind(b"\n") + 1]
            fd = open_no_follow(path, os.O_WRONLY)
            try:
                os.ftruncate(fd, len(raw))
            finally:
                os.close(fd)
        known = PromptTexts.of_lines(raw.split(b"\n"))
        self._chunks = set(known.chunks)
        self._texts = set(known.texts)

    def put(self, text: str) -> str:
        """The sha256 of `text` (scrubbed of secrets, as every line the run writes), its chunks new to the store queued
        for `flush`."""
        text = scrub(text)
        digest = text_sha256(text)
        if digest in self._texts or self.path is None:
            return digest
        names = []
        for piece in chunks(text):
            data = piece.encode("utf-8", "surrogatepass")
            name = hashlib.sha256(data).hexdigest()
            names.append(name)
            if name not in self._chunks:
                self._chunks.add(name)
                packed = base64.b64encode(zlib.compress(data, 9)).decode("ascii")
                self._pending.append(json.dumps({"chunk": name, "zlib": packed}))
        self._texts.add(digest)
        self._pending.append(json.dumps({"text": digest, "chunks": names}))
        return digest

    def flush(self) -> None:
        """Make every queued text durable (before the journal lines that name them are written)."""
        if self.path is None or not self._pending:
            return
        lines, self._pending = self._pending, []
        with reporting(self.path):
            if self._file is None:  # opened on first use, and again after `close` (the journal's compaction)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open_text(self.path, "a")
            self._file.write("".join(line + "\n" for line in lines))
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            handle, self._file = self._file, None
            try:
                handle.close()
            except OSError:
                pass


class PromptTexts:
    """A store's texts as read back: each text's chunks, each chunk compressed, a text made whole on asking."""

    def __init__(self) -> None:
        self.chunks: dict[str, bytes] = {}
        self.texts: dict[str, list[str]] = {}

    @classmethod
    def of_lines(cls, lines: Iterable[bytes | None]) -> PromptTexts:
        """The store's lines read; a line that is not one of its two kinds (cut, altered) is passed by: a text that
        needs it is then not found (`text` says None)."""
        found = cls()
        for line in lines:
            try:
                value = json.loads(line) if line else None
            except (ValueError, RecursionError):
                continue
            if not isinstance(value, dict):
                continue
            if isinstance(value.get("chunk"), str) and isinstance(value.get("zlib"), str):
                try:
                    found.chunks[value["chunk"]] = base64.b64decode(value["zlib"], validate=True)
                except ValueError:
                    continue
            elif isinstance(value.get("text"), str) and isinstance(value.get("chunks"), list):
                found.texts[value["text"]] = [str(name) for name in value["chunks"]]
        return found

    @classmethod
    def read(cls, handle: BinaryIO) -> PromptTexts:
        """A store's texts from its opened file (`contract.open_regular`), each line within `LINE_MOST`."""
        return cls.of_lines(iter(lambda: contract.read_line(handle, LINE_MOST), b""))

    @classmethod
    def at(cls, path: Path) -> PromptTexts:
        """The store at `path`; an empty one where there is none or it cannot be read."""
        try:
            with contract.open_regular(path) as handle:
                return cls.read(handle)
        except OSError:
            return cls()

    def text(self, digest: str) -> str | None:
        """The text whose sha256 is `digest`, checked against it; None where the store lacks it or a chunk of it."""
        names = self.texts.get(digest)
        if names is None:
            return None
        try:
            data = b"".join(_inflated(self.chunks[name]) for name in names)
        except (KeyError, zlib.error):
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        return data.decode("utf-8", "surrogatepass")


def merge_stores(sources: Iterable[Path], target: Path) -> None:
    """One store at `target` holding every text of `sources` (the shards' stores, for `harness merge`), each chunk and
    text once; none written where the shards kept no text."""
    merged = PromptTexts()
    for source in sources:
        found = PromptTexts.at(source)
        merged.chunks.update(found.chunks)
        merged.texts.update(found.texts)
    if merged.texts:
        chunk_lines = (
            json.dumps({"chunk": name, "zlib": base64.b64encode(data).decode("ascii")})
            for name, data in merged.chunks.items()
        )
        text_lines = (json.dumps({"text": name, "chunks": names}) for name, names in merged.texts.items())
        write_lines(target, [*chunk_lines, *text_lines])


def _inflated(packed: bytes) -> bytes:
    """A chunk's bytes; `zlib.error` for one that would inflate past any chunk written (a store altered by hand)."""
    most = 4 * CHUNK_MOST  # a chunk is at most CHUNK_MOST characters of at most 4 bytes each
    inflater = zlib.decompressobj()
    data = inflater.decompress(packed, most)
    if inflater.unconsumed_tail or not inflater.eof:
        raise zlib.error("a chunk larger than any written, or cut short")
    return data
