"""MMNeedle with shared image storage: the same rows as the embedded build, each distinct image once in
the image table, deterministic, and listed by `builders push`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders.cli import main
from builders.core import contract
from tests.support.builder_fixtures import SYNTH_CONFIGS, build_synth, read_rows


@pytest.fixture(scope="module")
def shared_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_synth(tmp_path_factory.mktemp("shared"), image_storage="shared")


def _table(folder: Path) -> list[dict]:
    rows: list[dict] = []
    for shard in sorted((folder / contract.IMAGE_TABLE_CONFIG).glob("*.parquet")):
        rows += pq.read_table(shard).to_pylist()
    return rows


def test_shared_rows_equal_embedded_rows_without_their_bytes(shared_build: Path, synth_build: Path) -> None:
    table = {row["sha256"]: row for row in _table(shared_build)}
    shown: set[str] = set()
    for config in SYNTH_CONFIGS:
        embedded, shared = read_rows(synth_build, config), read_rows(shared_build, config)
        assert [{k: v for k, v in row.items() if k != "images"} for row in embedded] == shared
        for row in embedded:
            for image, sha in zip(row["images"], row["image_sha256"], strict=True):
                assert table[sha]["image"]["bytes"] == image["bytes"]
                assert hashlib.sha256(table[sha]["image"]["bytes"]).hexdigest() == sha
            shown.update(row["image_sha256"])
    assert set(table) == shown  # every image a row shows, and no other, each once
    assert list(table) == sorted(table)
    manifest = contract.read_manifest(shared_build)
    assert manifest["contract"]["image_storage"] == "shared" and manifest["request"]["image_storage"] == "shared"
    assert manifest["image_table"]["images"] == len(table)
    readme = (shared_build / "README.md").read_text()
    assert "config_name: image_table" in readme and "load_images(" in readme


def test_shared_builds_are_byte_identical(tmp_path: Path, shared_build: Path) -> None:
    again = build_synth(tmp_path, num_proc=1, memory_budget_mb=0, image_storage="shared")
    files = sorted(p.relative_to(shared_build) for p in shared_build.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert not [f for f in files if f.name.startswith(".")]  # no spool file published
    for name in files:  # parquet, image table, README and manifest alike
        assert (shared_build / name).read_bytes() == (again / name).read_bytes(), name


def test_push_lists_the_image_table(shared_build: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", str(shared_build), "--repo", "acme/mmneedle", "--tag", "v1.0.0", "--dry-run"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line.startswith("  ")]
    table_files = [f["path"] for f in contract.read_manifest(shared_build)["image_table"]["files"]]
    assert table_files and set(table_files) <= set(listed)


def test_load_images_gives_the_same_pixels_in_both_storages(shared_build: Path, synth_build: Path) -> None:
    import datasets

    cache = shared_build.parent / "cache"
    shared = datasets.load_dataset(str(shared_build), "m10_n2_k1", split="test", cache_dir=str(cache))
    embedded = datasets.load_dataset(str(synth_build), "m10_n2_k1", split="test", cache_dir=str(cache))
    for a, b in zip(shared, embedded, strict=True):
        pixels_a = [im.tobytes() for im in contract.load_images(shared_build, a, cache_dir=str(cache))]
        assert pixels_a == [im.tobytes() for im in contract.load_images(synth_build, b)] and len(pixels_a) == 10
