"""Official mode on hand-made metadata in the authors' format (metadata_stitched/ of
Wang-ML-Lab/multimodal-needle-in-a-haystack): the build must reproduce it exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import ImageChops, ImageStat

from builders.core.errors import BuildError
from builders.mmneedle import build_mmneedle
from builders.mmneedle.sources import CocoCaptionSource
from tests.support.builder_fixtures import coco_file_name, decode, expected_caption, read_rows, write_coco
from tests.support.mmneedle_metadata import (
    ANNOTATIONS_1_2_2,
    ANNOTATIONS_2_10_1_1,
    POOL_1,
    POOL_2,
    single_needle_entries,
    write_metadata,
)


@pytest.fixture
def official(tmp_path: Path) -> tuple[Path, Path]:
    return write_coco(tmp_path / "coco", count=50), write_metadata(tmp_path / "repo")


def test_official_mode_reproduces_the_metadata(official: tuple[Path, Path], tmp_path: Path) -> None:
    coco, repo = official
    out = build_mmneedle(
        source=f"coco={coco}", out_dir=tmp_path / "out", configs=["m1_n2_k1", "m10_n1_k2"],
        official_metadata=repo, limit=3, num_proc=2,
    )  # fmt: skip
    rows = read_rows(out, "m1_n2_k1")
    assert [r["sample_id"] for r in rows] == [0, 1, 2, 5000, 5001, 5002]
    for row, (i, stitched, m, r, c, target) in zip(rows, ANNOTATIONS_1_2_2, strict=True):
        tiles = [coco_file_name(k) for k in POOL_2[stitched]]
        assert row["id"] == f"m1_n2_k1-{i:05d}" and row["sample_id"] == i
        assert row["haystack_ids"] == [stitched[:-4]]
        assert row["haystack_subimages"] == [tiles]
        assert row["needle_files"] == [coco_file_name(target)]
        assert row["captions"] == [expected_caption(target)]  # last caption, raw
        assert row["prompt"].endswith("\nCaption: " + expected_caption(target))
        positive = m >= 0
        assert row["is_positive"] == positive
        assert row["answer"] == (f"{m + 1}, {r + 1}, {c + 1}" if positive else "-1")
        assert (row["needle_index"], row["needle_row"], row["needle_col"]) == (
            ([m + 1], [r + 1], [c + 1]) if positive else ([-1], [-1], [-1])
        )
    assert rows[0]["all_locations"] == [["1, 2, 2"]]

    multi = read_rows(out, "m10_n1_k2")
    assert [r["sample_id"] for r in multi] == [0, 1, 2, 5000, 5001, 5002]
    for row, (i, hay, idx, targets) in zip(multi, ANNOTATIONS_2_10_1_1, strict=True):
        assert row["id"] == f"m10_n1_k2-{i:05d}"
        assert row["haystack_ids"] == [s[:-4] for s in hay]
        assert row["haystack_subimages"] == [[coco_file_name(POOL_1[s][0])] for s in hay]
        assert row["needle_files"] == [coco_file_name(t) for t in targets]
        assert row["captions"] == [expected_caption(t) for t in targets]
        expected = "; ".join(f"{m + 1}, 1, 1" if m >= 0 else "-1" for m in idx)
        assert row["answer"] == expected
    assert multi[0]["answer"] == "5, 1, 1; 1, 1, 1"

    # The stitched pixels are the pool's tiles, row-major.
    source = CocoCaptionSource(coco)
    stitched = decode(rows[0]["images"][0])
    for k, name in enumerate(rows[0]["haystack_subimages"][0]):
        cell = stitched.crop(((k % 2) * 256, (k // 2) * 256, (k % 2 + 1) * 256, (k // 2 + 1) * 256))
        diff = sum(ImageStat.Stat(ImageChops.difference(cell, source.load_tile(name))).mean) / 3
        assert diff < 4.0
    manifest = json.loads((out / "build_manifest.json").read_text())
    assert manifest["request"]["mode"] == "official"
    assert sorted(manifest["request"]["official_metadata"]) == [
        "1_1.json",
        "2_2.json",
        "2_annotations_10_1_1.json",
        "annotations_1_2_2.json",
    ]


def test_official_mode_errors_name_file_and_entry(official: tuple[Path, Path], tmp_path: Path) -> None:
    coco, repo = official
    meta = repo / "metadata_stitched"

    def build(**kwargs) -> None:  # noqa: ANN003
        arguments = {
            "source": f"coco={coco}",
            "out_dir": tmp_path / "out",
            "configs": ["m1_n2_k1"],
            "official_metadata": repo,
            "num_proc": 1,
            "limit": 3,
        }
        build_mmneedle(**{**arguments, **kwargs})

    with pytest.raises(BuildError, match=r"annotations_1_2_2.json has no sample id 3 \(it holds ids 0-2, 5000-5002\)"):
        build(limit=4)
    with pytest.raises(BuildError, match=r"official metadata file\(s\) not found: .*annotations_1_4_4.json"):
        build(configs=["m1_n4_k1"])

    entries = json.loads((meta / "annotations_1_2_2.json").read_text())
    entries[-1]["row"] = 0  # id 0 now claims the needle at (0, 0, 1), where the pool has image 3
    (meta / "annotations_1_2_2.json").write_text(json.dumps(entries))
    with pytest.raises(BuildError, match=r"annotations_1_2_2.json entry 5 \(id 0\): needle 1 .* is not at \(0, 0, 1\)"):
        build()

    (meta / "annotations_1_2_2.json").write_text(json.dumps([{"id": 0, "image_ids": "x"}]))
    with pytest.raises(BuildError, match=r"entry 0 \(id 0\): 'image_ids' should list 1 stitched image paths"):
        build(limit=1)

    (meta / "2_2.json").write_text("[1, 2")
    with pytest.raises(BuildError, match=r"malformed metadata file .*2_2.json: not valid JSON"):
        build()
    assert not (tmp_path / "out" / "mmneedle").exists()


def test_official_mode_reports_missing_images(official: tuple[Path, Path], tmp_path: Path) -> None:
    coco, repo = official
    (coco / "val2014" / coco_file_name(12)).unlink()  # a tile of stitched_0003 (sample 2)
    # Accepted by the coverage check (49 of 50 present), then named when the metadata asks for it.
    with pytest.raises(BuildError, match=f"missing image: .*val2014/{coco_file_name(12)}"):
        build_mmneedle(
            source=f"coco={coco}",
            out_dir=tmp_path,
            configs=["m1_n2_k1"],
            official_metadata=repo,
            limit=3,
            num_proc=1,
            min_image_coverage=0.9,
        )


def test_metadata_of_a_smaller_run_splits_at_half_its_samples(official: tuple[Path, Path], tmp_path: Path) -> None:
    """A run of 8 samples (the official scripts' N_SEQUENCES=8): ids 0-3 positive, 4-7 negative."""
    coco, repo = official
    meta = repo / "metadata_stitched"
    small = [
        (i, s, m, r, c, t)
        for i, (_, s, m, r, c, t) in enumerate(
            ANNOTATIONS_1_2_2[:3]
            + [(3, "COCO_val2014_stitched_0001.jpg", 0, 0, 0, 4)]
            + ANNOTATIONS_1_2_2[3:]
            + [(7, "COCO_val2014_stitched_0003.jpg", -1, -1, -1, 32)]
        )
    ]
    (meta / "annotations_1_2_2.json").write_text(json.dumps(single_needle_entries(small)))
    out = build_mmneedle(
        source=f"coco={coco}", out_dir=tmp_path, configs=["m1_n2_k1"], official_metadata=repo, full=True, num_proc=1
    )
    rows = read_rows(out, "m1_n2_k1")
    assert [(r["sample_id"], r["is_positive"]) for r in rows] == [(i, i < 4) for i in range(8)]
    assert [r["answer"] for r in rows] == ["1, 2, 2", "1, 1, 2", "1, 2, 1", "1, 1, 1", "-1", "-1", "-1", "-1"]
    manifest = json.loads((out / "build_manifest.json").read_text())["configs"]["m1_n2_k1"]
    assert (manifest["positives"], manifest["negatives"]) == (4, 4)
    limited = build_mmneedle(
        source=f"coco={coco}", out_dir=tmp_path / "l", configs=["m1_n2_k1"], official_metadata=repo, limit=2, num_proc=1
    )
    assert [r["sample_id"] for r in read_rows(limited, "m1_n2_k1")] == [0, 1, 4, 5]


def test_metadata_of_an_odd_run_keeps_each_sides_own_count(official: tuple[Path, Path], tmp_path: Path) -> None:
    """A run of 7 samples, as the official generator makes it (sample i positive when i < 7 / 2): ids 0-3
    positive, 4-6 negative. `--full` and the default subset take 4 + 3 rows; taking as many negatives as
    positives asked for id 7, which the file does not hold."""
    coco, repo = official
    meta = repo / "metadata_stitched"
    odd = [
        (i, s, m, r, c, t)
        for i, (_, s, m, r, c, t) in enumerate(
            ANNOTATIONS_1_2_2[:3] + [(3, "COCO_val2014_stitched_0001.jpg", 0, 0, 0, 4)] + ANNOTATIONS_1_2_2[3:]
        )
    ]
    (meta / "annotations_1_2_2.json").write_text(json.dumps(single_needle_entries(odd)))
    for name, options in (("full", {"full": True}), ("paper", {})):
        out = build_mmneedle(
            source=f"coco={coco}",
            out_dir=tmp_path / name,
            configs=["m1_n2_k1"],
            official_metadata=repo,
            num_proc=1,
            **options,
        )
        rows = read_rows(out, "m1_n2_k1")
        assert [(r["sample_id"], r["is_positive"], r["in_paper_subset"]) for r in rows] == [
            (i, i < 4, True) for i in range(7)
        ]
        manifest = json.loads((out / "build_manifest.json").read_text())["configs"]["m1_n2_k1"]
        assert (manifest["positives"], manifest["negatives"]) == (4, 3)
    limited = build_mmneedle(
        source=f"coco={coco}", out_dir=tmp_path / "l", configs=["m1_n2_k1"], official_metadata=repo, limit=2, num_proc=1
    )
    assert [r["sample_id"] for r in read_rows(limited, "m1_n2_k1")] == [0, 1, 4, 5]
