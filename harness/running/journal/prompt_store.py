"""The texts of a task's requests as sent, `prompts_<task>.jsonl` beside its journal (issue 62 item 1): every journal
record names its text by `prompt_sha256`, and the text is kept here once, content-addressed and compressed.

A text is cut into chunks at content-defined places (after a line or a sentence whose CRC falls on a boundary), so
texts sharing a long stretch (MMLongBench's rows of one context at its other depths, or with other questions) share
its chunks: each chunk is stored once, zlib-compressed, by its sha256, and each text as the list of its chunks. Lines:
`{"chunk": sha256, "zlib": base64}` and, after its chunks, `{"text": sha256, "chunks": [sha256, ...]}`.

Written as the journal is: append-only, never through a link, fsync'd before the journal lines that name its texts,
so a record's text is on disk before the record; a line cut short by a kill is dropped when the store is opened again.
Read as an index (`PromptTexts`: where each chunk's line is), each line within a bound, from a regular file only; a
text is read, inflated and checked against its hash when asked for.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, TextIO

from builders.core import contract
from harness.file_writing import (
    close_appended,
    open_text,
    read_whole_lines,
    refuse_link,
    reporting,
    write_lines,
)
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
        self._stored = 0  # the texts the store's index named when it was opened
        self._failed = 0  # ...of which failed their check
        self._mended = 0  # texts a journal names that the store lacked, written anew from their requests (`mend`)
        if path is None:
            return
        with reporting(path):
            refuse_link(path)
            if path.exists():
                read_whole_lines(path)  # killed mid-line: the whole lines stand, the cut one goes
                self._resume(PromptTexts.at(path))

    def _resume(self, known: PromptTexts) -> None:
        """What a resumed run finds stored, each text checked as a reader checks it (its chunks there, inflating
        within their bound to its hash): a text that fails, and its chunks, count as not stored, so the run writes
        them again: a finished sample's from its request (`mend`), any other as its sample is sent again (a later
        line stands over an earlier one of the same name); said in one line (`say`)."""
        good = {digest for digest in known.texts if known.text(digest) is not None}
        self._texts = good
        self._chunks = {name for digest in good for name in known.texts[digest]}
        self._stored, self._failed = len(known.texts), len(known.texts) - len(good)

    def lacks(self, digest: str) -> bool:
        """Whether a text a journal record names is not held here, checked (failed its check, or never stored)."""
        return self.path is not None and digest not in self._texts

    def mend(self, digest: str, text: str) -> bool:
        """A finished sample's text that the store lacks (`lacks`), written anew from its request rendered again
        (`text`), where that hashes to the name its record holds (a text rendered otherwise is never stored under
        another's name); whether it was."""
        if not self.lacks(digest) or text_sha256(scrub(text)) != digest:
            return False
        self.put(text)
        self._mended += 1
        return True

    def say(self) -> None:
        """One line on stderr, once, where the resumed store failed its check or lacked texts: how many, and how many
        were mended from their finished samples' requests (any other is written as its sample is sent again)."""
        if self._failed:
            print(
                f"harness: {self.path}: {self._failed} of {self._stored} stored texts fail their check (a chunk "
                f"missing, altered or past its bound): {self._mended} mended from their finished samples' requests, "
                "any other written again as its sample is sent",
                file=sys.stderr,
            )
        elif self._mended:
            print(
                f"harness: {self.path}: {self._mended} prompt texts its journal names were not stored: mended from "
                "their finished samples' requests",
                file=sys.stderr,
            )
        self._failed = self._mended = 0

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
        self.say()  # where the run did not say it already
        if self._file is not None:
            handle, self._file = self._file, None
            close_appended(handle)


class PromptTexts:
    """A store's index, as read back: where each chunk's line is, each text's chunks; a text is read, inflated and
    checked against its hash on asking (`text`), so a reader holds the index, never the store."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.chunks: dict[str, tuple[int, int]] = {}  # sha256 -> (offset, length) of its line
        self.texts: dict[str, list[str]] = {}

    @classmethod
    def at(cls, path: Path) -> PromptTexts:
        """The store at `path` (a regular file, each line within `LINE_MOST`); an empty one where there is none or it
        cannot be read. A line that is not one of its two kinds (cut, altered) is passed by: a text that needs it is
        then not found (`text` says None)."""
        found = cls(path)
        try:
            with contract.open_regular(path) as handle:
                offset = 0
                while (line := contract.read_line(handle, LINE_MOST)) != b"":
                    end = handle.tell()
                    if line is not None:
                        found._note(line, offset, end - offset)
                    offset = end
        except OSError:
            return cls()
        return found

    def _note(self, line: bytes, offset: int, length: int) -> None:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(value, dict):
            return
        if isinstance(value.get("chunk"), str) and isinstance(value.get("zlib"), str):
            self.chunks[value["chunk"]] = (offset, length)
        elif isinstance(value.get("text"), str) and isinstance(value.get("chunks"), list):
            self.texts[value["text"]] = [str(name) for name in value["chunks"]]

    def packed(self, handle: BinaryIO, name: str) -> bytes:
        """The compressed bytes of chunk `name` (`KeyError` where the store lacks it, `ValueError` where its line
        changed since it was indexed)."""
        offset, length = self.chunks[name]
        handle.seek(offset)
        value = json.loads(handle.read(length))
        if not isinstance(value, dict) or value.get("chunk") != name or not isinstance(value.get("zlib"), str):
            raise ValueError(f"chunk {name} moved")
        return base64.b64decode(value["zlib"], validate=True)

    def text(self, digest: str) -> str | None:
        """The text whose sha256 is `digest`, checked against it; None where the store lacks it or a chunk of it."""
        names = self.texts.get(digest)
        if names is None or self.path is None:
            return None
        try:
            with contract.open_regular(self.path) as handle:
                data = b"".join(_inflated(self.packed(handle, name), name) for name in names)
        except (OSError, KeyError, ValueError, RecursionError, zlib.error):
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        return data.decode("utf-8", "surrogatepass")


def merge_stores(sources: Iterable[Path], target: Path) -> None:
    """One store at `target` holding every text of `sources` (the shards' stores, for `harness merge`), each chunk and
    text once; none written where the shards kept no text. What is copied is checked as a reader checks it: a store
    that is a link is passed by, and only the texts that inflate, within their bound, to their own hash (each chunk to
    its name) are kept, with only the chunks they name (a chunk no kept text names, or a bombed one, stays behind)."""
    texts: dict[str, list[str]] = {}
    kept: list[tuple[Path, PromptTexts, set[str]]] = []  # each store holding a text that checks, and its chunks
    for source in sources:
        if source.is_symlink():  # a shard's store is its own file, as a resumed run keeps it (`refuse_link`)
            continue
        found = PromptTexts.at(source)
        verified = {digest: names for digest, names in found.texts.items() if found.text(digest) is not None}
        if verified:
            texts.update(verified)  # a text a later store holds too is named by the later store's list
            kept.append((source, found, {name for names in verified.values() for name in names}))
    named = {name for names in texts.values() for name in names}
    chunks: dict[str, str] = {}  # sha256 -> its compressed bytes, as base64
    for source, found, held in kept:
        wanted = (held & named) - chunks.keys()
        if wanted:
            with contract.open_regular(source, follow=False) as handle:
                chunks.update({name: base64.b64encode(found.packed(handle, name)).decode("ascii") for name in wanted})
    if texts:
        chunk_lines = (json.dumps({"chunk": name, "zlib": packed}) for name, packed in sorted(chunks.items()))
        text_lines = (json.dumps({"text": name, "chunks": names}) for name, names in texts.items())
        write_lines(target, [*chunk_lines, *text_lines])


def _inflated(packed: bytes, name: str) -> bytes:
    """Chunk `name`'s bytes; `zlib.error` for one that would inflate past any chunk written (a store altered by hand),
    `ValueError` for one that does not hash to its name (a chunk named `../x`, or another's bytes under its name)."""
    most = 4 * CHUNK_MOST  # a chunk is at most CHUNK_MOST characters of at most 4 bytes each
    inflater = zlib.decompressobj()
    data = inflater.decompress(packed, most)
    if inflater.unconsumed_tail or not inflater.eof:
        raise zlib.error("a chunk larger than any written, or cut short")
    if hashlib.sha256(data).hexdigest() != name:
        raise ValueError(f"chunk {name!r:.80} does not hash to its name")
    return data
