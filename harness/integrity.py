"""Verify what the harness reads: a build's data files against its manifest, an image's bytes against
the hash its row declares.

Each Parquet file a task reads is hashed once and compared with the sha256 its build's manifest records;
the result is remembered by the file's path, size and modification time (in the datasets cache folder),
so a file is hashed again only after it changed. A file that differs stops the run, naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from builders.core import contract
from harness.errors import UserError

_LOCK = threading.Lock()


class ImageIntegrityError(ValueError):
    """An image whose bytes do not hash to the sha256 its row declares (its sample is `invalid_input`)."""


def check_image_bytes(data: bytes, declared: str) -> bytes:
    actual = hashlib.sha256(data).hexdigest()
    if actual != declared:
        raise ImageIntegrityError(f"image {declared[:12]}: its bytes hash to {actual[:12]}, not to the sha256 its "
                                  "row declares (the data changed after it was built)")
    return data



def _cache_path() -> Path:
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / "mmlongeval_verified.json"


def _stat_key(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def _load_cache(cache: Path) -> dict[str, str]:
    try:
        value = json.loads(cache.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _save_cache(cache: Path, entries: Mapping[str, str]) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, sort_keys=True))
    tmp.replace(cache)


def build_files(manifest: Mapping[str, Any], configs: Iterable[str]) -> list[dict[str, Any]]:
    """The manifest's file entries of the given configs, and of the image table of a shared-storage build."""
    files: list[dict[str, Any]] = []
    for name in configs:
        info = manifest.get("configs", {}).get(name)
        if isinstance(info, Mapping):
            files += list(info.get("files", []))
    if contract.manifest_image_storage(manifest) == contract.SHARED:
        files += list((manifest.get("image_table") or {}).get("files", []))
    return files


def verify_build(folder: Path, manifest: Mapping[str, Any], configs: Iterable[str]) -> list[dict[str, str]]:
    """Check every file of `configs` against the manifest; return what was verified (path, sha256)."""
    cache_path = _cache_path()
    with _LOCK:
        cache = _load_cache(cache_path)
        changed = False
        verified = []
        for entry in build_files(manifest, configs):
            path = folder / entry["path"]
            if not path.is_file():
                raise UserError(f"{path}: missing; the build manifest {folder / contract.MANIFEST_NAME} lists it")
            key = _stat_key(path)
            actual = cache.get(key)
            if actual is None:
                actual = contract.file_sha256(path)
                cache[key], changed = actual, True
            if actual != entry["sha256"]:
                raise UserError(f"{path}: sha256 {actual[:16]}... does not match the build manifest's "
                                f"{entry['sha256'][:16]}...: the file changed after the build; rebuild it or restore it")
            verified.append({"path": entry["path"], "sha256": actual})
        if changed:
            _save_cache(cache_path, cache)
    return verified
