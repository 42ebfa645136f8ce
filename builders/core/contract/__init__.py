"""The data contract between the builders and the harness: what a built dataset folder holds.

Both sides import this package and nothing else of each other (`from builders.core import contract`, then
`contract.X`): its modules are `schema` (rows, image storage, the token rule), `location` (`hf://` names),
`options` (an option declared once: the flag, the checked field and the keyword, for the builders' and the
harness's commands alike), `manifest` (what a folder holds; its shape declared once in `manifest_schema`, validated
by pydantic), `paths` (which paths a release or manifest may name), `reading` (a build's images, read in place),
`json_numbers` (JSON read so that an integer too long for Python is one error naming its field; a value's kind in
words, `kind_of`), `regular_files` (the one opener of a file someone else's folder holds: never blocking on a FIFO
or a device, a regular file only, within a bound, a verified file from the descriptor that was hashed) and
`hub_cache` (a Hub cache's files verified before use). It imports nothing else of the project and no torch;
`datasets`, pyarrow, Pillow and pydantic only inside the functions that need them, so importing it costs nothing.

**Rows.** Every row of every benchmark carries the columns of `row_features()` (in the order the
benchmark chooses, among its own columns):

- `id`: a stable string, unique within its config;
- `images`: the row's encoded images (`List(Image())`, bytes embedded); absent when the build stores
  its images once in the image table (see below);
- `image_sha256`, `image_sizes`: sha256 of each image's encoded bytes and its `[width, height]`, so that
  nothing downstream needs the pixels to key a cache or to count tokens;
- `num_images`, `text_tokens` and `image_tokens` (per image, under `TOKEN_RULE`).

A prompt marks its images by `IMAGE_PLACEHOLDER`: the i-th placeholder is the row's i-th image.

**Image storage.** `embedded` (each row holds its images' bytes) or `shared`: each distinct image is
stored once, in the config `IMAGE_TABLE_CONFIG` (columns `IMAGE_TABLE_FEATURES`, sorted by sha256), and
a row names its images by `image_sha256`. `load_images(folder_or_repo, row)` returns a row's PIL images
in either mode.

**Hub locations.** `hf://ORG/NAME@REVISION` names a pushed build (`parse_hub_location`): `load_images` and the
harness's `--data_dir` read the same strings the same way. A file of the local Hub cache is read only once
`verified_blob` has followed its link into the repo's own blobs/ and hashed the blob against its name (`hub_cache`).

**Manifest.** `build_manifest.json` (`MANIFEST_NAME`, format `MANIFEST_FORMAT`) says what a folder holds:
per config its rows, files (path, bytes, sha256) and content hash; the build's content hash; and under
`contract` the image storage and the token rule its counts follow. A folder with a manifest is complete.
"""

