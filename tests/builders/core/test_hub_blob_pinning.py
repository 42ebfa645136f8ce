"""What is verified is what is read (issue 49, items 3 and 6): a Hub cache blob is opened once, without blocking (a
FIFO planted as a blob is refused at once), its size checked before a byte is hashed, hashed through that
descriptor, and read from it; a blob swapped under its name after it was hashed is never read, and the manifest
records each blob's sha256 beside the commit, so a snapshot link repointed to another (valid) blob shows."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from builders import cli
from builders.core import contract
from tests.support.archive_bombs import tar_gz
from tests.support.deadline import within
from tests.support.hub_cache import MMLONGBENCH_REPO as REPO
from tests.support.hub_cache import VH_SINGLE_FILES, build_vh_single, fill_hub_cache, mmlongbench_hub_files

TEXTS, VH_IMAGES = VH_SINGLE_FILES
VH_FILE = "NIAH/vh_single_test_1000_K8_dep6.jsonl"


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two files `niah_vh_single_8k` reads as the Hub publishes them, and `edited`: the text archive with one
    question changed (a valid archive, of other rows)."""
    from builders.mmlongbench.fixture import fixture_files

    folder = tmp_path_factory.mktemp("pinning")
    hub_files = mmlongbench_hub_files(folder)
    texts, _ = fixture_files()
    texts[VH_FILE] = texts[VH_FILE].replace(b"with a cat", b"with a cow")
    edited = tar_gz(folder / "edited.tar.gz", [(f"mmlb_data/{k}", v) for k, v in sorted(texts.items())])
    return {TEXTS: hub_files[TEXTS], VH_IMAGES: hub_files[VH_IMAGES], "edited": edited}


def hub_files(archives: dict[str, Path]) -> dict[str, Path]:
    """The two files of the Hub repo, as published (`archives` less the edited one)."""
    return {name: archives[name] for name in VH_SINGLE_FILES}


