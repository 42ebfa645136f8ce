"""An official release on the Hugging Face Hub as a build's source: `--source hf://ORG/NAME[@REVISION]`.

A benchmark names its release (`HubRelease`: the repo, the revision we pin, why) and, per build, the files the
asked configs read (`HubFile`s, each under the names the release has published it as). `fetch_release` lists
the repo at that revision, picks each file's name, downloads only those files with `huggingface_hub`
(resumable, into the Hub cache, `HF_HUB_OFFLINE=1` honoured: then only the cache is read), verifies each before a
byte of it is used (a link into the repo's own `blobs/`, through no other link, to a blob whose bytes hash to its
name: `contract.verified_blob`; at the pinned revision, also the sha256 and size the release declares for it,
`HubRelease.files`), and returns a folder of the build's work folder holding links to the verified
blobs and nothing else, which the benchmark then reads exactly as a release folder: the same path containment,
bounded archive streaming and image checks. Whatever goes wrong on the way to the Hub (no route, DNS, a proxy,
401/403, a 404 for the revision or a file, a timeout, a download cut short) is one line naming the source, the
revision, why and what to do (`builders.core.hub_errors`); when only the network fails, the Hub cache stands in.

    release = fetch_release(parse_hub_source("hf://ZhaoweiWang/MMLongBench"), OFFICIAL, [TEXT, VH_IMAGES],
                            view=work / "hub")
    Release(release.folder, work)              # as from a folder
    inputs["hub"] = release.record()           # repo, revision, commit and files, for the manifest

A source that is not on the Hub (COCO, OK-VQA: their licences leave them on their own sites) is answered by
`not_on_hub`: where to get it and the folder layout `--source` expects.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from builders.core import contract
from builders.core.errors import BuildError
from builders.core.release_bounds import HUB_BLOB, Bound

HUB_PREFIX = contract.HUB_PREFIX
COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class PinnedFile:
    """What one file of a pinned revision holds: the sha256 and size the Hub publishes for it (its LFS pointer; the
    size None where only the file page's rounded figure could be read: the sha256 pins the bytes alone)."""

    sha256: str
    size: int | None


@dataclass(frozen=True)
class HubRelease:
    """A benchmark's official release on the Hub, the revision a build reads by default, and the bytes of that
    revision's files as the Hub publishes them (`files`: name -> `PinnedFile`), checked before a byte is used."""

    repo: str
    revision: str  # a commit where one could be found, else a branch (`pinned` False)
    note: str  # where the revision comes from, or why none is pinned (for the docs and `--help`)
    files: Mapping[str, PinnedFile] = field(default_factory=dict)

    @property
    def pinned(self) -> bool:
        return bool(COMMIT.match(self.revision))

    def check(self, repo: str, revision: str, name: str, blob: contract.VerifiedBlob) -> bool:
        """Whether the file `name` read at `revision` of `repo` is pinned to its bytes; a pinned file whose verified
        blob holds other bytes is a `BuildError` naming the file, both hashes and the revision."""
        pin = self.files.get(name) if (repo, revision) == (self.repo, self.revision) and self.pinned else None
        if pin is None:
            return False
        if blob.sha256 != pin.sha256 or pin.size not in (None, blob.size):
            size = f" ({pin.size:,} bytes)" if pin.size is not None else ""
            raise BuildError(
                f"hf://{repo}@{revision}: {name}: sha256 {blob.sha256} ({blob.size:,} bytes), but the pinned "
                f"revision's file is sha256 {pin.sha256}{size}: not the release's bytes; not read "
                "(remove the file from the Hub cache to download it again)"
            )
        return True


@dataclass(frozen=True)
class HubFile:
    """One file a build reads, under every name the release has published it as (the first present wins), and the
    most bytes it may hold (`release_bounds`), checked before a byte of it is hashed."""

    names: tuple[str, ...]
    what: str  # for messages: "the text files", "the VRAG images", ...
    most: Bound = HUB_BLOB


@dataclass(frozen=True)
class FetchedRelease:
    """The snapshot folder holding the files fetched, and what the manifest records of them."""

    folder: Path
    repo: str
    revision: str
    commit: str
    files: tuple[str, ...]
    blobs: tuple[contract.VerifiedBlob, ...] = ()  # one per file, in the same order

    def record(self) -> contract.HubRecord:
        """What the manifest records (`contract.HubRecord`): the commit, and beside it each file's blob (its sha256,
        size and name in the cache), so a build shows which bytes it read, not only which commit."""
        return {
            "repo": self.repo,
            "revision": self.revision,
            "commit": self.commit,
            "files": list(self.files),
            "blobs": {name: blob.record() for name, blob in zip(self.files, self.blobs, strict=True)},
        }


def is_hub_source(text: str | os.PathLike[str] | None) -> bool:
    return text is not None and str(text).startswith(HUB_PREFIX)


def parse_hub_source(text: str) -> contract.HubLocation:
    """`hf://ORG/NAME[@REVISION]` -> its parts; any other shape is a `BuildError` saying the expected one."""
    try:
        location = contract.parse_hub_location(text)
    except ValueError:
        location = None
    if location is None or location.name is None:
        raise BuildError(f"--source {text!r}: expected hf://ORG/NAME or hf://ORG/NAME@REVISION (a Hub dataset repo)")
    return location


def not_on_hub(source: str, value: str, where: str, layout: str) -> BuildError:
    """The error for `NAME=hf://...` where NAME's data is not on the Hub: where to get it, the layout expected."""
    return BuildError(
        f"--source {source}={value}: {source} is not published on the Hugging Face Hub by its authors "
        f"(its terms keep it on their site); download it from {where} and pass --source {source}=DIR, "
        f"where DIR holds {layout}"
    )


def fetch_release(
    location: contract.HubLocation,
    official: HubRelease,
    wanted: Sequence[HubFile],
    *,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    view: Path | None = None,
) -> FetchedRelease:
    """Download the `wanted` files of `location` (the official release's pinned revision unless the location
    names one) into the Hub cache, verify each (`contract.verified_blob`: a link into the repo's own blobs/, of the
    size the Hub lists and at most its `HubFile.most`, whose bytes hash to its name), and return the folder holding
    them: `view` when given (made there, holding a link to each verified blob and nothing else, so that a reader
    looking for other names finds none), else the snapshot. Every name of a verified file is read through
    `contract.open_regular` from the descriptor that was hashed (pinned until the build's work folder goes)."""
    repo = f"{location.org}/{location.name}"
    revision = location.revision or (official.revision if repo == official.repo else "main")
    commit, listed = _listing(repo, revision, cache_dir)
    chosen = {_choose(file, listed, repo, commit): file for file in wanted}
    snapshot = _cache_root(repo, cache_dir) / "snapshots" / commit
    blobs = {}
    unpinned = []
    for name, file in chosen.items():
        _download(repo, revision, name, commit, cache_dir, progress)
        try:
            blobs[name] = contract.verified_blob(snapshot, name, most=file.most.most, size=listed.get(name))
        except contract.HubCacheError as exc:
            raise BuildError(f"hf://{repo}@{commit[:12]}: {exc}") from None
        if not official.check(repo, revision, name, blobs[name]):
            unpinned.append(name)
    if unpinned and progress:
        pin = f"the pinned revision is {official.revision}" if official.pinned else "no revision is pinned"
        print(
            f"hub: hf://{repo}@{revision}: {', '.join(unpinned)} not pinned to their bytes ({pin}); the manifest "
            "records the sha256 of each file read",
            file=sys.stderr,
        )
    folder = snapshot
    if view is not None:
        folder = Path(view)
        for name, blob in blobs.items():
            link = folder / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(blob.path)
            contract.pin_name(link, blob.path)
    return FetchedRelease(folder, repo, revision, commit, tuple(blobs), tuple(blobs.values()))


# ------------------------------------------------------------------------------------------ the parts


def hub_or_folder(
    source: str,
    official: HubRelease,
    wanted: Sequence[HubFile],
    inputs: MutableMapping[str, object],
    *,
    progress: bool,
    view: Path,
) -> str:
    """The folder a build reads `source` from: an `hf://` source fetched and verified into `view` (its record put in
    `inputs["hub"]`, for the manifest); any other source as given."""
    if not is_hub_source(source):
        return source
    fetched = fetch_release(parse_hub_source(source), official, wanted, progress=progress, view=view)
    inputs["hub"] = fetched.record()
    return str(fetched.folder)


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _cache_root(repo: str, cache_dir: str | Path | None) -> Path:
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    return Path(cache_dir or constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo, repo_type="dataset")


def _listing(repo: str, revision: str, cache_dir: str | Path | None) -> tuple[str, dict[str, int | None]]:
    """(commit, the repo's file names -> the size the Hub lists, None where unknown) at `revision`: from the Hub, or,
    offline or when the Hub cannot be heard from (no route, DNS, proxy, timeout, a 5xx), from the Hub cache (then
    only the files already downloaded are known, their sizes not). What the Hub answers (gated, private, no such
    repo or revision) is final: one line saying so."""
    if not _offline():
        from huggingface_hub import HfApi, constants

        from builders.core.hub_errors import HUB_FAILURES, hub_failure, is_network_failure

        try:
            info = HfApi().dataset_info(
                repo, revision=revision, timeout=constants.HF_HUB_ETAG_TIMEOUT, files_metadata=True
            )
        except HUB_FAILURES as exc:
            cached = _cached_listing(repo, revision, cache_dir) if is_network_failure(exc) else None
            if cached is None:
                raise hub_failure(repo, revision, exc, "listing the repo") from None
            return cached
        assert info.sha is not None
        return info.sha, {s.rfilename: s.size for s in info.siblings or []}
    cached = _cached_listing(repo, revision, cache_dir)
    if cached is None:
        raise BuildError(
            f"hf://{repo}@{revision} is not in the Hub cache ({_cache_root(repo, cache_dir)}) and "
            "HF_HUB_OFFLINE=1 forbids downloading it: unset HF_HUB_OFFLINE on a machine with network "
            "to download it once"
        )
    return cached


def _cached_listing(repo: str, revision: str, cache_dir: str | Path | None) -> tuple[str, dict[str, int | None]] | None:
    """The Hub cache's snapshot of `repo` at `revision` (a commit, or a ref the cache recorded), as
    `huggingface_hub` lays it out: `refs/<revision>` holds the commit, `snapshots/<commit>/` the files (listed
    without following a link; each file read is verified when it is fetched)."""
    root = _cache_root(repo, cache_dir)
    try:
        commit = revision if COMMIT.match(revision) else contract.read_ref(root, revision)
    except contract.HubCacheError as exc:
        raise BuildError(f"hf://{repo}@{revision}: {exc}") from None
    if commit is None:
        return None
    snapshot = root / "snapshots" / commit
    if snapshot.is_symlink() or not snapshot.is_dir():
        return None
    names: dict[str, int | None] = {}
    for folder, _, files in os.walk(snapshot):  # links to folders are not walked into
        names.update({Path(folder, file).relative_to(snapshot).as_posix(): None for file in files})
    return commit, names


def _choose(file: HubFile, listed: dict[str, int | None], repo: str, commit: str) -> str:
    for name in file.names:
        if name in listed:
            return name
    if _offline():
        return file.names[0]  # not downloaded yet: `_download` says how to get it
    raise BuildError(
        f"hf://{repo}@{commit[:12]} has no file {' or '.join(file.names)} ({file.what}): the release's "
        "layout changed; download it and pass --source DIR, or name a revision that has it "
        "(hf://ORG/NAME@REVISION)"
    )


def _download(repo: str, revision: str, name: str, commit: str, cache_dir: str | Path | None, progress: bool) -> None:
    """One file into the Hub cache (a partial download resumes); any failure is one line naming the source, the
    revision and commit, the file, and what to do."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    from builders.core.hub_errors import HUB_FAILURES, hub_failure

    if progress and not _offline():
        print(f"hub: hf://{repo}@{commit[:12]}: {name}", file=sys.stderr)
    try:
        with _hub_output(progress):
            hf_hub_download(repo, name, repo_type="dataset", revision=commit, cache_dir=cache_dir)
    except LocalEntryNotFoundError as exc:
        if not _offline():
            raise hub_failure(repo, revision, exc, f"downloading {name} (commit {commit[:12]})") from None
        raise BuildError(
            f"hf://{repo}@{commit[:12]}: {name} is not in the Hub cache and HF_HUB_OFFLINE=1 forbids downloading "
            f"it; download it once with `hf download {repo} {name} --repo-type dataset --revision {commit}`"
        ) from None
    except HUB_FAILURES as exc:
        raise hub_failure(repo, revision, exc, f"downloading {name} (commit {commit[:12]})") from None


@contextmanager
def _hub_output(progress: bool) -> Iterator[None]:
    """`huggingface_hub` quiet but for errors (its retry warnings are not ours to print: the one line says what
    failed), and without its progress bars unless `progress`."""
    import logging

    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from huggingface_hub.utils import logging as hub_logging

    logger = hub_logging.get_logger()
    level, bars_off = logger.level, are_progress_bars_disabled()
    logger.setLevel(max(level, logging.ERROR))
    if not progress:
        disable_progress_bars()
    try:
        yield
    finally:
        logger.setLevel(level)
        if not progress and not bars_off:
            enable_progress_bars()
