"""The shape of a build manifest (`build_manifest.json`, `builders.core.contract`), checked in full before the
harness trusts a field of it: a manifest that lacks a file's sha256, or holds `"files": "x"`, is a problem named
in one line, never a KeyError or TypeError later."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builders.core import contract

_SHA256 = re.compile(r"[0-9a-f]{64}")


class ManifestShapeError(ValueError):
    """What is wrong with a manifest, by the field's place in it (`configs.m1.files[0].sha256: ...`)."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_file(entry: Any, where: str) -> None:
    if not isinstance(entry, Mapping):
        raise ManifestShapeError(f"{where}: expected an object with path, num_bytes and sha256, got {entry!r:.60}")
    path = entry.get("path")
    if not isinstance(path, str) or not path:
        raise ManifestShapeError(f"{where}.path: expected a relative path, got {path!r:.60}")
    # Builders write each path normalised, with "/" only: anything else is not one of theirs.
    if contract.relative_path_problem(path, "build folder") or path != posixpath.normpath(path) or "\\" in path:
        raise ManifestShapeError(f"{where}.path: {path!r:.80} is not a path inside the build folder")
    if not isinstance(entry.get("sha256"), str) or not _SHA256.fullmatch(entry["sha256"]):
        raise ManifestShapeError(f"{where}.sha256: expected 64 lowercase hex digits, got {entry.get('sha256')!r:.80}")
    if not _count(entry.get("num_bytes")):
        raise ManifestShapeError(f"{where}.num_bytes: expected a byte count, got {entry.get('num_bytes')!r:.40}")


def _check_files_of(entry: Any, where: str) -> None:
    if not isinstance(entry, Mapping):
        raise ManifestShapeError(f"{where}: expected an object, got {entry!r:.60}")
    files = entry.get("files")
    if not isinstance(files, list) or not files:
        raise ManifestShapeError(f"{where}.files: expected a list of files, got {files!r:.60}")
    for i, file in enumerate(files):
        _check_file(file, f"{where}.files[{i}]")
    for key in ("rows", "num_bytes"):
        if key in entry and not _count(entry[key]):
            raise ManifestShapeError(f"{where}.{key}: expected a count, got {entry[key]!r:.40}")
    if "content_sha256" in entry and not isinstance(entry["content_sha256"], str):
        raise ManifestShapeError(f"{where}.content_sha256: expected a string")


def _check_optional(manifest: Mapping[str, Any]) -> None:
    """The fields the harness records or reads when they are present."""
    kinds = {
        "content_hash": str,
        "builder": str,
        "builder_version": str,
        "request": Mapping,
        "caveats": Mapping,
        "contract": Mapping,
        contract.BUILD_COMMAND: list,
    }
    for key, kind in kinds.items():
        if key in manifest and manifest[key] is not None and not isinstance(manifest[key], kind):
            raise ManifestShapeError(
                f"{key}: expected {'an object' if kind is Mapping else kind.__name__}, got {manifest[key]!r:.60}"
            )
    if not all(isinstance(v, str) for v in (manifest.get("caveats") or {}).values()):
        raise ManifestShapeError("caveats: expected text for each caveat")
    if not all(isinstance(v, str) for v in manifest.get(contract.BUILD_COMMAND) or []):
        raise ManifestShapeError(f"{contract.BUILD_COMMAND}: expected a list of strings")
    storage = (manifest.get("contract") or {}).get("image_storage", contract.EMBEDDED)
    if storage not in contract.IMAGE_STORAGES:
        raise ManifestShapeError(
            f"contract.image_storage: expected one of {', '.join(contract.IMAGE_STORAGES)}, got {storage!r:.40}"
        )


def check_manifest_shape(manifest: Any) -> None:
    """Raise `ManifestShapeError` naming the first field that is missing or of the wrong type."""
    if not isinstance(manifest, Mapping):
        raise ManifestShapeError(f"expected a JSON object, got {type(manifest).__name__}")
    _check_optional(manifest)
    configs = manifest.get("configs")
    if not isinstance(configs, Mapping) or not configs:
        raise ManifestShapeError(f"configs: expected an object naming each config, got {configs!r:.60}")
    for name, entry in configs.items():
        _check_files_of(entry, f"configs.{name}")
    table = manifest.get("image_table")
    if table is not None or contract.manifest_image_storage(manifest) == contract.SHARED:
        _check_files_of(table, "image_table")


def read_checked_manifest(folder: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the folder's manifest, None) when it has one of the right shape, else (None, what is wrong)."""
    try:
        manifest = contract.read_manifest(folder)
    except contract.ManifestError as err:
        return None, str(err)
    if manifest is None:
        return None, f"no build manifest ({contract.MANIFEST_NAME}), so nothing says what its files should hold"
    try:
        check_manifest_shape(manifest)
    except ManifestShapeError as err:
        return None, f"{Path(folder) / contract.MANIFEST_NAME}: {err}"
    return manifest, None
