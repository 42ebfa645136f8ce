"""MM-NIAH's builder on its fixture release (the release's layout, written offline): the official input per record,
byte-identical rebuilds, the Hub source through a Hub cache, the folder layout, and one-line errors."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import pytest

from builders import cli
from builders.core.errors import BuildError
from builders.mm_niah import CONFIGS, build_mm_niah
from builders.mm_niah.fixture import write_fixture
from builders.mm_niah.records import official_input, parse_record
from tests.support.builder_fixtures import read_rows
from tests.support.hub_cache import fill_hub_cache

CONFIG_SET = ["retrieval_text_val", "counting_text_val", "reasoning_image_val", "retrieval_image_test"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mm_niah")
    path = build_mm_niah("fixture", out, progress=False)
    assert path is not None
    return path


def _parquet_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.parquet"))
    }


def test_every_official_task_is_a_config_of_the_fixture_build(built: Path) -> None:
    manifest = json.loads((built / "build_manifest.json").read_text())
    assert list(manifest["configs"]) == list(CONFIGS)
    assert manifest["configs"]["retrieval_text_val"]["official_task"] == "retrieval-text-val"
    assert "synthetic" in manifest["caveats"]


def test_rows_hold_the_official_input(built: Path) -> None:
    rows = read_rows(built, "reasoning_image_val")
    row = rows[1]
    assert row["prompt"] == f"{row['context']}\n{row['question']}"
    assert row["question"].endswith("D. <image>\nAnswer with the option's letter from the given choices directly.")
    assert row["num_images"] == row["prompt"].count("<image>") and row["num_choice_images"] == 4
    assert (row["answer_kind"], json.loads(row["answer"])) == ("choice", 2)
    retrieval = read_rows(built, "retrieval_image_val")[0]
    assert "\nA. a red cartoon fox\n" in retrieval["question"] and retrieval["choices"][0] == "a red cartoon fox"
    counting = read_rows(built, "counting_text_val")
    assert counting[0]["question"].endswith("\nAnswer the question using a single word or phrase.")
    assert json.loads(counting[3]["answer"]) == "[0, 0, 2]"  # the release's JSON text, kept as given
    assert counting[0]["placed_depth"] == [0.0, 0.1, 0.9]
    hidden = read_rows(built, "retrieval_text_test")[0]  # the test split's answers are private
    assert (hidden["answer"], hidden["answer_kind"]) == ("null", "hidden")


def test_text_needle_records_over_one_document_share_a_haystack(built: Path) -> None:
    keys = [row["haystack"] for row in read_rows(built, "retrieval_text_val")]
    assert keys[0] == keys[1] and keys[2] == keys[3] and keys[0] != keys[2]


def test_a_rebuild_is_byte_identical(built: Path, tmp_path: Path) -> None:
    again = build_mm_niah("fixture", tmp_path, progress=False)
    assert again is not None and _parquet_hashes(again) == _parquet_hashes(built)


def test_the_hub_source_reads_the_release_files_from_the_cache(built: Path, tmp_path: Path, offline_hub: Path) -> None:
    release = write_fixture(tmp_path / "release")
    files = {str(p.relative_to(release)): p for p in release.rglob("*") if p.is_file()}
    fill_hub_cache(offline_hub, "OpenGVLab/MM-NIAH", files)
    out = tmp_path / "out"
    assert (
        cli.main(
            [
                "build",
                "mm_niah",
                "--source",
                "hf://OpenGVLab/MM-NIAH",
                "--configs",
                ",".join(CONFIG_SET),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    manifest = json.loads((out / "mm_niah" / "build_manifest.json").read_text())
    assert sorted(manifest["inputs"]["hub"]["files"]) == sorted(
        [f"mm_niah_{CONFIGS[c].split}/annotations/{CONFIGS[c].task}-{CONFIGS[c].needle}.jsonl" for c in CONFIG_SET]
        + ["mm_niah_test/images.tar.gz", "mm_niah_val/images.tar.gz"]
    )
    for config in CONFIG_SET:
        assert [r["image_sha256"] for r in read_rows(out / "mm_niah", config)] == [
            r["image_sha256"] for r in read_rows(built, config)
        ]


def test_an_unpacked_image_folder_gives_the_same_rows(built: Path, tmp_path: Path) -> None:
    release = write_fixture(tmp_path / "release")
    for split in ("val", "test"):
        archive = release / f"mm_niah_{split}" / "images.tar.gz"
        with tarfile.open(archive) as tar:
            tar.extractall(release / f"mm_niah_{split}", filter="data")
        archive.unlink()
    out = build_mm_niah(str(release), tmp_path / "out", CONFIG_SET, progress=False)
    assert out is not None
    for config in CONFIG_SET:
        assert read_rows(out, config) == read_rows(built, config)


def test_bad_records_are_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=r"^x\.jsonl line 3: not an MM-NIAH record"):
        parse_record(b'{"id": "7"}', "x.jsonl line 3")
    with pytest.raises(BuildError, match=r"^x\.jsonl line 4: not an MM-NIAH record \(nested past"):
        parse_record(b"[" * 100_000, "x.jsonl line 4")  # issue 77: a RecursionError traceback before
    record = parse_record(
        json.dumps(
            {"id": 1, "images_list": ["a.jpg"], "context": "no image", "question": "q", "answer": "a",
             "meta": {"placed_depth": 0.5, "context_length": 10, "choices": None, "choices_image_path": None}}
        ).encode(),
        "x",
    )  # fmt: skip
    with pytest.raises(BuildError, match="0 <image> placeholders, but images_list names 1 images"):
        official_input(record, "x.jsonl line 1")
    release = write_fixture(tmp_path / "release")
    (release / "mm_niah_val" / "images.tar.gz").unlink()
    with pytest.raises(BuildError, match=r"image\(s\) not in the release"):
        build_mm_niah(str(release), tmp_path / "out", ["retrieval_text_val"], progress=False)


def test_packed_annotation_files_give_the_same_rows(built: Path, tmp_path: Path) -> None:
    """A split's annotations as `annotations.tar.gz` (as InternVL's guide unpacks the validation split's)."""
    release = write_fixture(tmp_path / "release")
    folder = release / "mm_niah_val"
    with tarfile.open(folder / "annotations.tar.gz", "w:gz") as tar:
        tar.add(folder / "annotations", arcname="annotations")
    for path in (folder / "annotations").iterdir():
        path.unlink()
    (folder / "annotations").rmdir()
    out = build_mm_niah(str(release), tmp_path / "out", CONFIG_SET, progress=False)
    assert out is not None
    for config in CONFIG_SET:
        assert read_rows(out, config) == read_rows(built, config)


@pytest.mark.parametrize("trailing", ["", " "])
def test_a_line_listed_twice_is_refused_naming_both_lines(trailing: str, tmp_path: Path) -> None:
    """Issue 87: an annotation line listed twice built rows scored twice (rc 0), where MMLongBench-Doc refuses the
    same case; one whose question differs only by white space at its end is refused too, saying so."""
    release = write_fixture(tmp_path / "release")
    cfg = CONFIGS["retrieval_text_val"]
    annotation = release / cfg.annotation
    lines = annotation.read_bytes().splitlines()
    again = json.loads(lines[0])
    again["question"] += trailing
    annotation.write_bytes(b"\n".join([*lines, json.dumps(again).encode()]) + b"\n")
    but = " but for white space at the ends of its text" if trailing else ""
    with pytest.raises(BuildError, match=rf"line {len(lines) + 1} repeats line 1 in every field{but} \("):
        build_mm_niah(str(release), tmp_path / "out", [cfg.name], progress=False)
