"""A release pinned to its bytes: at the pinned revision, each file whose sha256 and size the release declares
(`HubRelease.files`, from the Hub's LFS pointers) is checked once its blob is verified, before a byte of it is used;
a file that differs is one line naming it, both hashes and the revision. Another revision is said to be unpinned,
and the manifest records the sha256 of each file read."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from builders import cli
from builders.core.hub_source import PinnedFile
from builders.milebench.release import HUB_RELEASE
from tests.support.hub_cache import fill_hub_cache

REPO = "FreedomIntelligence/MileBench"
CONFIG = "action_localization"  # read from part 0


@pytest.fixture(scope="module")
def part0(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture release's part 0: not the release's bytes."""
    from builders.milebench.fixture import write_fixture

    root = write_fixture(tmp_path_factory.mktemp("milebench_pins") / "release", archives=True)
    return root / "MileBench_part0.tar.gz"


def build(out: Path, source: str, capsys: pytest.CaptureFixture, *flags: str) -> tuple[int, str]:
    code = cli.main(["build", "milebench", "--source", source, "--configs", CONFIG, "--out", str(out), *flags])
    return code, capsys.readouterr().err.strip()


def test_a_file_of_the_pinned_revision_with_other_bytes_is_one_line(
    tmp_path: Path, offline_hub: Path, part0: Path, capsys: pytest.CaptureFixture
) -> None:
    # The cache's part 0 hashes to its own name (a repointed link, an edited archive): only the pin can tell.
    fill_hub_cache(offline_hub, REPO, {"MileBench_part0.tar.gz": part0}, commit=HUB_RELEASE.revision)
    code, err = build(tmp_path / "out", f"hf://{REPO}", capsys, "--quiet")
    assert code == 2 and err.count("\n") == 0, err
    held = hashlib.sha256(part0.read_bytes()).hexdigest()
    pinned = HUB_RELEASE.files["MileBench_part0.tar.gz"].sha256
    assert err.startswith(f"builders: error: hf://{REPO}@{HUB_RELEASE.revision}: MileBench_part0.tar.gz: sha256 {held}")
    assert f"the pinned revision's file is sha256 {pinned} (3,974,906,269 bytes): not the release's bytes" in err
    assert not (tmp_path / "out" / "milebench" / "build_manifest.json").exists()


def test_the_pinned_bytes_build_and_another_revision_is_said_unpinned(
    tmp_path: Path, offline_hub: Path, part0: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = part0.read_bytes()
    pins = {"MileBench_part0.tar.gz": PinnedFile(hashlib.sha256(data).hexdigest(), len(data))}
    monkeypatch.setattr("builders.milebench.build.HUB_RELEASE", dataclasses.replace(HUB_RELEASE, files=pins))
    fill_hub_cache(offline_hub, REPO, {"MileBench_part0.tar.gz": part0}, commit=HUB_RELEASE.revision)
    code, err = build(tmp_path / "pinned", f"hf://{REPO}", capsys)
    assert code == 0 and "not pinned" not in err, err

    fill_hub_cache(offline_hub, REPO, {"MileBench_part0.tar.gz": part0}, revision="edited")
    code, err = build(tmp_path / "other", f"hf://{REPO}@edited", capsys)
    assert code == 0, err
    assert (
        f"hub: hf://{REPO}@edited: MileBench_part0.tar.gz not pinned to their bytes (the pinned revision is "
        f"{HUB_RELEASE.revision}); the manifest records the sha256 of each file read"
    ) in err.splitlines()
    record = json.loads((tmp_path / "other" / "milebench" / "build_manifest.json").read_text())["inputs"]["hub"]
    assert (
        record["revision"] == "edited"
        and record["blobs"]["MileBench_part0.tar.gz"]["sha256"] == pins["MileBench_part0.tar.gz"].sha256
    )


def test_mmstars_pinned_parquet_refuses_other_bytes_by_its_hash(
    tmp_path: Path, offline_hub: Path, capsys: pytest.CaptureFixture
) -> None:
    # Its pin has no exact size (the Hub's page rounds it): the sha256 alone refuses the fixture's file.
    from builders.locovqa.fixture import write_fixture
    from builders.locovqa.sources import HUB_SOURCES

    mmstar = HUB_SOURCES["mmstar"][0]
    parquet = write_fixture(tmp_path / "sources")["mmstar"]
    fill_hub_cache(offline_hub, mmstar.repo, {"mmstar.parquet": parquet}, commit=mmstar.revision)
    argv = ["build", "locovqa", "--source", "mmstar=hf://Lin-Chen/MMStar", "--configs", "mmstar_cmp_9"]
    code = cli.main([*argv, "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    held = hashlib.sha256(parquet.read_bytes()).hexdigest()
    assert code == 2 and err.count("\n") == 0, err
    assert err == (
        f"builders: error: hf://Lin-Chen/MMStar@{mmstar.revision}: mmstar.parquet: sha256 {held} "
        f"({parquet.stat().st_size:,} bytes), but the pinned revision's file is sha256 "
        f"{mmstar.files['mmstar.parquet'].sha256}: not the release's bytes; not read (remove the file from the Hub "
        "cache to download it again)"
    )
