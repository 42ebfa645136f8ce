"""The Hub cache is not trusted (issue 41, item 6): a file of a `--source hf://...` release is read only once its
snapshot link leads, through folders that are no links, to a blob of the repo's own cache whose bytes hash to its
name (sha256 for LFS files, git's blob hash for the others); and the release is read from a folder holding only
the files verified, so a file planted beside them in the snapshot is never read. Each refusal is one line naming
the file, exit 2, and no build."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from builders import cli
from builders.core import contract
from tests.support.hub_cache import (
    COMMIT,
    VH_SINGLE_FILES,
    build_vh_single,
    fill_hub_cache,
    git_blob_hash,
    mmlongbench_hub_files,
)
from tests.support.hub_cache import MMLONGBENCH_REPO as REPO


@pytest.fixture(scope="module")
def mmlb_hub_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two files `niah_vh_single_8k` reads, under the names the Hub publishes them as."""
    files = mmlongbench_hub_files(tmp_path_factory.mktemp("mmlb_trust"))
    return {name: files[name] for name in VH_SINGLE_FILES}


def refused(code: int, err: str, out: Path, *parts: str) -> None:
    assert code == 2 and err.count("\n") == 0, err
    for part in parts:
        assert part in err, err
    assert not (out / "mmlongbench").exists()


def snapshot(cache: Path, repo: str = REPO, commit: str = COMMIT) -> Path:
    return cache / ("datasets--" + repo.replace("/", "--")) / "snapshots" / commit


def regzipped(path: Path) -> bytes:
    """The same tar archive, gzipped again with another timestamp: other bytes, the same members."""
    return gzip.compress(gzip.decompress(path.read_bytes()), mtime=12345)


