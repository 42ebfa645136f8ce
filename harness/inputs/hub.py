"""Datasets on the Hugging Face Hub, read as local builds: `--data_dir hf://ORG/NAME@REVISION`.

A pushed build (`builders push`) is a Hub dataset repo laid out exactly like a local build folder. The
harness fetches what a task needs with `huggingface_hub.snapshot_download` (the manifest and card first,
then the task's config, and the image table of a shared-storage build), into the Hub cache, and reads the
snapshot folder like any local build: the same manifest checks, the same file verification. With
`HF_HUB_OFFLINE=1` a snapshot already in the cache is used as it is.

What verifying a Hub build proves: the manifest and the card are the blobs the Hub named (each a link into the
repo's own cache whose bytes hash to its name, `contract.verified_blob`, as the builders check their Hub sources),
and every data file read has the sha256 and size that manifest records, so nothing in the local Hub cache was
damaged or changed after the download, and the rows scored are the rows pushed. It does not prove who pushed them: the manifest comes from the same repo. Name a commit
(`@<40 hex digits>`), or a tag you trust, to pin what you read; the results record the commit. A Hub dataset
that is not one of our builds has no manifest and is refused unless the run passes `--trust_unverified_data`.

`hf://ORG/NAME[@REVISION]` serves the tasks whose `dataset_path` is NAME; `hf://ORG[@REVISION]` serves
every task from `ORG/<dataset_path>`. A task's own `metadata.hub_repo` / `hub_revision` are used when no
local build is found and no `--data_dir` was given.
"""

from __future__ import annotations

import os
from pathlib import Path

from builders.core import contract


def fetch_build(repo: str, revision: str | None, config: str | None) -> Path:
    """The snapshot folder of `repo` at `revision` holding the manifest, the card, `config` and (for a
    shared-storage build) the image table; errors are huggingface_hub's, for the caller to word."""
    from huggingface_hub import snapshot_download

    meta = [contract.MANIFEST_NAME, "README.md"]
    folder = _verified(Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=meta)), meta)
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
    return _verified(
        Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=patterns)), meta
    )


def _verified(folder: Path, names: list[str]) -> Path:
    """`folder` once each of `names` it holds is known to be the blob the Hub named (`contract.verified_blob`; a
    `contract.HubCacheError` otherwise): the data files are verified against the manifest, so it is checked first."""
    if snapshot_commit(folder):
        for name in names:
            if os.path.lexists(folder / name):
                contract.verified_blob(folder, name)
    return folder


def snapshot_commit(folder: Path) -> str | None:
    """The commit a snapshot folder holds (`.../snapshots/<commit>`), or None for another folder."""
    return folder.name if folder.parent.name == "snapshots" and len(folder.name) == 40 else None


LOCAL_DATA_DIR = "data"  # where the hints for a Hub build that cannot be had build it instead


def why_unavailable(repo: str, revision: str | None, err: BaseException) -> str:
    """Why `snapshot_download` could not give `repo` at `revision`, in words a user can act on."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(err, contract.HubCacheError):
        return str(err)
    if isinstance(err, LocalEntryNotFoundError | OSError) and constants.HF_HUB_OFFLINE:
        return (
            "the local Hub cache does not hold it and HF_HUB_OFFLINE=1 forbids downloading it (unset "
            "HF_HUB_OFFLINE on a machine with network to download it once)"
        )
    if isinstance(err, LocalEntryNotFoundError):
        return (
            "the Hub cannot be reached (no network?) and the local Hub cache does not hold it (download it once "
            "where there is network, or set HF_HUB_OFFLINE=1 to use a cached copy)"
        )
    if isinstance(err, GatedRepoError):
        return f"{repo} is gated: accept its terms on the Hub, then log in (`hf auth login`) or set HF_TOKEN"
    if isinstance(err, RevisionNotFoundError):
        return f"{repo} has no revision {revision!r} (a tag, branch or commit)"
    if isinstance(err, RepositoryNotFoundError):
        return (
            f"there is no dataset repo {repo} on the Hub, or it is private (log in with `hf auth login` or set "
            "HF_TOKEN)"
        )
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def looks_like_repo_id(data_dir: str | Path) -> bool:
    """`ORG/NAME` that is no folder here, not even in part: most likely a Hub repo id written without `hf://`."""
    text = str(data_dir)
    parts = text.split("/")
    return (
        len(parts) == 2
        and all(parts)
        and not text.startswith((".", "~"))
        and not Path(text).exists()
        and not Path(parts[0]).exists()
    )
