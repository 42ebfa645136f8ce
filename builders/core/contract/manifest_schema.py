"""The build manifest's shape (`build_manifest.json`), declared once: the builders write a `BuildManifest`
(`write_manifest` refuses one that is not), the harness checks a folder's manifest against the same declaration
before it trusts a field of it (`manifest_problem`, pydantic's strict validation): a manifest that lacks a file's
sha256, or holds `"files": "x"`, is one line naming the field, never a KeyError later.

A `Rule` in a field's annotation gives the words a message says of its value ("64 lowercase hex digits"), for a
value of the wrong type too: a problem anywhere inside it is said of the value itself, unless something inside has a
rule of its own or is a key that is missing (named, with its own words). Keys a declaration does not name are left alone: a config's entry holds, beside its files, the
benchmark's own fields (`file`, `file_sha256`, ...). The declarations are `typing_extensions.TypedDict`s: pydantic
reads no `typing.TypedDict` before Python 3.12.
"""

from __future__ import annotations

import functools
import posixpath
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Required, TypeGuard, get_args

from annotated_types import Ge, MinLen
from typing_extensions import TypedDict, is_typeddict

from builders.core.contract.paths import relative_path_problem
from builders.core.contract.schema import SHARED, ImageStorage

if TYPE_CHECKING:  # pydantic itself is imported where a manifest is first checked: importing the contract stays cheap
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema, ErrorDetails, core_schema

ManifestFormat = Literal["mmlongeval-build/1"]
MANIFEST_FORMAT: ManifestFormat = get_args(ManifestFormat)[0]
_RULED = "manifest_rule"  # the type of a pydantic error a `Rule` raised