def manifest(out: Path) -> dict:
    return json.loads((out / "mmlongbench" / "build_manifest.json").read_text())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_blob_swapped_after_it_was_hashed_is_never_read(
    tmp_path: Path,
    offline_hub: Path,
    archives: dict[str, Path],
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's swap: the text archive's blob replaced under its name right after it was verified, by an archive
    of other rows. The build reads the bytes that were hashed: it equals the build of the untouched cache."""
    fill_hub_cache(offline_hub, REPO, hub_files(archives))
    assert build_vh_single(capsys, tmp_path / "clean")[0] == 0
    real = contract.verified_blob

    def then_swapped(snapshot: Path, name: str, **bounds: object) -> object:
        verified = real(snapshot, name, **bounds)  # type: ignore[arg-type]
        if name == TEXTS:
            blob = getattr(verified, "path", verified)
            swap = Path(str(blob) + ".swap")
            swap.write_bytes(archives["edited"].read_bytes())
            os.replace(swap, blob)  # renamed over the blob's name, as an attacker with the cache would
        return verified

    monkeypatch.setattr(contract, "verified_blob", then_swapped)
    code, err = build_vh_single(capsys, tmp_path / "swapped")
    assert code == 0, err
    assert manifest(tmp_path / "swapped")["content_hash"] == manifest(tmp_path / "clean")["content_hash"]
    rows = (tmp_path / "swapped" / "mmlongbench").rglob("*.parquet")
    assert not any(b"with a cow" in path.read_bytes() for path in rows)


def test_the_manifest_records_each_blob_so_a_repointed_link_shows(
    tmp_path: Path, offline_hub: Path, archives: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """A snapshot link repointed to another blob of the cache that hashes to its own name (an edited archive) is a
    blob the cache cannot tell from the Hub's; the build now records which blob it read, beside the commit."""
    snapshot = fill_hub_cache(offline_hub, REPO, hub_files(archives))
    assert build_vh_single(capsys, tmp_path / "clean")[0] == 0
    edited = sha256(archives["edited"])
    (snapshot.parent.parent / "blobs" / edited).write_bytes(archives["edited"].read_bytes())
    (snapshot / TEXTS).unlink()
    (snapshot / TEXTS).symlink_to(Path("../../blobs") / edited)
    assert build_vh_single(capsys, tmp_path / "repointed")[0] == 0
    clean, repointed = (manifest(tmp_path / name)["inputs"]["hub"] for name in ("clean", "repointed"))
    assert clean["commit"] == repointed["commit"]  # the commit alone shows nothing
    assert clean["blobs"][TEXTS] == {
        "sha256": sha256(archives[TEXTS]),
        "num_bytes": archives[TEXTS].stat().st_size,
        "etag": sha256(archives[TEXTS]),
    }
    assert repointed["blobs"][TEXTS]["sha256"] == edited != clean["blobs"][TEXTS]["sha256"]


def test_a_fifo_planted_as_a_blob_is_refused_at_once(
    tmp_path: Path, offline_hub: Path, archives: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """A blocking open of the blob before its fstat waited forever on a FIFO with no writer."""
    snapshot = fill_hub_cache(offline_hub, REPO, hub_files(archives))
    blob = (snapshot / TEXTS).resolve()
    blob.unlink()
    os.mkfifo(blob)
    with within(10, "a build reading a FIFO planted as a blob"):
        code, err = build_vh_single(capsys, tmp_path / "out")
    assert code == 2 and err.count("\n") == 0, err
    assert f"{TEXTS}: its blob {blob} is a FIFO, not a regular file; remove" in err
    assert not (tmp_path / "out" / "mmlongbench").exists()


def test_a_blob_over_its_bound_is_refused_before_a_byte_is_hashed(
    tmp_path: Path, offline_hub: Path, capsys: pytest.CaptureFixture
) -> None:
    """The issue's 16 GiB blob (hashed whole in 25-58 s before its size was checked), as MMNeedle's metadata zip,
    whose release file is some 100 MB: refused from its size (a sparse file here: nothing is written)."""
    from tests.support.builder_fixtures import write_coco

    write_coco(tmp_path / "coco", count=20)
    snapshot = fill_hub_cache(offline_hub, "Wang-ML-Lab/MMNeedle", {"data/metadata_stitched.zip": b"PK"})
    blob = (snapshot / "data" / "metadata_stitched.zip").resolve()
    os.truncate(blob, 16 << 30)
    argv = ["build", "mmneedle", "--source", f"coco={tmp_path / 'coco'}", "--configs", "m1_n2_k1", "--limit", "3"]
    start = time.perf_counter()
    code = cli.main(
        [*argv, "--official-metadata", "hf://Wang-ML-Lab/MMNeedle", "--out", str(tmp_path / "out"), "--quiet"]
    )
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert (
        "data/metadata_stitched.zip: its blob holds 17,179,869,184 bytes, over the 1 GiB that this file of the "
        "release can hold; not hashed"
    ) in err
    assert seconds < 10


def test_a_verified_file_is_read_from_its_descriptor_by_every_name(tmp_path: Path) -> None:
    """`contract.open_regular` of the snapshot's name, the blob's, or a view's link reads the pinned descriptor, each
    reader at its own offset; the pins go with the work folder that holds the view."""
    snapshot = fill_hub_cache(tmp_path / "hub", "o/r", {"f.bin": b"0123456789"})
    verified = contract.verified_blob(snapshot, "f.bin")
    view = tmp_path / "work" / "hub" / "f.bin"
    view.parent.mkdir(parents=True)
    view.symlink_to(verified.path)
    contract.pin_name(view, verified.path)
    verified.path.unlink()
    verified.path.write_bytes(b"swapped!!!")  # a new file under the blob's name
    with contract.open_regular(snapshot / "f.bin") as first, contract.open_regular(view) as second:
        assert first.read(4) == b"0123" and second.read() == b"0123456789" and first.read() == b"456789"
    contract.release_pins(tmp_path / "work")
    with contract.open_regular(view) as again:
        assert again.read() == b"swapped!!!"  # no pin under the work folder any more: read by name, as any file
