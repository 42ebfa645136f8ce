"""A Hugging Face Hub cache written as `huggingface_hub` lays it out, for offline tests of `--source hf://...`:

CACHE/datasets--ORG--NAME/blobs/<etag>                   the bytes
CACHE/datasets--ORG--NAME/refs/<revision>                the commit the revision points at
CACHE/datasets--ORG--NAME/snapshots/<commit>/<file>      a relative link to ../../blobs/<etag>

where the etag is the sha256 of the bytes for a file the Hub keeps in LFS (the default here), and git's blob hash
for the others (`plain`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from pathlib import Path

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"
MMLONGBENCH_REPO = "ZhaoweiWang/MMLongBench"
VH_SINGLE_CONFIG = "niah_vh_single_8k"
VH_SINGLE_FILES = ("0_mmlb_data.tar.gz", "2_vh_image.tar.gz")  # the two files of the repo VH_SINGLE_CONFIG reads


def fill_hub_cache(
    cache: Path,
    repo: str,
    files: Mapping[str, Path | bytes],
    *,
    revision: str = "main",
    commit: str = COMMIT,
    plain: Collection[str] = (),
) -> Path:
    """Put `files` (name in the repo -> a file or its bytes) into the cache's snapshot of `repo` at `commit`, with
    `refs/<revision>` pointing at it; the blobs of the names in `plain` are named by git's blob hash (files kept
    out of LFS), the others by their sha256. Returns the snapshot folder."""
    root = cache / ("datasets--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / commit
    for name, content in files.items():
        data = content.read_bytes() if isinstance(content, Path) else content
        blob = root / "blobs" / (git_blob_hash(data) if name in plain else hashlib.sha256(data).hexdigest())
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(*[".."] * (len(Path(name).parts) + 1)) / "blobs" / blob.name)
    if not is_commit(revision):
        (root / "refs").mkdir(parents=True, exist_ok=True)
        (root / "refs" / revision).write_text(commit)
    return snapshot


def use_offline_hub_cache(monkeypatch: pytest.MonkeyPatch, cache: Path) -> Path:
    """Make `cache` (created empty if missing) the Hub cache `huggingface_hub` uses in this process, with
    HF_HUB_OFFLINE=1, for the rest of the test. Returns `cache`."""
    from huggingface_hub import constants

    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def mmlongbench_hub_files(folder: Path) -> dict[str, Path]:
    """The MMLongBench fixture release written under `folder`, as the Hub repo publishes it today (name in the repo
    -> file): `0_mmlb_data.tar.gz`, `1_vrag_image.tar.gz`, ..."""
    from builders.mmlongbench.fixture import write_fixture
    from builders.mmlongbench.leaves import IMAGE_ARCHIVES, TEXT_ARCHIVES

    root = write_fixture(folder / "release", archives=True)
    files = {TEXT_ARCHIVES[0]: root / TEXT_ARCHIVES[1]}
    files |= {hub: root / old for hub, old in IMAGE_ARCHIVES.values() if (root / old).is_file()}
    return files


def build_vh_single(
    capsys: pytest.CaptureFixture, out: Path, source: str = f"hf://{MMLONGBENCH_REPO}"
) -> tuple[int, str]:
    """`builders build mmlongbench --source SOURCE --configs niah_vh_single_8k --out OUT --quiet`, in this process:
    its exit code and its stderr, stripped."""
    from builders import cli

    argv = ["build", "mmlongbench", "--source", source, "--configs", VH_SINGLE_CONFIG, "--out", str(out), "--quiet"]
    code = cli.main(argv)
    return code, capsys.readouterr().err.strip()


def git_blob_hash(data: bytes) -> str:
    """What `git hash-object` prints for `data`: the name the Hub gives a file kept out of LFS."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_commit(text: str) -> bool:
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text)
