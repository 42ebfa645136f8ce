"""Fuzz: the record store, `prompts_<task>.jsonl` beside a journal (issue 64). Any texts put in a store come back
exactly, after a reopening (a resumed run) too; any bytes in a store (lines altered, cut, forged, a chunk that inflates
past any written, base64 that is not) are read as an index without an exception, a text read from it is its text or
None, never another, and reopening and merging such stores ends in a store or one line; never a hang."""

from __future__ import annotations

import base64
import json
import tempfile
import zlib
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from harness.errors import UserError
from harness.redact import scrub
from harness.running.journal.prompt_store import CHUNK_LEAST, PromptStore, PromptTexts, merge_stores, text_sha256

from .conftest import JSON, bounded, budget, counted

# Texts with the store's own edges: long shared stretches (MMLongBench's contexts), lines past CHUNK_MOST with no
# boundary, lone surrogates, NULs, and texts that are each other's prefixes.
SHARED = "The report's third table lists revenue by quarter.\n" * 400
TEXTS = st.one_of(
    st.text(max_size=200),
    st.builds(lambda head, tail: head + SHARED + tail, st.text(max_size=30), st.text(max_size=30)),
    st.sampled_from(["", "\udcff", "\x00" * 10, "x" * (70 * 1024), "." * 5000, "\n" * 3000, SHARED[: CHUNK_LEAST + 1]]),
)


@budget(fuzz=1500, ci=30)
@given(first=st.lists(TEXTS, max_size=5), second=st.lists(TEXTS, max_size=5))
def test_any_texts_come_back_exactly_after_a_reopening(first: list[str], second: list[str]) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(20, "store"):
        path = Path(folder) / "prompts_t.jsonl"
        digests = {}
        for batch in (first, second):  # the second as a resumed run appends it
            store = PromptStore(path)
            digests.update({store.put(text): scrub(text) for text in batch})
            store.flush()
            store.close()
        found = PromptTexts.at(path)
        for digest, text in digests.items():
            assert digest == text_sha256(text)
            assert found.text(digest) == text


def _store_lines(texts: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prompts_t.jsonl"
        store = PromptStore(path)
        for text in texts:
            store.put(text)
        store.flush()
        store.close()
        return path.read_text(encoding="utf-8").splitlines()


GOOD_LINES = _store_lines(["a short one", SHARED + "one question", SHARED + "another question"])
BOMB = base64.b64encode(zlib.compress(b"\x00" * (64 << 20), 9)).decode("ascii")
FORGED = st.one_of(
    st.sampled_from(
        [
            json.dumps({"chunk": "c", "zlib": "!!not base64!!"}),
            json.dumps({"chunk": "c", "zlib": BOMB}),
            json.dumps({"chunk": "c", "zlib": base64.b64encode(b"not zlib").decode()}),
            json.dumps({"text": text_sha256("x"), "chunks": ["c", "c"]}),
            json.dumps({"text": "t", "chunks": [{"a": 1}, None, 5]}),
            json.dumps({"text": "t", "chunks": "c"}),
            "[" * 5000,
            "",
            "\x00",
        ]
    ),
    JSON.map(json.dumps),
    st.dictionaries(st.sampled_from(["chunk", "zlib", "text", "chunks"]), JSON, max_size=4).map(json.dumps),
)


@st.composite
def altered_store(draw: st.DrawFn) -> bytes:
    lines = list(GOOD_LINES)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        change = draw(st.sampled_from(["insert", "replace", "cut", "drop", "duplicate"]))
        if change == "insert" or not lines or at == len(lines):
            lines.insert(at, draw(FORGED))
        elif change == "replace":
            lines[at] = draw(FORGED)
        elif change == "cut":
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        elif change == "drop":
            del lines[at]
        else:
            lines.insert(at, lines[at])
    raw = "\n".join(lines).encode("utf-8", "surrogatepass")
    return raw + (b"\n" if draw(st.booleans()) else b"")


@budget(fuzz=2000, ci=40)
@given(raw=st.one_of(altered_store(), st.binary(max_size=200)), more=st.lists(TEXTS, max_size=2))
@example(raw=(json.dumps({"chunk": "c", "zlib": "!!not base64!!"}) + "\n").encode(), more=[])
def test_any_store_bytes_are_read_reopened_and_merged_or_one_line(raw: bytes, more: list[str]) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(20, "altered store"):
        path = Path(folder) / "prompts_t.jsonl"
        path.write_bytes(raw)
        found = PromptTexts.at(path)
        for digest in found.texts:
            text = found.text(digest)
            assert text is None or text_sha256(text) == digest
        try:
            merge_stores([path, path], Path(folder) / "prompts_merged.jsonl")
            store = PromptStore(path)  # a resumed run, appending to what it finds
            digests = [store.put(text) for text in more]
            store.flush()
            store.close()
        except UserError as err:
            assert "\n" not in str(err).strip() and str(path.parent) in str(err), err
            return
        again = PromptTexts.at(path)
        for digest, text in zip(digests, more, strict=True):
            assert again.text(digest) in (scrub(text), None)  # None: a forged line already claimed its hash
