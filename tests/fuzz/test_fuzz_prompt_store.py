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

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.errors import UserError
from harness.redact import scrub
from harness.run.cli import main
from harness.running.journal.prompt_store import CHUNK_LEAST, PromptStore, PromptTexts, merge_stores, text_sha256
from harness.running.journal.sample_log import read_sample_log

from .conftest import JSON, bounded, budget, counted, damaged_store

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


@pytest.fixture(scope="module")
def finished_run(toy_build, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], dict[str, str]]:
    """A finished run of a toy task whose prompts differ by row (its output folder, the arguments that resume it,
    each sample's prompt as sent)."""
    import shutil

    from harness.running.journal.sample_log import with_prompt

    data_dir, toy_tasks = toy_build
    root = tmp_path_factory.mktemp("fuzz_resume")
    tasks = Path(shutil.copytree(toy_tasks, root / "tasks"))
    (tasks / "toy_told.yaml").write_text(
        'include: _toy.yaml\ntask: toy_told\ndataset_name: colors\ndoc_to_text: "{{answer}}. {{prompt}}"\n'
    )
    args = ["--tasks", "toy_told", "--include_path", str(tasks), "--data_dir", str(data_dir),
            "--model", "constant", "--model_args", "answer=red", "--no_progress"]  # fmt: skip
    assert main([*args, "--output_path", str(root / "out")]) == 0
    (journal,) = (root / "out").rglob("journal_toy_told.jsonl")
    texts = PromptTexts.at(journal.with_name("prompts_toy_told.jsonl"))
    records = [with_prompt(json.loads(line), texts) for line in journal.read_text().splitlines()[1:]]
    sent = {record["sample_id"]: record["prompt"] for record in records}
    assert len(set(sent.values())) > 1 and all(sent.values())
    return root / "out", args, sent


@budget(fuzz=150, ci=4)
@given(data=st.data())
def test_a_damaged_store_resumed_with_log_samples_is_mended_or_one_line(
    finished_run: tuple[Path, list[str], dict[str, str]], data: st.DataObject, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 77, item 1: a finished run's store damaged any way (bombed, missing or `../` chunks, bytes, a FIFO, a link
    out of the run, a folder) and the run resumed with `--log_samples`: nothing is sent again, and either every
    prompt in the sample log is the one first sent (the store mended, said in one line) or the run stops in one line
    naming the store; never a traceback, never a hang, never an empty prompt."""
    import os
    import shutil

    counted()
    out, args, sent = finished_run
    with tempfile.TemporaryDirectory() as folder, bounded(60, "a resume over a damaged store"):
        copy = Path(folder) / "out"
        shutil.copytree(out, copy)
        (store,) = copy.rglob("prompts_toy_told.jsonl")
        kind = data.draw(st.sampled_from(["lines", "lines", "lines", "fifo", "link", "folder"]), label="kind")
        if kind == "lines":
            store.write_bytes(data.draw(damaged_store(store.read_text().splitlines()), label="store"))
        else:
            store.unlink()
            if kind == "fifo":
                os.mkfifo(store)
            elif kind == "folder":
                store.mkdir()
            else:
                (Path(folder) / "outside.jsonl").write_text("kept outside\n")
                store.symlink_to(Path(folder) / "outside.jsonl")
        capsys.readouterr()
        code = main([*args, "--output_path", str(copy), "--log_samples"])
        err = capsys.readouterr().err
        assert "Traceback" not in err, err
        if kind != "lines":  # refused before anything is written: one line naming the store
            assert code != 0 and str(store) in err.strip().splitlines()[-1], err
            assert kind != "link" or (Path(folder) / "outside.jsonl").read_text() == "kept outside\n"
            return
        assert code == 0 and "0 generated now" in err, err
        (log,) = copy.rglob("samples_toy_told_*.jsonl")
        logged = {line["sample_id"]: line["arguments"]["gen_args_0"]["arg_0"] for line in read_sample_log(log)}
        assert logged == sent, err
        found = PromptTexts.at(store)
        assert {found.text(text_sha256(scrub(text))) for text in sent.values()} == set(sent.values())
