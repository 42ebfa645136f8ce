"""Determinism, the output folder's life cycle, and bad input through the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.core.errors import BuildError
from builders.mmneedle import build_mmneedle
from tests.support.builder_fixtures import coco_file_name, read_rows, write_coco

CONFIGS = ["m1_n2_k1", "m10_n1_k2", "m1_n4_k5"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_inputs_give_byte_identical_builds(tmp_path: Path) -> None:
    a = build_mmneedle(source="synthetic", out_dir=tmp_path / "a", configs=CONFIGS, limit=3, seed=5, num_proc=2)
    # One worker, and a memory budget of 0 so every tile goes through the spill file.
    b = build_mmneedle(
        source="synthetic",
        out_dir=tmp_path / "b",
        configs=CONFIGS,
        limit=3,
        seed=5,
        num_proc=1,
        memory_budget_mb=0,
    )
    files_a, files_b = _files(a), _files(b)
    assert sorted(files_a) == sorted(files_b)
    assert any(name.endswith(".parquet") for name in files_a)
    for name in files_a:
        assert files_a[name] == files_b[name], name  # parquet, README and manifest alike
    manifest = json.loads(files_a["build_manifest.json"])
    assert manifest["content_hash"].startswith("sha256:")
    c = build_mmneedle(source="synthetic", out_dir=tmp_path / "c", configs=CONFIGS, limit=3, seed=6, num_proc=2)
    assert json.loads((c / "build_manifest.json").read_text())["content_hash"] != manifest["content_hash"]


def test_shards_split_by_byte_budget(tmp_path: Path) -> None:
    from builders.core import parquet_writer

    small = build_mmneedle(
        source="synthetic", out_dir=tmp_path, configs=["m10_n2_k1"], limit=4, num_proc=1, shard_bytes=1
    )
    shards = sorted((small / "m10_n2_k1").glob("*.parquet"))
    assert len(shards) == 8  # one row group per shard at this budget, all named -of-00008
    assert all(s.name.endswith("-of-00008.parquet") for s in shards)
    assert [r["sample_id"] for r in read_rows(small, "m10_n2_k1")] == [0, 1, 2, 3, 5000, 5001, 5002, 5003]
    assert parquet_writer.SHARD_BYTES == 500 * 1000 * 1000


def test_rebuild_same_is_fine_different_needs_overwrite(tmp_path: Path) -> None:
    first = build_mmneedle(source="synthetic", out_dir=tmp_path, configs=["m1_n2_k1"], limit=2, num_proc=1)
    before = _files(first)
    assert build_mmneedle(source="synthetic", out_dir=tmp_path, configs=["m1_n2_k1"], limit=2, num_proc=1) == first
    assert _files(first) == before
    with pytest.raises(BuildError, match=r"already holds a different build \(limit: 2 -> 3\); pass --overwrite"):
        build_mmneedle(source="synthetic", out_dir=tmp_path, configs=["m1_n2_k1"], limit=3, num_proc=1)
    assert _files(first) == before
    build_mmneedle(source="synthetic", out_dir=tmp_path, configs=["m1_n2_k1"], limit=3, num_proc=1, overwrite=True)
    assert len(read_rows(first, "m1_n2_k1")) == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mmneedle"]  # no staging or old folders left


def test_foreign_folder_is_not_replaced_without_overwrite(tmp_path: Path) -> None:
    (tmp_path / "mmneedle").mkdir()
    (tmp_path / "mmneedle" / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="holds no build manifest"):
        build_mmneedle(source="synthetic", out_dir=tmp_path, configs=["m1_n2_k1"], limit=1, num_proc=1)
    assert (tmp_path / "mmneedle" / "notes.txt").read_text() == "mine"


def test_failed_build_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    write_coco(root, count=30)
    (root / "val2014" / coco_file_name(7)).write_bytes(b"\xff\xd8 truncated")
    out = tmp_path / "out"
    # Abandoned staging folder of a killed build (its pid is gone): cleaned up by the next build.
    out.mkdir()
    (out / ".mmneedle.tmp-999999999-abcd").mkdir()
    with pytest.raises(BuildError, match=f"unreadable image: .*{coco_file_name(7)}"):
        build_mmneedle(source=f"coco={root}", out_dir=out, configs=["m10_n1_k1", "m1_n2_k1"], limit=50, num_proc=2)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"configs": ["m1_n3_k1"]}, r"unknown config\(s\) m1_n3_k1; valid: m1_n2_k1, m1_n4_k1"),
        (
            {"source": "synthetic:600", "configs": ["m10_n8_k1"]},
            r"has 600 images; config m10_n8_k1 needs at least 641",
        ),
        (
            {"source": "synthetic:40", "configs": ["m10_n2_k5"]},
            r"has 40 images; config m10_n2_k5 needs at least 45",
        ),
        ({"limit": 0}, "--limit must be at least 1"),
        ({"num_proc": 0}, "--num-proc must be at least 1"),
        ({"memory_budget_mb": -1}, "--memory-budget-mb must be at least 0"),
        ({"source": "flickr"}, "unknown source 'flickr'"),
        ({"official_metadata": "x"}, "--official-metadata needs --source coco=DIR"),
        ({"text_tokenizer": "gpt"}, "unknown text tokenizer 'gpt'"),
    ],
)
def test_bad_input_is_reported(tmp_path: Path, kwargs: dict, message: str) -> None:
    arguments = {
        "source": "synthetic",
        "out_dir": tmp_path,
        "configs": ["m1_n2_k1"],
        "limit": 1,
        "num_proc": 1,
    }
    with pytest.raises(BuildError, match=message):
        build_mmneedle(**{**arguments, **kwargs})
    assert not (tmp_path / "mmneedle").exists()
