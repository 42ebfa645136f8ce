"""Datasets on the Hugging Face Hub, read as local builds: `--data_dir hf://ORG/NAME@REVISION`.

A pushed build (`builders push`) is a Hub dataset repo laid out exactly like a local build folder. The
harness fetches what a task needs with `huggingface_hub.snapshot_download` (the manifest and card first,
then the task's config, and the image table of a shared-storage build), into the Hub cache, and reads the
snapshot folder like any local build: the same manifest checks, the same file verification. With
`HF_HUB_OFFLINE=1` a snapshot already in the cache is used as it is.

What verifying a Hub build proves: every file read has the sha256 and size that the manifest pushed with it
records, so nothing in the local Hub cache was damaged or changed after the download, and the rows scored
are the rows pushed. It does not prove who pushed them: the manifest comes from the same repo. Name a commit
(`@<40 hex digits>`), or a tag you trust, to pin what you read; the results record the commit. A Hub dataset
that is not one of our builds has no manifest and is refused unless the run passes `--trust_unverified_data`.

`hf://ORG/NAME[@REVISION]` serves the tasks whose `dataset_path` is NAME; `hf://ORG[@REVISION]` serves
every task from `ORG/<dataset_path>`. A task's own `metadata.hub_repo` / `hub_revision` are used when no
local build is found and no `--data_dir` was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from builders.core import contract

HUB_PREFIX = "hf://"


@dataclass(frozen=True)
class HubLocation:
    org: str
    name: str | None  # None: the repo is named after each task's dataset_path
    revision: str | None

    def repo_for(self, dataset_path: str) -> str:
        benchmark = Path(dataset_path).name
        if self.name is not None and self.name != benchmark:
            raise ValueError(f"{self}: holds dataset {self.name!r}, the task reads {benchmark!r}")
        return f"{self.org}/{self.name or benchmark}"

    def __str__(self) -> str:
        return f"{HUB_PREFIX}{self.org}{'/' + self.name if self.name else ''}{'@' + self.revision if self.revision else ''}"


def parse_hub_location(text: str | Path | None) -> HubLocation | None:
    """`hf://ORG[/NAME][@REVISION]` -> its parts; anything else -> None (a local folder)."""
    if text is None or not str(text).startswith(HUB_PREFIX):
        return None
    body = str(text)[len(HUB_PREFIX) :]
    path, _, revision = body.partition("@")
    parts = [p for p in path.split("/") if p]
    if not 1 <= len(parts) <= 2 or (revision == "" and "@" in body):
        raise ValueError(f"{text!r}: expected hf://ORG/NAME@REVISION (or hf://ORG[@REVISION])")
    return HubLocation(parts[0], parts[1] if len(parts) == 2 else None, revision or None)


def fetch_build(repo: str, revision: str | None, config: str | None) -> Path:
    """The snapshot folder of `repo` at `revision` holding the manifest, the card, `config` and (for a
    shared-storage build) the image table; errors are huggingface_hub's, for the caller to word."""
    from huggingface_hub import snapshot_download

    meta = [contract.MANIFEST_NAME, "README.md"]
    folder = Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=meta))
    try:
        manifest = contract.read_manifest(folder)
    except contract.ManifestError:  # the harness names what is wrong with it once the files are here
        manifest = None
    if not isinstance(manifest, dict) or not config:  # not one of our builds: what `datasets` would read
        patterns = ["*"]
    else:
        patterns = [*meta, f"{config}/*"]
    if contract.manifest_image_storage(manifest) == contract.SHARED:
        patterns.append(f"{contract.IMAGE_TABLE_CONFIG}/*")
    return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=patterns))


def snapshot_commit(folder: Path) -> str | None:
    """The commit a snapshot folder holds (`.../snapshots/<commit>`), or None for another folder."""
    return folder.name if folder.parent.name == "snapshots" and len(folder.name) == 40 else None