@dataclass(frozen=True)
class Rule:
    """What a message says a value must be (`expected`, "64 lowercase hex digits"), the `pattern` a string matches
    whole, and `problem`: what is wrong with a value of the right type, in words of its own, or None."""

    expected: str
    pattern: str | None = None
    problem: Callable[[Any], str | None] | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.no_info_wrap_validator_function(self._validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        found = handler(schema)
        if "$ref" in found:  # a declaration of its own, described by its docstring
            return found
        pattern = {"pattern": f"^{self.pattern}$"} if self.pattern else {}
        return {**found, **pattern, "description": found.get("description", self.expected)}

    def _validate(self, value: object, handler: core_schema.ValidatorFunctionWrapHandler) -> object:
        from pydantic import ValidationError
        from pydantic_core import PydanticCustomError

        try:
            value = handler(value)
        except ValidationError as error:
            if error.errors()[0]["type"] in (_RULED, "missing"):  # said where it is, in its own words
                raise
            raise PydanticCustomError(_RULED, "expected {expected}", {"expected": self.expected}) from None
        if self.pattern and not re.fullmatch(self.pattern, str(value)):
            raise PydanticCustomError(_RULED, "expected {expected}", {"expected": self.expected})
        said = self.problem(value) if self.problem is not None else None
        if said:
            raise PydanticCustomError(_RULED, "{said}", {"said": said})
        return value


def _outside(path: str) -> str | None:
    """Why a manifest's path is no path inside the build folder (builders write each normalised, "/" only)."""
    if relative_path_problem(path, "build folder") or path != posixpath.normpath(path) or "\\" in path:
        return f"{path!r:.80} is not a path inside the build folder"
    return None


Sha256 = Annotated[str, Rule("64 lowercase hex digits", pattern="[0-9a-f]{64}")]
Count = Annotated[int, Ge(0), Rule("a count")]
BuildPath = Annotated[str, MinLen(1), Rule("a relative path", problem=_outside)]


class ManifestFile(TypedDict):
    """One data file of a build."""

    path: BuildPath  # relative to the build folder
    num_bytes: Annotated[int, Ge(0), Rule("a byte count")]
    sha256: Sha256


class ConfigFiles(TypedDict):
    """A config's (or the image table's) data files and what they hold."""

    files: Annotated[
        list[Annotated[ManifestFile, Rule("an object with path, num_bytes and sha256")]],
        MinLen(1),
        Rule("a list of files"),
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
    commit: Annotated[str, Rule("a commit (40 hex digits)", pattern="[0-9a-f]{40}")]
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
        dict[str, Annotated[ConfigFiles, Rule("an object")]], MinLen(1), Rule("an object naming each config")
    ]
    build_command: NotRequired[list[str]]  # `contract.BUILD_COMMAND`
    image_table: NotRequired[ImageTableEntry]  # shared storage


@functools.cache
def _adapter() -> TypeAdapter[BuildManifest]:
    from pydantic import TypeAdapter

    return TypeAdapter(BuildManifest)


def manifest_json_schema() -> dict[str, Any]:
    """The manifest's JSON Schema, as pydantic derives it from the declaration (`docs/schemas/`)."""
    return _adapter().json_schema()


def manifest_problem(manifest: object) -> str | None:
    """What keeps `manifest` (parsed JSON) from being a `BuildManifest`, in one line naming the field
    (`configs.m1.files[0].sha256: expected 64 lowercase hex digits, got '12ab'`), or None."""
    if not isinstance(manifest, dict):
        return f"expected a JSON object, got {type(manifest).__name__}"
    from pydantic import ValidationError

    try:
        _adapter().validate_python(manifest, strict=True)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        # Under the first field found wrong, the deepest error: where a union's members each refused the value
        # (`inputs.hub`, one source or several), the member that matched furthest says what is wrong, and where.
        same = [e for e in errors if e["loc"][:1] == errors[0]["loc"][:1]]
        return _said(max(same, key=lambda e: len(e["loc"])))
    storage = (manifest.get("contract") or {}).get("image_storage")
    if storage == SHARED and "image_table" not in manifest:
        return "image_table: expected an object, got nothing"  # the image table a shared-storage build reads
    return None


def is_build_manifest(manifest: object) -> TypeGuard[BuildManifest]:
    return manifest_problem(manifest) is None


def _said(error: ErrorDetails) -> str:
    """One pydantic error as one line: where (`configs.m1.files[0]`), what was expected there and what was found."""
    where, declared = _declared_at(error["loc"])
    place = f"{where}: " if where else ""
    ruled = error.get("ctx", {}) if error["type"] == _RULED else {}
    if "said" in ruled:  # a rule's own words for the value
        return place + ruled["said"]
    found = "nothing" if error["type"] == "missing" else f"{error['input']!r:.80}"
    return f"{place}expected {ruled.get('expected') or _words(declared)}, got {found}"


def _declared_at(loc: tuple[int | str, ...]) -> tuple[str, object]:
    """Where pydantic's `loc` is, in the file's keys and indexes (`configs.m1.files[0]`; a union's member names,
    which pydantic puts in, left out), and what the declaration says is there."""
    where: str = ""
    declared: object = BuildManifest
    for key in loc:
        bare = _bare(declared)
        if typing.get_origin(bare) in (typing.Union, types.UnionType):  # `key` names the member pydantic tried
            members = get_args(bare)
            declared = next(m for m in members if str(key).split("[")[0] == _name(m))
        elif isinstance(key, int):
            where, declared = f"{where}[{key}]", get_args(bare)[0]
        else:
            where = f"{where}.{key}" if where else key
            if is_typeddict(bare):
                declared = typing.get_type_hints(bare, include_extras=True).get(key, Any)
            else:
                declared = get_args(bare)[-1] if typing.get_origin(bare) is dict else Any
    return where, declared


def _name(declared: object) -> str:
    """The name pydantic gives a union's member, up to its brackets: `HubRecord`, `dict`."""
    bare = _bare(declared)
    return str(getattr(typing.get_origin(bare) or bare, "__name__", ""))


def _bare(declared: object) -> object:
    """`declared` without `NotRequired`/`Required` or `Annotated` around it."""
    while typing.get_origin(declared) in (NotRequired, Required, Annotated):
        declared = get_args(declared)[0]
    return declared


def _words(declared: object) -> str:
    """What a value of `declared` is, in words: its rule's, else "a string", "one of embedded, shared"."""
    while typing.get_origin(declared) in (NotRequired, Required):
        declared = get_args(declared)[0]
    if typing.get_origin(declared) is Annotated:
        rule = next((extra for extra in get_args(declared)[1:] if isinstance(extra, Rule)), None)
        return rule.expected if rule is not None else _words(get_args(declared)[0])
    origin = typing.get_origin(declared)
    if origin is Literal:
        return "one of " + ", ".join(str(option) for option in get_args(declared))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(_words(option) for option in get_args(declared)))
    if origin is dict or is_typeddict(declared):
        return "an object"
    words: dict[object, str] = {list: "a list", str: "a string", int: "an integer", bool: "a boolean"}
    return words.get(origin or declared, "a value")
