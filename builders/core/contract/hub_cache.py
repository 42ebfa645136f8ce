"""A file of a local Hugging Face Hub cache, checked before a byte of it is used.

`huggingface_hub` lays out a repo's cache as

    CACHE/datasets--ORG--NAME/blobs/<etag>                 the bytes, named by their hash
    CACHE/datasets--ORG--NAME/snapshots/<commit>/<path>    a link to ../../blobs/<etag> (relative where it can)
    CACHE/datasets--ORG--NAME/refs/<branch or tag>         the commit it pointed at when last asked

where the etag of a file stored with LFS (or Xet) is the sha256 of its bytes (64 hex digits), and of any other
file git's blob hash, `sha1(b"blob <size>\\0" + bytes)` (40 hex digits). A cache is a folder on disk that anyone
with access to it may have changed, or a disk may have damaged, so nothing in it is trusted as found:
`verified_blob` follows a snapshot file only as a link into the repo's own `blobs/`, through folders that are
no links, and hashes the blob against its name; `read_ref` reads a ref only as a commit. Each refusal is a
`HubCacheError`, one line naming the file and what to do.

The repo's folder itself may be a link (a cache kept on another disk): it is resolved once and is the bound.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

SHA256 = re.compile(r"^[0-9a-f]{64}$")
GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")
COMMIT = GIT_SHA1
_BLOCK = 8 * 1024 * 1024


class HubCacheError(ValueError):
    """A Hub cache file that cannot be trusted: the message names it and says what to do."""


def _redownload(repo_folder: Path) -> str:
    return f"remove {repo_folder} (or the file) and download it again"


def verified_blob(snapshot: Path, name: str) -> Path:
    """The blob that `snapshot/name` (`.../snapshots/<commit>/<name>`) links to, once it is known to be a blob of
    this repo's cache whose bytes hash to its name; `HubCacheError` naming the file otherwise."""
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
    found = _hash_blob(blob, etag, where)
    if found != etag:
        kind = "sha256" if SHA256.match(etag) else "git blob hash"
        raise HubCacheError(
            f"{where}: its blob's bytes do not hash to the blob's name ({kind} {found}, named {etag}): the cache "
            f"was changed or damaged after the download; {_redownload(repo)}"
        )
    return Path(blob)


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
    with open(path, "rb") as handle:
        text = handle.read(128).decode("ascii", errors="replace").strip()
    if not COMMIT.match(text):
        raise HubCacheError(f"{path}: a ref of the Hub cache should hold a commit; {_redownload(Path(repo))}")
    return text


def _lstat_mode(path: str, where: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError as exc:
        raise HubCacheError(f"{where}: not in the Hub cache ({exc.strerror}: {path})") from None


def _hash_blob(blob: str, etag: str, where: str) -> str:
    """The blob's sha256 (for a 64-digit name) or git blob hash (40), read once through one descriptor that is
    known to be a regular file."""
    try:
        fd = os.open(blob, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise HubCacheError(f"{where}: its blob cannot be read ({exc.strerror}: {blob})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise HubCacheError(f"{where}: its blob {blob} is not a regular file")
        digest = hashlib.sha256() if SHA256.match(etag) else hashlib.sha1(usedforsecurity=False)
        if not SHA256.match(etag):
            digest.update(b"blob %d\0" % info.st_size)
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()
