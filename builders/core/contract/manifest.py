"""The build manifest (`build_manifest.json`): what a built folder holds, per config its rows, files (path, bytes,
sha256) and content hash; the build's content hash; the image storage and token rule its rows follow. A folder with
a manifest is complete."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from builders.core.contract.json_numbers import TooManyDigits, loads_json
from builders.core.contract.manifest_schema import (
    MANIFEST_FORMAT,
    BuildManifest,
    ManifestFile,
    is_build_manifest,
    manifest_problem,
)
from builders.core.contract.regular_files import MiB, open_regular, read_regular
from builders.core.contract.schema import EMBEDDED, IMAGE_TABLE_CONFIG, IMAGES

MANIFEST_NAME = "build_manifest.json"
# The most bytes a manifest may hold: one lists each data file in a line or two (the full MMLongBench build, the
# largest, some thousand files: under 1 MB).
MANIFEST_MOST = 64 * MiB
# The argv of `builders build NAME ...` that reproduces a build, without --configs, --out, --overwrite
# and --quiet (absent for a build made through the Python API): how to add configs to it.
BUILD_COMMAND = "build_command"


def row_digest(row: Mapping[str, Any]) -> bytes:
    """A row's identity for its config's `content_sha256` (the sha256 of its rows' digests, in the order written):
    every column, embedded images by their path only (their bytes are already hashed in `image_sha256`)."""
    view = dict(row)
    if IMAGES in view:
        view[IMAGES] = [image["path"] for image in row[IMAGES]]
    return json.dumps(view, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n"


class ManifestError(ValueError):
    """A manifest that cannot be read or is not one of this project's; the message names the file."""


def read_manifest(folder: str | Path) -> BuildManifest | None:
    """The folder's manifest, or None when it has none (an incomplete build, or not a build); a `ManifestError` naming
    the file (and the field) when it cannot be read or is not of the declared shape (`manifest_schema`)."""
    path = Path(folder) / MANIFEST_NAME
    try:
        # Without blocking, a regular file only, within its bound; a verified Hub blob from the descriptor hashed.
        data = read_regular(path, MANIFEST_MOST, "a build manifest")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ManifestError(f"unreadable build manifest {path}: {exc.strerror or exc}") from None
    try:
        manifest = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, TooManyDigits, RecursionError) as exc:
        raise ManifestError(f"unreadable build manifest {path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{path} is not a build manifest of this project (format {MANIFEST_FORMAT})")
    if not is_build_manifest(manifest):
        raise ManifestError(f"{path}: {manifest_problem(manifest)}")
    return manifest


def read_checked_manifest(folder: str | Path) -> tuple[BuildManifest | None, str | None]:
    """(the folder's manifest, None) when it has one of the right shape (`manifest_schema`), else (None, what is
    wrong, in one line naming the file and the field)."""
    try:
        manifest = read_manifest(folder)
    except ManifestError as err:
        return None, str(err)
    if manifest is None:
        return None, f"no build manifest ({MANIFEST_NAME}), so nothing says what its files should hold"
    return manifest, None


def write_manifest(folder: str | Path, manifest: Mapping[str, object]) -> Path:
    path = Path(folder) / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def manifest_image_storage(manifest: Mapping[str, object] | None) -> str:
    """How a build stores its images (builds older than the field embed them)."""
    contract = (manifest or {}).get("contract")
    return str(contract.get("image_storage", EMBEDDED)) if isinstance(contract, Mapping) else EMBEDDED


def file_sha256(path: str | Path, copy_to: str | Path | None = None, chunk: int = 8 * 1024 * 1024) -> str:
    """The sha256 of a file, as the manifest lists it for each data file; `copy_to` also copies the file there
    on the way (one read for both)."""
    digest = hashlib.sha256()
    with open_regular(path) as reader, open(copy_to, "wb") if copy_to is not None else nullcontext() as writer:
        while block := reader.read(chunk):
            digest.update(block)
            if writer is not None:
                writer.write(block)
    return digest.hexdigest()


def split_files(folder: str | Path, config: str, split: str) -> list[str] | None:
    """The Parquet files of one config's split as the build manifest in `folder` lists them, or None when the
    folder has no manifest listing them (then read it through its card, `load_dataset(folder, config)`).

    Reading these with the `parquet` loader skips parsing the card's YAML, which `datasets` does on every
    `load_dataset(folder, ...)` call and which takes seconds once a build has a hundred configs.
    """
    path = Path(folder) / MANIFEST_NAME
    try:
        manifest = loads_json(read_regular(path, MANIFEST_MOST, "a build manifest").decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(manifest, dict):  # a manifest that lists nothing: the folder is read through its card
        return None
    configs = manifest.get("configs")
    if config == IMAGE_TABLE_CONFIG:
        entry = manifest.get("image_table")
    else:
        entry = configs.get(config) if isinstance(configs, dict) else None
    files = entry.get("files") if isinstance(entry, Mapping) else None
    if not isinstance(files, list):
        return None
    chosen = [
        str(Path(folder) / name)
        for f in files
        if isinstance(f, Mapping) and isinstance(name := f.get("path"), str) and Path(name).name.startswith(f"{split}-")
    ]
    return chosen or None


def data_files(manifest: Mapping[str, Any]) -> list[ManifestFile]:
    """Every data file a build consists of, configs then image table (of a manifest not checked yet, what it lists
    where a `BuildManifest` has them)."""
    files = [entry for _, info in sorted(manifest.get("configs", {}).items()) for entry in info.get("files", [])]
    table = manifest.get("image_table")
    if isinstance(table, Mapping):
        files += list(table.get("files", []))
    return files
