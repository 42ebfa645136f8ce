"""A file of a local Hugging Face Hub cache, checked before a byte of it is used.

`huggingface_hub` lays out a repo's cache as

    CACHE/datasets--ORG--NAME/blobs/<etag>                 the bytes, named by their hash
    CACHE/datasets--ORG--NAME/snapshots/<commit>/<path>    a link to ../../blobs/<etag> (relative where it can)
    CACHE/datasets--ORG--NAME/refs/<branch or tag>         the commit it pointed at when last asked

where the etag of a file stored with LFS (or Xet) is the sha256 of its bytes (64 hex digits), and of any other
file git's blob hash, `sha1(b"blob <size>\\0" + bytes)` (40 hex digits). A cache is a folder on disk that anyone
with access to it may have changed, or a disk may have damaged, so nothing in it is trusted as found:
`verified_blob` follows a snapshot file only as a link into the repo's own `blobs/`, through folders that are
no links, checks its size (against the bound its reader gives, and the size the Hub listed) before a byte is
hashed, hashes the blob against its name through the descriptor it opened (without blocking: a FIFO planted as a
blob is refused at once) and keeps that descriptor pinned (`regular_files.pin`), so the bytes later read under any
of its names are the bytes hashed, whatever is renamed over the blob meanwhile; `read_ref` reads a ref only as a
commit. Each refusal is a `HubCacheError`, one line naming the file and what to do.

The repo's folder itself may be a link (a cache kept on another disk): it is resolved once and is the bound.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from builders.core.contract.manifest_schema import HubBlob
from builders.core.contract.regular_files import NotRegularFile, open_descriptor, pin, size_text

SHA256 = re.compile(r"^[0-9a-f]{64}$")
GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")
COMMIT = GIT_SHA1
_BLOCK = 8 * 1024 * 1024


class HubCacheError(ValueError):
    """A Hub cache file that cannot be trusted: the message names it and says what to do."""


def _redownload(repo_folder: Path) -> str:
    return f"remove {repo_folder} (or the file) and download it again"


@dataclass(frozen=True)
class VerifiedBlob:
    """A blob whose bytes hash to its name, pinned (`regular_files.pin`): opened by any of its names, it is read from
    the descriptor that was hashed. `sha256` is of its bytes whatever the kind of its name (the manifest's record)."""

    path: Path
    etag: str
    sha256: str
    size: int

    def record(self) -> HubBlob:
        """What a build manifest records of it (`manifest_schema.HubBlob`)."""
        return {"sha256": self.sha256, "num_bytes": self.size, "etag": self.etag}


def verified_blob(snapshot: Path, name: str, *, most: int | None = None, size: int | None = None) -> VerifiedBlob:
    """The blob that `snapshot/name` (`.../snapshots/<commit>/<name>`) links to, once it is known to be a regular
    file of this repo's `blobs/` whose bytes hash to its name; `HubCacheError` naming the file otherwise. Its size is
    checked before a byte is hashed: at most `most`, exactly `size` when the Hub listed one. The blob is hashed
    through the descriptor it was opened with, which is then pinned under the snapshot's name and the blob's, so
    the bytes a build reads are the bytes hashed."""
    snapshot = Path(snapshot)
    repo = snapshot.parent.parent
    where = f"{snapshot / name}"
    if snapshot.parent.name != "snapshots" or not COMMIT.match(snapshot.name):
        raise HubCacheError(f"{where}: not inside a Hub cache's snapshots/<commit>/ folder")
    parts = [p for p in name.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts) or "\\" in name or "\0" in name:
        raise HubCacheError(f"{where}: {name!r} is not a file name inside the snapshot")
    root = os.path.realpath(repo)
    # Every folder between the repo and the file is a folder of the cache, never a link leading elsewhere.
    current = root
    for part in ["snapshots", snapshot.name, *parts[:-1]]:
        current = os.path.join(current, part)
        mode = _lstat_mode(current, where)
        if stat.S_ISLNK(mode):
            raise HubCacheError(
                f"{where}: {current} is a link (to {os.path.realpath(current)}), where the cache holds a folder; "
                f"{_redownload(repo)}"
            )
        if not stat.S_ISDIR(mode):
            raise HubCacheError(f"{where}: {current} is not a folder; {_redownload(repo)}")
    link = os.path.join(current, parts[-1])
    if not stat.S_ISLNK(_lstat_mode(link, where)):
        raise HubCacheError(
            f"{where}: not a link into the repo's blobs/ as huggingface_hub lays out a cache; {_redownload(repo)}"
        )
    blob = os.path.realpath(link)
    blobs = os.path.join(root, "blobs")
    etag = os.path.basename(blob)
    if os.path.dirname(blob) != blobs or not (SHA256.match(etag) or GIT_SHA1.match(etag)):
        raise HubCacheError(
            f"{where}: links out of the repo's cache (to {blob}), not to a blob in {blobs}; {_redownload(repo)}"
        )
    descriptor = _open_blob(blob, where, repo)
    try:
        held = os.fstat(descriptor).st_size
        if size is not None and held != size:
            raise HubCacheError(
                f"{where}: its blob holds {held:,} bytes where the Hub lists {size:,}: the cache was changed or "
                f"damaged after the download, or the download was cut short; not hashed; {_redownload(repo)}"
            )
        if most is not None and held > most:
            raise HubCacheError(
                f"{where}: its blob holds {held:,} bytes, over the {size_text(most)} that this file of the release "
                f"can hold; not hashed (a cache that holds this is damaged or hostile); {_redownload(repo)}"
            )
        found, sha256 = _hash_descriptor(descriptor, etag, held)
        if found != etag:
            kind = "sha256" if SHA256.match(etag) else "git blob hash"
            raise HubCacheError(
                f"{where}: its blob's bytes do not hash to the blob's name ({kind} {found}, named {etag}): the "
                f"cache was changed or damaged after the download; {_redownload(repo)}"
            )
    except BaseException:
        os.close(descriptor)
        raise
    pin(descriptor, [snapshot / name, link, blob])
    return VerifiedBlob(Path(blob), etag, sha256, held)


def read_ref(repo: Path, revision: str) -> str | None:
    """The commit `refs/<revision>` of a repo's cache holds, or None when there is no such ref; a ref that is a
    link, is not a file inside `refs/`, or holds anything but a commit is a `HubCacheError`."""
    parts = [p for p in revision.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts) or "\0" in revision:
        return None  # no ref can have this name (the Hub's revision check says so when asked)
    path = Path(repo, "refs", *parts)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if not stat.S_ISREG(mode):
        raise HubCacheError(f"{path}: a ref of the Hub cache that is not a plain file; {_redownload(Path(repo))}")
    try:
        descriptor = open_descriptor(path, follow=False)
    except OSError as exc:  # a FIFO or a link put there since the lstat: never waited on, never followed
        raise HubCacheError(f"{path}: a ref of the Hub cache that is not a plain file ({exc.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        text = handle.read(128).decode("ascii", errors="replace").strip()
    if not COMMIT.match(text):
        raise HubCacheError(f"{path}: a ref of the Hub cache should hold a commit; {_redownload(Path(repo))}")
    return text


def _lstat_mode(path: str, where: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError as exc:
        raise HubCacheError(f"{where}: not in the Hub cache ({exc.strerror}: {path})") from None


def _open_blob(blob: str, where: str, repo: Path) -> int:
    """The blob opened without following a link or blocking, once it is known to be a regular file."""
    try:
        return open_descriptor(blob, follow=False)
    except NotRegularFile as exc:
        raise HubCacheError(f"{where}: its blob {blob} is {exc.strerror}; {_redownload(repo)}") from None
    except OSError as exc:
        raise HubCacheError(f"{where}: its blob cannot be read ({exc.strerror}: {blob})") from None


def _hash_descriptor(descriptor: int, etag: str, size: int) -> tuple[str, str]:
    """(the hash the etag's kind names, the sha256) of the blob's bytes, read once through its descriptor: sha256
    for a 64-digit name, git's blob hash for a 40-digit one (whose header is the size `fstat` gave before reading;
    bytes that grow or shrink meanwhile change the hash)."""
    sha256 = hashlib.sha256()
    git = None if SHA256.match(etag) else hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
    offset = 0
    while block := os.pread(descriptor, _BLOCK, offset):
        offset += len(block)
        sha256.update(block)
        if git is not None:
            git.update(block)
    return (git.hexdigest() if git is not None else sha256.hexdigest()), sha256.hexdigest()
