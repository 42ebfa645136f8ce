"""The build manifest's shape (`build_manifest.json`), declared once: the builders write a `BuildManifest`
(`write_manifest` refuses one that is not), the harness checks a folder's manifest against the same declaration
before it trusts a field of it (`manifest_problem`): a manifest that lacks a file's sha256, or holds `"files": "x"`,
is one line naming the field, never a KeyError later.

A config's entry holds, beside its files, the benchmark's own fields (`file`, `file_sha256`, ...): a reader leaves
those alone.
"""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Any, Literal, NotRequired, TypedDict, TypeGuard, get_args

from builders.core.contract.json_shape import Rule, shape_problem
from builders.core.contract.paths import relative_path_problem
from builders.core.contract.schema import SHARED, ImageStorage

ManifestFormat = Literal["mmlongeval-build/1"]
MANIFEST_FORMAT: ManifestFormat = get_args(ManifestFormat)[0]
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")


def _outside(path: str) -> str | None:
    """Why a manifest's path is no path inside the build folder (builders write each normalised, "/" only)."""
    if relative_path_problem(path, "build folder") or path != posixpath.normpath(path) or "\\" in path:
        return f"{path!r:.80} is not a path inside the build folder"
    return None


Sha256 = Annotated[str, Rule("64 lowercase hex digits", test=lambda value: bool(_SHA256.fullmatch(value)))]
Count = Annotated[int, Rule("a count", test=lambda value: value >= 0)]
BuildPath = Annotated[str, Rule("a relative path", test=bool, problem=_outside)]


class ManifestFile(TypedDict):
    """One data file of a build."""

    path: BuildPath  # relative to the build folder
    num_bytes: Annotated[int, Rule("a byte count", test=lambda value: value >= 0)]
    sha256: Sha256


class ConfigFiles(TypedDict):
    """A config's (or the image table's) data files and what they hold."""

    files: Annotated[
        list[Annotated[ManifestFile, Rule("an object with path, num_bytes and sha256")]],
        Rule("a list of files", test=bool),
    ]
    rows: NotRequired[Count]
    num_bytes: NotRequired[Count]
    content_sha256: NotRequired[str]


class ImageTableEntry(ConfigFiles):
    """A shared-storage build's image table: each distinct image once (`IMAGE_TABLE_CONFIG`)."""

    config: str
    images: int


class ManifestContract(TypedDict, total=False):
    """What the rows follow: how they store their images, the token rule of their counts, the image marker."""

    image_storage: ImageStorage
    token_rule: str
    image_placeholder: str


class HubBlob(TypedDict):
    """A file a build read from a Hub release, as verified in the Hub cache: its sha256 (whatever its blob is named
    by), its size, and its blob's name (the etag: the sha256 for an LFS file, git's blob hash for another)."""

    sha256: Sha256
    num_bytes: Count
    etag: str


class HubRecord(TypedDict):
    """A Hub release a build read (`inputs.hub`, or `inputs.hub.<source>` for a build of several): the revision asked
    for, the commit it was, the files read and, beside the commit, each file's blob. Builds from before blobs were
    recorded lack `blobs`."""

    repo: str
    revision: str
    commit: Annotated[str, Rule("a commit (40 hex digits)", test=lambda value: bool(_COMMIT.fullmatch(value)))]
    files: list[str]
    blobs: NotRequired[dict[str, HubBlob]]


class ManifestInputs(TypedDict, total=False):
    """The sources a build read: the benchmark's own keys (`source`, fingerprints, ...), left to it, and `hub`."""

    hub: HubRecord | dict[str, HubRecord]


class BuildManifest(TypedDict):
    """What a built folder holds. Older builds lack the keys added since, so a reader requires only `format` and
    `configs`."""

    format: ManifestFormat
    benchmark: NotRequired[str]
    builder: NotRequired[str]  # the benchmark's module
    builder_version: NotRequired[str]
    content_hash: NotRequired[str]  # "sha256:..." of the configs' content hashes
    contract: NotRequired[ManifestContract]
    request: NotRequired[dict[str, Any]]  # what was asked for: the benchmark's options, its configs
    inputs: NotRequired[ManifestInputs]  # the sources' fingerprints
    caveats: NotRequired[dict[str, str]]  # synthetic, limited, ...: why the build is not the paper's data
    environment: NotRequired[dict[str, Any]]  # library versions of the latest step
    stats: NotRequired[dict[str, Any]]
    steps: NotRequired[list[dict[str, Any]]]  # one per build that wrote configs into the folder
    configs: Annotated[
        dict[str, Annotated[ConfigFiles, Rule("an object")]], Rule("an object naming each config", test=bool)
    ]
    build_command: NotRequired[list[str]]  # `contract.BUILD_COMMAND`
    image_table: NotRequired[ImageTableEntry]  # shared storage


def manifest_problem(manifest: object) -> str | None:
    """What keeps `manifest` (parsed JSON) from being a `BuildManifest`, in one line naming the field
    (`configs.m1.files[0].sha256: expected 64 lowercase hex digits, got None`), or None."""
    if not isinstance(manifest, dict):
        return f"expected a JSON object, got {type(manifest).__name__}"
    found = shape_problem(manifest, BuildManifest)
    if found is not None:
        where = f"{found.where}: " if found.where else ""
        return where + (found.said or f"expected {found.expected}, got {found.value!r:.80}")
    storage = (manifest.get("contract") or {}).get("image_storage")
    if storage == SHARED and "image_table" not in manifest:
        return "image_table: expected an object, got None"  # the image table a shared-storage build reads
    return None


def is_build_manifest(manifest: object) -> TypeGuard[BuildManifest]:
    return manifest_problem(manifest) is None
