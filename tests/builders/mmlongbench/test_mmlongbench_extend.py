"""The configs past 128K (256K, 512K, 1M) on the release-format fixture: each row is its 128K row (same id, same
depth or permutation, its units in order and at their relative places) grown from the release's own pools within
its length; VRAG's new passages are BM25-ranked and hold neither answer nor entity; VH never adds a needle;
image-counting answers get a 0 per added image; ICL rounds stay balanced over the 128K classes; DocVQA pads
whole negative documents left and right; a build is deterministic; Summarization has no such config."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image

from builders.core import contract
from builders.core.errors import BuildError
from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.extend import stretch
from builders.mmlongbench.fixture import write_fixture
from builders.mmlongbench.leaves import BUILDABLE_CONFIGS, CONFIGS, EXTENDED_CONFIGS, LEAVES
from builders.mmlongbench.pools import moved
from tests.support.builder_fixtures import built_fixture, load_split, release_fixture, sha256_hex

LEAVES_GROWN = (
    "niah_vh_single",
    "niah_vh_multi",
    "niah_mmniah_ret_text",
    "niah_mmniah_count_image",
    "niah_mmniah_reason_image",
    "icl_inat2021",
    "docvqa_slidevqa",
    "docvqa_mmlongbench_doc",
)
CONFIGS_BUILT = [f"{leaf}_{length}" for leaf in LEAVES_GROWN for length in ("128k", "256k", "1m")]


release = release_fixture(write_fixture, "mmlb_ext")
built = built_fixture(build_mmlongbench, "out", configs=CONFIGS_BUILT)


def tokens(row: dict) -> int:
    return row[contract.TEXT_TOKENS] + sum(row[contract.IMAGE_TOKENS])


def is_subsequence(short: list, long: list) -> bool:
    it = iter(long)
    return all(item in it for item in short)


def image_sha(release: Path, path: str) -> str:
    return sha256_hex((release / "mmlb_image" / path).read_bytes())


def test_the_lengths_past_128k_are_configs_of_every_leaf_but_summarization() -> None:
    assert len(EXTENDED_CONFIGS) == 3 * 17
    assert {cfg.leaf.category for cfg in EXTENDED_CONFIGS.values()} == {"vrag", "niah", "icl", "docvqa"}
    assert all(cfg.file == CONFIGS[f"{cfg.leaf.name}_128k"].file for cfg in EXTENDED_CONFIGS.values())
    assert EXTENDED_CONFIGS["icl_food101_1m"].tokens == 1 << 20
    with pytest.raises(BuildError, match="unknown config"):
        build_mmlongbench(source="fixture", out_dir="/nonexistent", configs=["summ_govreport_256k"])


def test_grown_rows_are_the_128k_rows_longer_within_their_length(built: Path, release: Path) -> None:
    manifest = contract.read_manifest(built)
    assert (
        "ours, not the paper's" in manifest["caveats"]["ours"]
        and "not the paper's" in (built / "README.md").read_text()
    )
    for leaf in LEAVES_GROWN:
        base = {row["id"]: row for row in load_split(built, f"{leaf}_128k")}
        longer = {}
        for length in ("256k", "1m"):
            config = f"{leaf}_{length}"
            entry = manifest["configs"][config]
            assert entry["over_length_rows"] == 0 and entry["grown_from"] == CONFIGS[f"{leaf}_128k"].file
            rows = load_split(built, config)
            assert list(rows["id"]) == list(base), config  # the 128K sample, in its evaluation order
            for row in rows:
                old = base[row["id"]]
                assert (row["needle_position"], row["depth"], row["answer_format"]) == (
                    old["needle_position"],
                    old["depth"],
                    old["answer_format"],
                )
                assert tokens(old) < tokens(row) <= BUILDABLE_CONFIGS[config].tokens, (config, row["id"])
                if leaf.startswith("icl"):
                    continue  # a row draws its exemplar set and shot order afresh
                # The 128K row's images stay, in order; its prompt text too (new units only in between).
                assert is_subsequence(old[contract.IMAGE_SHA256], row[contract.IMAGE_SHA256]), config
                if not leaf.startswith("niah_mmniah_count_image"):
                    assert json.loads(row["answer"]) == json.loads(old["answer"])
                longer.setdefault(row["id"], []).append(row)
        for smaller, bigger in longer.values():  # a row's 1M haystack continues its 256K one
            assert is_subsequence(smaller[contract.IMAGE_SHA256], bigger[contract.IMAGE_SHA256])


def relative_place(images: list[str], needle: str) -> float:
    return images.index(needle) / (len(images) - 1)


def test_a_needle_keeps_its_depth_and_vh_never_adds_a_needle(built: Path, release: Path) -> None:
    needles = {image_sha(release, f"vh/needle/{b}.jpg") for b in range(3)}
    for leaf in ("niah_vh_single", "niah_vh_multi"):
        base = {row["id"]: row for row in load_split(built, f"{leaf}_128k")}
        for row in load_split(built, f"{leaf}_1m"):
            images, old = row[contract.IMAGE_SHA256], base[row["id"]][contract.IMAGE_SHA256]
            (needle,) = set(images) & needles  # nothing added contains the anchor object
            gap = 1 / (len(images) - 1)
            assert abs(relative_place(images, needle) - relative_place(old, needle)) <= gap
            assert len(images) > len(old)


def test_image_counting_rows_count_0_for_each_image_added(built: Path) -> None:
    base = {row["id"]: row for row in load_split(built, "niah_mmniah_count_image_128k")}
    for row in load_split(built, "niah_mmniah_count_image_256k"):
        counts, old = json.loads(row["answer"]), base[row["id"]]
        haystack = row[contract.IMAGE_SHA256][:-1]  # the needle image closes the list
        assert len(counts) == len(haystack) > len(json.loads(old["answer"]))
        kept = [c for c, image in zip(counts, haystack, strict=True) if image in old[contract.IMAGE_SHA256][:-1]]
        assert kept == json.loads(old["answer"]) and sum(counts) == sum(json.loads(old["answer"]))


def test_icl_rounds_stay_balanced_over_the_128k_classes_and_never_show_a_test_image(built: Path, release: Path) -> None:
    tests = {
        image_sha(release, p)
        for p in (release / "mmlb_image").rglob("test_*.jpg")
        for p in [str(p.relative_to(release / "mmlb_image"))]
    }
    base = load_split(built, "icl_inat2021_128k")
    for row in load_split(built, "icl_inat2021_256k"):
        labels = re.findall(r"label: (\d+)", row["prompt"])
        per_class = {label: labels.count(label) for label in set(labels)}
        assert set(per_class) == set(re.findall(r"label: (\d+)", base[0]["prompt"]))
        assert max(per_class.values()) - min(per_class.values()) <= 1
        assert not set(row[contract.IMAGE_SHA256][:-1]) & tests
        assert row[contract.NUM_IMAGES] > base[0][contract.NUM_IMAGES]


def test_docvqa_pads_whole_negative_documents_left_and_right(built: Path, release: Path) -> None:
    pages = release / "mmlb_image" / "docqa"
    folder_of = {sha256_hex(p.read_bytes()): p.parent.name for p in pages.rglob("*") if p.is_file()}
    base = {row["id"]: row for row in load_split(built, "docvqa_slidevqa_128k")}
    for row in load_split(built, "docvqa_slidevqa_256k"):
        docs = [folder_of[image] for image in row[contract.IMAGE_SHA256]]
        own = [folder_of[image] for image in base[row["id"]][contract.IMAGE_SHA256]]
        start = docs.index(own[0])
        assert docs[start : start + len(own)] == own  # the row's own pages, one block
        left, right = docs[:start], docs[start + len(own) :]
        assert left and right and not (set(left) | set(right)) & set(own)
        runs = [d for k, d in enumerate(docs) if k == 0 or docs[k - 1] != d]
        assert len(runs) == len(set(runs))  # each negative document in one piece
        # Alternately: documents 1, 3, 5, ... of the draw on the left (the latest outermost), 2, 4, ... right.
        left_runs, right_runs = runs[: runs.index(own[0])], runs[runs.index(own[0]) + 1 :]
        assert len(right_runs) <= len(left_runs) <= len(right_runs) + 1


def test_a_build_past_128k_is_deterministic(built: Path, release: Path, tmp_path: Path) -> None:
    configs = ["niah_mmniah_ret_text_256k", "icl_inat2021_256k", "docvqa_slidevqa_256k"]
    again = build_mmlongbench(source=str(release), out_dir=tmp_path, configs=configs)
    first, second = contract.read_manifest(built), contract.read_manifest(again)
    for config in configs:
        assert first["configs"][config]["content_sha256"] == second["configs"][config]["content_sha256"]


def test_vrag_adds_bm25_ranked_passages_without_the_answer_or_the_entity(tmp_path: Path, release: Path) -> None:
    pytest.importorskip("bm25s")
    root = tmp_path / "release"
    shutil.copytree(release, root)
    file = CONFIGS["vrag_viquae_128k"].file
    gold = {"doc_id": "g", "title": "Ada Lovelace", "text": "Ada Lovelace wrote the first program in London."}
    filler = {"doc_id": "f", "title": "Filler", "text": "lorem " * 125_000}
    rows = [
        {
            "id": "q0",
            "question": " Where did this person write the first program?",
            "answer": ["London"],
            "image": "vrag/viquae/entity_0.jpg",
            "ctxs": [gold, filler] if v < 3 else [filler, gold],
            "positive_ctxs": [gold],
        }
        for v in range(6)
    ]
    (root / "mmlb_data" / file).write_text("".join(json.dumps(r) + "\n" for r in rows))

    def passage(name: str, text: str) -> dict:
        return {"doc_id": name, "title": name, "text": text + " ipsum" * 40_000}

    pool = [
        passage("near1", "the first program was written"),
        passage("far1", "tides of the ocean"),
        passage("near2", "who did write a program first"),
        passage("answer", "a program written in London"),
        passage("entity", "Ada Lovelace and a first program"),
        passage("far2", "volcanic soils of Java"),
        passage("near3", "the first written program"),
    ]
    for other in (root / "mmlb_data" / "vrag").iterdir():  # the pool: the one file below, and the row itself
        if other.name != Path(file).name:
            other.unlink()
    (root / "mmlb_data" / CONFIGS["vrag_viquae_64k"].file).write_text(
        json.dumps({**rows[0], "id": "pool", "ctxs": pool}) + "\n"
    )
    out = build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=["vrag_viquae_256k"])
    for row in load_split(out, "vrag_viquae_256k"):
        titles = re.findall(r"Document \(Title: ([^)]+)\)", row["prompt"])
        assert sorted(titles) == sorted(["Ada Lovelace", "Filler", "near1", "near2", "near3"])  # 3 fit of 5 allowed
        assert tokens(row) <= 262_144
    # The gold keeps its place: first at depth 0, last at depth 1.
    first, last = load_split(out, "vrag_viquae_256k")[0]["prompt"], load_split(out, "vrag_viquae_256k")[5]["prompt"]
    assert re.findall(r"Title: ([^)]+)", first)[0] == "Ada Lovelace" == re.findall(r"Title: ([^)]+)", last)[-1]


def test_a_vh_question_without_an_anchor_object_is_an_error_naming_the_row(tmp_path: Path, release: Path) -> None:
    root = tmp_path / "release"
    shutil.copytree(release, root)
    file = CONFIGS["niah_vh_single_128k"].file
    lines = (root / "mmlb_data" / file).read_text().splitlines()
    row = json.loads(lines[0])
    row["question"] = "Is there a dog?"
    (root / "mmlb_data" / file).write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    with pytest.raises(BuildError, match=r"vh_single_test_1000_K128_dep6.jsonl.*anchor object.*'Is there a dog\?'"):
        build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=["niah_vh_single_256k"])


def test_vh_negatives_are_kept_per_anchor(tmp_path: Path, release: Path) -> None:
    root = tmp_path / "release"
    shutil.copytree(release, root)
    dogs = []
    for k in range(4):
        image = io.BytesIO()
        Image.new("RGB", (56, 56), (k * 60, 10, 10)).save(image, format="JPEG")
        (root / "mmlb_image" / "vh" / f"dog_{k}.jpg").write_bytes(image.getvalue())
        dogs.append(f"vh/dog_{k}.jpg")
    rows = [
        {
            "id": "dog",
            "question": "For the image with a dog, is there a cat?",
            "answer": "No",
            "ctxs": dogs[:v] + ["vh/needle/0.jpg"] + dogs[v:],
        }
        for v in range(3)
    ]
    (root / "mmlb_data" / CONFIGS["niah_vh_multi_64k"].file).write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=["niah_vh_single_256k"])
    dog_images = {image_sha(root, p) for p in dogs}
    assert not any(set(row[contract.IMAGE_SHA256]) & dog_images for row in load_split(out, "niah_vh_single_256k"))


def test_stretch_keeps_each_unit_at_its_relative_place() -> None:
    base = list("abcdef")
    grown = stretch(base, list(range(23)))
    assert [u for u in grown if isinstance(u, str)] == base and grown[0] == "a" and grown[-1] == "f"
    for k, unit in enumerate(base):
        assert abs(grown.index(unit) / (len(grown) - 1) - k / 5) <= 1 / (len(grown) - 1)
    assert stretch(["a"], [1, 2]) == ["a", 1, 2]


def test_needles_are_the_items_that_move_between_depth_rows() -> None:
    negatives = list(range(20))
    depths = [negatives[:k] + ["N"] + negatives[k:] for k in (0, 4, 8, 12, 16, 20)]
    assert moved(depths) == {"N", 0, 3, 4, 7, 8, 11, 12, 15, 16, 19}  # the needle, and what stood beside it
    permutations = [negatives[:5] + [a] + negatives[5:15] + [b] + negatives[15:] for a, b in (("A", "B"), ("B", "A"))]
    assert moved(permutations) == {"A", "B", 4, 5, 14, 15}
    assert moved([[1, 2, "X"], [1, 2]]) == {"X", 2}  # missing from a row: maybe a needle
    assert all(
        leaf.name in {c.leaf.name for c in EXTENDED_CONFIGS.values()} for leaf in LEAVES if leaf.category != "summ"
    )


def test_an_archived_release_grows_the_same_rows(built: Path, tmp_path: Path) -> None:
    configs = ["niah_vh_multi_256k", "docvqa_slidevqa_256k", "icl_inat2021_256k"]
    archived = build_mmlongbench(source="fixture:archives", out_dir=tmp_path, configs=configs)
    folder, archive = contract.read_manifest(built), contract.read_manifest(archived)
    for config in configs:
        assert archive["configs"][config]["content_sha256"] == folder["configs"][config]["content_sha256"]


def segments(row: dict) -> list[tuple[str, tuple[str, ...]]]:
    """A prompt's blank-line-separated pieces, each with the images its `<image>` places show."""
    images = iter(row[contract.IMAGE_SHA256])
    return [
        (piece, tuple(next(images) for _ in range(piece.count("<image>")))) for piece in row["prompt"].split("\n\n")
    ]


def test_mmniah_keeps_each_passage_with_its_images(built: Path) -> None:
    for leaf in ("niah_mmniah_ret_text", "niah_mmniah_count_image"):
        base = {row["id"]: row for row in load_split(built, f"{leaf}_128k")}
        for row in load_split(built, f"{leaf}_1m"):
            grown, old = segments(row), segments(base[row["id"]])
            assert is_subsequence(old, grown) and len(grown) > len(old), (leaf, row["id"])


def test_a_bad_line_in_a_pool_file_is_an_error_naming_it(tmp_path: Path, release: Path) -> None:
    root = tmp_path / "release"
    shutil.copytree(release, root)
    file = CONFIGS["niah_vh_multi_64k"].file
    (root / "mmlb_data" / file).write_text('{"id": "x", "ctxs": [}\n')
    with pytest.raises(BuildError, match=r"vh_multi_test_1000_K64_dep3.jsonl:1: not valid JSON"):
        build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=["niah_vh_single_256k"])