from builders.core.contract.hub_cache import HubCacheError, VerifiedBlob, read_ref, verified_blob
from builders.core.contract.json_numbers import (
    JsonValue,
    TooManyDigits,
    int_problem,
    int_text_problem,
    kind_of,
    loads_json,
)
from builders.core.contract.location import HUB_PREFIX, HubLocation, parse_hub_location
from builders.core.contract.manifest import (
    BUILD_COMMAND,
    MANIFEST_FORMAT,
    MANIFEST_MOST,
    MANIFEST_NAME,
    ManifestError,
    data_files,
    file_sha256,
    manifest_image_storage,
    read_checked_manifest,
    read_manifest,
    row_digest,
    split_files,
    write_manifest,
)
from builders.core.contract.manifest_schema import (
    BuildManifest,
    ConfigFiles,
    HubBlob,
    HubRecord,
    ImageTableEntry,
    ManifestFile,
    Rule,
    is_build_manifest,
    manifest_json_schema,
    manifest_problem,
)
from builders.core.contract.options import (
    FLAG,
    REQUIRED,
    Check,
    DeclaredOptions,
    Flag,
    OneLineParser,
    Parse,
    add_flags,
    at_least,
    between,
    declared,
    default_of,
    flag_of,
    non_negative_integer,
    option,
    positive_int,
    switch,
)
from builders.core.contract.paths import expanded, relative_path_problem
from builders.core.contract.reading import (
    ROW_GROUP_CACHE_BYTES,
    ImageTable,
    ParquetColumn,
    image_table,
    load_images,
)
from builders.core.contract.regular_files import (
    FileTooLarge,
    GiB,
    KiB,
    MiB,
    NotRegularFile,
    kind_of_mode,
    open_descriptor,
    open_regular,
    pin_name,
    read_line,
    read_regular,
    release_pins,
    size_text,
)
from builders.core.contract.schema import (
    EMBEDDED,
    ID,
    IMAGE_PLACEHOLDER,
    IMAGE_SHA256,
    IMAGE_SIZES,
    IMAGE_STORAGES,
    IMAGE_TABLE_CONFIG,
    IMAGE_TABLE_SPLIT,
    IMAGE_TOKENS,
    IMAGES,
    MAX_PIXELS,
    MIN_PIXELS,
    NUM_IMAGES,
    PATCH_FACTOR,
    QWEN_DEFAULT_MAX_PIXELS,
    SHARED,
    TEXT_TOKENS,
    TOKEN_RULE,
    check_features,
    check_image_storage,
    image_table_feature_dicts,
    image_table_features,
    image_tokens,
    row_feature_dicts,
    row_features,
    smart_resize,
)

__all__ = [
    "BUILD_COMMAND",
    "FLAG",
    "REQUIRED",
    "Check",
    "DeclaredOptions",
    "Flag",
    "OneLineParser",
    "Parse",
    "add_flags",
    "at_least",
    "between",
    "declared",
    "default_of",
    "flag_of",
    "non_negative_integer",
    "option",
    "positive_int",
    "switch",
    "BuildManifest",
    "ConfigFiles",
    "ImageTableEntry",
    "ManifestFile",
    "Rule",
    "EMBEDDED",
    "HUB_PREFIX",
    "ID",
    "IMAGES",
    "IMAGE_PLACEHOLDER",
    "IMAGE_SHA256",
    "IMAGE_SIZES",
    "IMAGE_STORAGES",
    "IMAGE_TABLE_CONFIG",
    "IMAGE_TABLE_SPLIT",
    "IMAGE_TOKENS",
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "MAX_PIXELS",
    "MIN_PIXELS",
    "NUM_IMAGES",
    "PATCH_FACTOR",
    "QWEN_DEFAULT_MAX_PIXELS",
    "ROW_GROUP_CACHE_BYTES",
    "SHARED",
    "TEXT_TOKENS",
    "JsonValue",
    "TooManyDigits",
    "TOKEN_RULE",
    "GiB",
    "expanded",
    "KiB",
    "MANIFEST_MOST",
    "MiB",
    "FileTooLarge",
    "HubCacheError",
    "HubBlob",
    "HubRecord",
    "NotRegularFile",
    "kind_of_mode",
    "VerifiedBlob",
    "open_descriptor",
    "open_regular",
    "pin_name",
    "read_line",
    "read_regular",
    "release_pins",
    "size_text",
    "HubLocation",
    "ImageTable",
    "ManifestError",
    "ParquetColumn",
    "check_features",
    "check_image_storage",
    "data_files",
    "file_sha256",
    "image_table",
    "image_table_feature_dicts",
    "image_table_features",
    "image_tokens",
    "int_problem",
    "int_text_problem",
    "is_build_manifest",
    "kind_of",
    "load_images",
    "loads_json",
    "manifest_image_storage",
    "manifest_json_schema",
    "manifest_problem",
    "read_checked_manifest",
    "parse_hub_location",
    "read_manifest",
    "row_digest",
    "read_ref",
    "relative_path_problem",
    "row_feature_dicts",
    "row_features",
    "smart_resize",
    "split_files",
    "verified_blob",
    "write_manifest",
]
