"""The journal's prompt store (`harness.running.journal.prompt_store`): each text kept once, content-addressed and compressed,
texts sharing a stretch sharing its chunks, read back byte for byte or not at all."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.file_writing import LinkRefused
from harness.running.journal.prompt_store import PromptStore, PromptTexts, merge_stores, text_sha256


def context(seed: int, sentences: int = 3000) -> str:
    """Prose-like text of some 150 KB, with lines and sentences, no two alike."""
    rng = random.Random(seed)
    words = [f"w{rng.randrange(5000)}" for _ in range(sentences * 9)]
    return "".join(" ".join(words[i * 9 : i * 9 + 9]) + (".\n" if i % 7 == 6 else ". ") for i in range(sentences))


def stored(tmp_path: Path, *texts: str) -> tuple[Path, list[str]]:
    path = tmp_path / "prompts_t.jsonl"
    store = PromptStore(path)
    names = [store.put(text) for text in texts]
    store.flush()
    store.close()
    return path, names


def test_texts_sharing_a_context_share_its_chunks(tmp_path: Path) -> None:
    shared = context(1)
    depth = len(shared) // 3
    needle = "The secret word is apricot.\n"
    texts = [shared + "Question: what is it?", shared[:depth] + needle + shared[depth:] + "Question: which word?"]
    alone, _ = stored(tmp_path / "one", texts[0])
    path, names = stored(tmp_path / "two", *texts, texts[0])  # a text put twice is stored once
    assert path.stat().st_size < 1.15 * alone.stat().st_size
    found = PromptTexts.at(path)
    assert [found.text(name) for name in names] == [*texts, texts[0]] and names[0] == text_sha256(texts[0])


def test_a_store_cut_by_a_kill_keeps_its_whole_lines(tmp_path: Path) -> None:
    path, (first,) = stored(tmp_path, "first text")
    whole = path.read_bytes()
    store = PromptStore(path)
    second = store.put("second text")
    store.flush()
    store.close()
    path.write_bytes(path.read_bytes()[: len(whole) + 20])  # its last lines cut mid-way
    again = PromptStore(path)
    assert path.read_bytes() == whole  # the cut line dropped on opening
    assert again.put("second text") == second  # not known any more: stored again
    again.flush()
    again.close()
    found = PromptTexts.at(path)
    assert found.text(first) == "first text" and found.text(second) == "second text"


def test_an_altered_or_missing_chunk_gives_no_text(tmp_path: Path) -> None:
    path, (name,) = stored(tmp_path, context(2, 200))
    other, (swapped,) = stored(tmp_path / "b", context(3, 200))
    assert PromptTexts.at(path).text(name) == context(2, 200)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[1:]) + "\n")  # its first chunk gone
    assert PromptTexts.at(path).text(name) is None
    # its text naming chunks that do not hash to it (another text's): not its text
    others = other.read_text().splitlines()
    path.write_text("\n".join([*others[:-1], others[-1].replace(swapped, name)]) + "\n")
    assert PromptTexts.at(path).texts[name] and PromptTexts.at(path).text(name) is None
    path.write_text("\n".join([*lines[:-1], lines[-1]]) + "\n")
    found = PromptTexts.at(path)
    path.write_text(path.read_text().replace('"zlib": "', '"zlib": "AAAA', 1))  # changed after it was indexed
    assert found.text(name) is None and PromptTexts.at(path).text(name) is None


def test_a_link_in_its_place_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "prompts_t.jsonl").symlink_to(target)
    with pytest.raises(LinkRefused):
        PromptStore(tmp_path / "prompts_t.jsonl")
    assert target.read_text() == "keep me"


def test_merged_stores_hold_every_shards_texts(tmp_path: Path) -> None:
    a, (one,) = stored(tmp_path / "a", "one" + context(4, 100))
    b, (two,) = stored(tmp_path / "b", "two" + context(4, 100))
    merge_stores([a, b, tmp_path / "absent.jsonl"], tmp_path / "merged.jsonl")
    found = PromptTexts.at(tmp_path / "merged.jsonl")
    assert found.text(one) == "one" + context(4, 100) and found.text(two) == "two" + context(4, 100)


def test_a_merge_copies_only_the_chunks_of_texts_that_check_and_no_linked_store(tmp_path: Path) -> None:
    """A shard's store holding chunks no text names, a chunk that inflates past its bound, or a link to a file
    elsewhere: the merged store holds the texts that check and their chunks, nothing else (issue 77, item 2)."""
    import base64
    import json
    import zlib

    a, (one,) = stored(tmp_path / "a", "one" + context(4, 100))
    bomb = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()
    stray = [json.dumps({"chunk": f"{k:064x}", "zlib": bomb}) for k in range(3)]  # named by no text
    bad_text = json.dumps({"text": "f" * 64, "chunks": [f"{0:064x}"]})  # a text whose chunk is a bomb
    with a.open("a") as handle:
        handle.write("\n".join([*stray, bad_text]) + "\n")
    outside = tmp_path / "outside.jsonl"
    b, (two,) = stored(tmp_path / "b", "two" + context(5, 100))
    b.rename(outside)
    (tmp_path / "b" / b.name).symlink_to(outside)
    merge_stores([a, tmp_path / "b" / b.name], tmp_path / "merged.jsonl")
    merged = PromptTexts.at(tmp_path / "merged.jsonl")
    assert set(merged.texts) == {one} and merged.text(one) == "one" + context(4, 100)
    assert set(merged.chunks) == set(PromptTexts.at(a).texts[one])  # only the checked text's chunks
    assert (tmp_path / "merged.jsonl").stat().st_size < a.stat().st_size


def test_a_resumed_run_checks_each_stored_text_and_writes_a_failed_one_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chunk replaced by a bomb, or gone: the resumed store says so in one line and writes the texts that needed it
    again as the run sends them, so the store reads back whole (issue 77, item 1)."""
    import base64
    import json
    import zlib

    text, other = "one" + context(6, 100), "two" + context(7, 100)
    path, (digest, kept) = stored(tmp_path, text, other)
    first = PromptTexts.at(path).texts[digest][0]
    bomb = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()
    lines = path.read_text().splitlines()
    lines = [json.dumps({"chunk": first, "zlib": bomb}) if f'"chunk": "{first}"' in line else line for line in lines]
    path.write_text("\n".join(lines) + "\n")
    assert PromptTexts.at(path).text(digest) is None
    store = PromptStore(path)
    assert store.lacks(digest) and not store.lacks(kept)
    assert not store.mend(digest, "rendered otherwise")  # never stored under another text's name
    assert store.put(text) == digest and store.put(other) == kept
    store.flush()
    store.close()
    assert "1 of 2 stored texts fail their check" in capsys.readouterr().err  # said once, where the run did not
    again = PromptTexts.at(path)
    assert again.text(digest) == text and again.text(kept) == other
    PromptStore(path).close()
    assert capsys.readouterr().err == ""  # whole again: nothing to say


def test_a_chunk_is_checked_against_its_name_and_a_merge_copies_only_the_chunks_its_texts_name(tmp_path: Path) -> None:
    """A text whose chunks are stored under names that are not their hashes (`../<hash>`, in its chunk lines and its
    own list) fails its check, though its bytes make it up; merged beside a shard holding the same text whole, the
    merged store holds that shard's chunks only, never the renamed ones (issue 77, items 1 and 2)."""
    text = "one" + context(8, 100)
    a, (digest,) = stored(tmp_path / "a", text)
    b, _ = stored(tmp_path / "b", text)
    names = PromptTexts.at(a).texts[digest]
    renamed = a.read_text()
    for name in names:
        renamed = renamed.replace(f'"{name}"', f'"../{name}"')
    a.write_text(renamed)
    assert PromptTexts.at(a).texts[digest] == [f"../{name}" for name in names]
    assert PromptTexts.at(a).text(digest) is None
    assert PromptStore(a).lacks(digest)
    merge_stores([a, b], tmp_path / "merged.jsonl")
    merged = PromptTexts.at(tmp_path / "merged.jsonl")
    assert merged.text(digest) == text and set(merged.chunks) == set(names)