def test_a_blob_changed_after_the_download_is_refused_and_no_build_claims_the_commit(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """The blob still holds a valid archive with the very images the config reads: only its hash tells."""
    fill_hub_cache(offline_hub, REPO, mmlb_hub_files)
    blob = (snapshot(offline_hub) / "2_vh_image.tar.gz").resolve()
    blob.write_bytes(regzipped(mmlb_hub_files["2_vh_image.tar.gz"]))
    out = tmp_path / "out"
    code, err = build_vh_single(capsys, out)
    found = hashlib.sha256(blob.read_bytes()).hexdigest()
    refused(
        code,
        err,
        out,
        f"2_vh_image.tar.gz: its blob's bytes do not hash to the blob's name (sha256 {found}, named {blob.name})",
        "was changed or damaged after the download; remove",
    )


@pytest.mark.parametrize("kind", ["sha256", "git"])
def test_a_blob_named_by_either_hash_is_verified_by_that_hash(tmp_path: Path, kind: str) -> None:
    data = b'{"a": 1}\n'
    plain = {"f.json"} if kind == "git" else set()
    snap = fill_hub_cache(tmp_path, "o/r", {"f.json": data}, plain=plain)
    blob = contract.verified_blob(snap, "f.json").path
    assert blob.name == (git_blob_hash(data) if kind == "git" else hashlib.sha256(data).hexdigest())
    blob.write_bytes(b'{"a": 2}\n')  # the same length: git's hash covers the bytes, not only the size
    with pytest.raises(contract.HubCacheError, match=r"f\.json: its blob's bytes do not hash to the blob's name"):
        contract.verified_blob(snap, "f.json")


def test_a_snapshot_file_linking_out_of_the_repo_cache_is_refused(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """Even to a file outside named by its own true sha256, which a name check alone would pass."""
    fill_hub_cache(offline_hub, REPO, mmlb_hub_files)
    data = mmlb_hub_files["2_vh_image.tar.gz"].read_bytes()
    elsewhere = tmp_path / "elsewhere" / "blobs" / hashlib.sha256(data).hexdigest()
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_bytes(data)
    link = snapshot(offline_hub) / "2_vh_image.tar.gz"
    link.unlink()
    link.symlink_to(elsewhere)
    out = tmp_path / "out"
    code, err = build_vh_single(capsys, out)
    refused(code, err, out, f"{link}: links out of the repo's cache (to {elsewhere}), not to a blob in")


def test_a_blob_that_is_itself_a_link_out_is_refused(tmp_path: Path) -> None:
    snap = fill_hub_cache(tmp_path / "hub", "o/r", {"f.bin": b"data"})
    blob = (snap / "f.bin").resolve()
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"data")
    blob.unlink()
    blob.symlink_to(outside)
    with pytest.raises(contract.HubCacheError, match=r"f\.bin: links out of the repo's cache"):
        contract.verified_blob(snap, "f.bin")


def test_a_snapshot_folder_linking_out_of_the_cache_is_refused(
    tmp_path: Path, offline_hub: Path, capsys: pytest.CaptureFixture
) -> None:
    """MMNeedle's `data/metadata_stitched.zip`, with the snapshot's `data/` a link to a folder elsewhere holding a
    link to the right blob: the folder is refused before anything under it is followed."""
    from tests.support.builder_fixtures import write_coco
    from tests.support.mmneedle_metadata import write_metadata_zip

    coco = write_coco(tmp_path / "coco", count=50)
    _, archive = write_metadata_zip(tmp_path)
    snap = fill_hub_cache(offline_hub, "Wang-ML-Lab/MMNeedle", {"data/metadata_stitched.zip": archive})
    elsewhere = tmp_path / "elsewhere"
    shutil.move(snap / "data", elsewhere)
    blob = snap.parent.parent / "blobs" / hashlib.sha256(archive.read_bytes()).hexdigest()
    (elsewhere / "metadata_stitched.zip").unlink()
    (elsewhere / "metadata_stitched.zip").symlink_to(blob)
    (snap / "data").symlink_to(elsewhere)
    out = tmp_path / "out"
    argv = ["--source", f"coco={coco}", "--configs", "m1_n2_k1", "--limit", "3", "--official-metadata"]
    code = cli.main(["build", "mmneedle", *argv, "hf://Wang-ML-Lab/MMNeedle", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert f"{snap / 'data'} is a link (to {elsewhere}), where the cache holds a folder" in err
    assert not (out / "mmneedle").exists()


def test_a_snapshot_file_that_is_no_link_is_refused(tmp_path: Path) -> None:
    snap = fill_hub_cache(tmp_path, "o/r", {"f.bin": b"data"})
    (snap / "f.bin").unlink()
    (snap / "f.bin").write_bytes(b"data")  # bytes with no name to check them against
    with pytest.raises(contract.HubCacheError, match=r"f\.bin: not a link into the repo's blobs/"):
        contract.verified_blob(snap, "f.bin")


def test_a_file_planted_in_the_snapshot_beside_the_fetched_ones_is_never_read(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """A release folder is read from its `mmlb_data/` before its text archive: planted in the snapshot, such a
    folder (never downloaded, never verified) would replace the release's rows. The build reads the verified
    files alone, and equals the build from a folder of exactly those files."""
    fill_hub_cache(offline_hub, REPO, mmlb_hub_files)
    planted = snapshot(offline_hub) / "mmlb_data" / "NIAH" / "vh_single_test_1000_K8_dep6.jsonl"
    planted.parent.mkdir(parents=True)
    planted.write_text(json.dumps({"id": "planted", "question": "?", "image_list": [], "answer": "x"}) + "\n")
    code, err = build_vh_single(capsys, tmp_path / "hub_out")
    assert code == 0, err
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, path in mmlb_hub_files.items():
        shutil.copy(path, folder / name)
    code, err = build_vh_single(capsys, tmp_path / "dir_out", str(folder))
    assert code == 0, err
    hub, local = (
        json.loads((tmp_path / o / "mmlongbench" / "build_manifest.json").read_text()) for o in ("hub_out", "dir_out")
    )
    assert hub["content_hash"] == local["content_hash"]


@pytest.mark.parametrize("bad", ["link", "garbage"])
def test_a_ref_that_is_a_link_or_holds_no_commit_is_one_line(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path], capsys: pytest.CaptureFixture, bad: str
) -> None:
    fill_hub_cache(offline_hub, REPO, mmlb_hub_files)
    ref = snapshot(offline_hub).parent.parent / "refs" / "main"
    ref.unlink()
    if bad == "link":
        target = tmp_path / "commit.txt"
        target.write_text(COMMIT)
        os.symlink(target, ref)
    else:
        ref.write_text("not a commit\n" * 1000)
    out = tmp_path / "out"
    code, err = build_vh_single(capsys, out)
    reason = (
        "a ref of the Hub cache that is not a plain file"
        if bad == "link"
        else "a ref of the Hub cache should hold a commit"
    )
    refused(code, err, out, f"hf://{REPO}@main: {ref}: {reason}")
