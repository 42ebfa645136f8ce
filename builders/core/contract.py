"""The data contract between the builders and the harness: what a built dataset folder holds.

Both sides import this module and nothing else of each other. It imports nothing else of the project
and no torch; `datasets`, pyarrow and Pillow only inside the functions that need them, so importing it
costs nothing.

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
harness's `--data_dir` read the same strings the same way.

**Manifest.** `build_manifest.json` (`MANIFEST_NAME`, format `MANIFEST_FORMAT`) says what a folder holds:
per config its rows, files (path, bytes, sha256) and content hash; the build's content hash; and under
`contract` the image storage and the token rule its counts follow. A folder with a manifest is complete.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IMAGE_PLACEHOLDER = "<image>"

# ------------------------------------------------------------------------------------------ rows

ID = "id"
IMAGES = "images"
IMAGE_SHA256 = "image_sha256"
IMAGE_SIZES = "image_sizes"
NUM_IMAGES = "num_images"
TEXT_TOKENS = "text_tokens"
IMAGE_TOKENS = "image_tokens"

EMBEDDED = "embedded"
SHARED = "shared"
IMAGE_STORAGES = (EMBEDDED, SHARED)


def row_features(image_storage: str = EMBEDDED) -> dict[str, Any]:
    """The contract's columns as `datasets` features, by name (a benchmark places them among its own)."""
    from datasets import Image, List, Value

    check_image_storage(image_storage)
    features: dict[str, Any] = {ID: Value("string")}
    if image_storage == EMBEDDED:
        features[IMAGES] = List(Image())
    features.update({
        IMAGE_SHA256: List(Value("string")),
        IMAGE_SIZES: List(List(Value("int32"))),
        NUM_IMAGES: Value("int32"),
        TEXT_TOKENS: Value("int32"),
        IMAGE_TOKENS: List(Value("int32")),
    })
    return features


def check_features(features: Mapping[str, Any], image_storage: str, where: str) -> None:
    """Raise `ValueError` naming `where` when `features` lack a contract column or type one differently."""
    expected = row_features(image_storage)
    for name, feature in expected.items():
        if name not in features:
            raise ValueError(f"{where}: the contract column {name!r} is missing (expected {feature})")
        if features[name] != feature:
            raise ValueError(f"{where}: column {name!r} is {features[name]}, the contract says {feature}")
    if image_storage == SHARED and IMAGES in features:
        raise ValueError(f"{where}: a build with shared image storage keeps images out of the rows ({IMAGES!r})")


def check_image_storage(image_storage: str) -> str:
    if image_storage not in IMAGE_STORAGES:
        raise ValueError(f"image storage must be one of {', '.join(IMAGE_STORAGES)}, got {image_storage!r}")
    return image_storage


# --------------------------------------------------------------------------- the image table

IMAGE_TABLE_CONFIG = "image_table"
IMAGE_TABLE_SPLIT = "test"


def image_table_features() -> dict[str, Any]:
    from datasets import Image, Value

    return {"sha256": Value("string"), "image": Image(), "width": Value("int32"), "height": Value("int32")}


# ------------------------------------------------------------------------------ the token rule

# Qwen2-VL's rule (MMLongBench §3.2): 14 x 14 patches merged 2 x 2, so one token per 28 x 28 block of
# the image after `smart_resize`. The id is recorded in every manifest; change it with the rule.
TOKEN_RULE = "qwen2vl-smart-resize-28px-v1"
PATCH_FACTOR = 28
MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 16384
QWEN_DEFAULT_MAX_PIXELS = 28 * 28 * 1280  # Qwen2-VL's recommended cap: at most 1,280 tokens per image


def smart_resize(
    height: int,
    width: int,
    factor: int = PATCH_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2-VL's resize rule: the (height, width) a processor would feed the vision tower.

    Each side is rounded to the nearest multiple of `factor` (at least `factor`); an area outside
    [min_pixels, max_pixels] is scaled into it, keeping the aspect ratio.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_tokens(width: int, height: int, *, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> int:
    """Vision tokens of one `width` x `height` image under `TOKEN_RULE`, with the given pixel limits."""
    h_bar, w_bar = smart_resize(height, width, min_pixels=min_pixels, max_pixels=max_pixels)
    return (h_bar // PATCH_FACTOR) * (w_bar // PATCH_FACTOR)


# ---------------------------------------------------------------------------- Hub locations

HUB_PREFIX = "hf://"


@dataclass(frozen=True)
class HubLocation:
    """`hf://ORG/NAME@REVISION` in parts; `name` None: `hf://ORG`, a repo per benchmark (`ORG/<benchmark>`)."""

    org: str
    name: str | None
    revision: str | None

    def repo_for(self, dataset_path: str) -> str:
        benchmark = Path(dataset_path).name
        if self.name is not None and self.name != benchmark:
            raise ValueError(f"{self}: holds dataset {self.name!r}, the task reads {benchmark!r}")
        return f"{self.org}/{self.name or benchmark}"

    def __str__(self) -> str:
        return f"{HUB_PREFIX}{self.org}{'/' + self.name if self.name else ''}{'@' + self.revision if self.revision else ''}"


def parse_hub_location(text: str | Path | None) -> HubLocation | None:
    """`hf://ORG[/NAME][@REVISION]` -> its parts; anything else -> None (a local folder). ValueError for an
    `hf://` string of another shape."""
    if text is None or not str(text).startswith(HUB_PREFIX):
        return None
    body = str(text)[len(HUB_PREFIX):]
    path, _, revision = body.partition("@")
    parts = [p for p in path.split("/") if p]
    if not 1 <= len(parts) <= 2 or (revision == "" and "@" in body):
        raise ValueError(f"{text!r}: expected hf://ORG/NAME@REVISION (or hf://ORG[@REVISION])")
    return HubLocation(parts[0], parts[1] if len(parts) == 2 else None, revision or None)


# ------------------------------------------------------------------------------- the manifest

MANIFEST_NAME = "build_manifest.json"
MANIFEST_FORMAT = "mmlongeval-build/1"
# The argv of `builders build NAME ...` that reproduces a build, without --configs, --out, --overwrite
# and --quiet (absent for a build made through the Python API): how to add configs to it.
BUILD_COMMAND = "build_command"


def relative_path_problem(name: object, folder: str = "release") -> str | None:
    """Why `name` is not a file path relative to a `folder` that stays inside it, judged by its letters alone
    (absolute, a `..` leading out after normalisation, a NUL byte, empty), or None: the rule both a builder
    reading the paths a release names and the harness reading the paths a manifest names apply. A backslash is a
    separator to whoever made the files on Windows, so the path is judged both ways."""
    if not isinstance(name, str) or not name:
        return f"expected a relative file path, got {name!r}"
    if "\x00" in name:
        return f"path {name!r} holds a NUL byte"
    for spelling in {name, name.replace("\\", "/")}:
        if spelling.startswith("/") or (len(spelling) > 1 and spelling[1] == ":" and spelling[0].isalpha()):
            return f"path {name!r} is absolute; a {folder} names its files relative to its own folders"
        normal = posixpath.normpath(spelling)
        if normal == ".." or normal.startswith("../"):
            return f"path {name!r} leads out of the {folder} (through '..')"
    if posixpath.normpath(name) == ".":
        return f"expected a file path, got {name!r}"
    return None


class ManifestError(ValueError):
    """A manifest that cannot be read or is not one of this project's; the message names the file."""


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none (an incomplete build, or not a build)."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ManifestError(f"unreadable build manifest {path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{path} is not a build manifest of this project (format {MANIFEST_FORMAT})")
    return manifest


def write_manifest(folder: str | Path, manifest: Mapping[str, Any]) -> Path:
    path = Path(folder) / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def manifest_image_storage(manifest: Mapping[str, Any] | None) -> str:
    """How a build stores its images (builds older than the field embed them)."""
    contract = (manifest or {}).get("contract")
    return str(contract.get("image_storage", EMBEDDED)) if isinstance(contract, Mapping) else EMBEDDED


def file_sha256(path: str | Path, copy_to: str | Path | None = None, chunk: int = 8 * 1024 * 1024) -> str:
    """The sha256 of a file, as the manifest lists it for each data file; `copy_to` also copies the file there
    on the way (one read for both)."""
    digest = hashlib.sha256()
    with open(path, "rb") as reader, (open(copy_to, "wb") if copy_to is not None else nullcontext()) as writer:
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
        manifest = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    entry = manifest.get("image_table") if config == IMAGE_TABLE_CONFIG else manifest.get("configs", {}).get(config)
    files = entry.get("files") if isinstance(entry, Mapping) else None
    if not isinstance(files, list):
        return None
    chosen = [str(Path(folder) / f["path"]) for f in files
              if isinstance(f, Mapping) and Path(str(f.get("path", ""))).name.startswith(f"{split}-")]
    return chosen or None


def data_files(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every data file a build consists of (`{"path", "num_bytes", "sha256"}`), configs then image table."""
    files = [entry for _, info in sorted(manifest.get("configs", {}).items()) for entry in info.get("files", [])]
    table = manifest.get("image_table")
    if isinstance(table, Mapping):
        files += list(table.get("files", []))
    return files


# ---------------------------------------------------------------------------- reading images

# Row groups of image bytes kept in memory per column reader, where an image's place in the file cannot be known
# (a compressed column): rows read in order, or rows that share images, are served from memory.
ROW_GROUP_CACHE_BYTES = 512 * 1024 * 1024


class _ByteLocations:
    """Where each image's bytes lie in one row group of a memory-mapped Parquet file, so that reading an image
    copies its own bytes and nothing else.

    The builders write image bytes uncompressed and PLAIN-encoded: each value is stored whole, after its 4-byte
    length, in row order. The row group is decoded once, each value found in the column chunk's byte range right
    after the previous one and compared byte for byte with the decoded value; the decoded copy is then dropped.
    """

    def __init__(self, mapping: Any, first: list[int], offsets: list[int], lengths: list[int]) -> None:
        self._map = mapping
        self._first = first  # per row: index of its first value (a list column), or of its value; len(rows) + 1
        self._offsets = offsets  # per value: where its bytes start in the file, -1 for a null
        self._lengths = lengths

    @classmethod
    def find(cls, mapping: Any, chunk: Any, values: Any) -> _ByteLocations | None:
        """The locations of `values` (the row group's decoded column: structs with `bytes`, or lists of them)
        in `chunk`'s byte range of `mapping`; None where the chunk does not store them plainly."""
        import pyarrow as pa

        if (chunk.compression != "UNCOMPRESSED" or chunk.has_dictionary_page
                or not set(chunk.encodings) <= {"PLAIN", "RLE", "BIT_PACKED"}):  # RLE, BIT_PACKED: the levels
            return None
        first, blobs = [0], []
        for part in values.chunks:
            if pa.types.is_list(part.type) or pa.types.is_large_list(part.type):
                offsets = part.offsets.to_pylist()
                first += [first[-1] + (b - offsets[0]) for b in offsets[1:]]
                blobs.append(part.flatten().field("bytes"))
            else:
                first += range(first[-1] + 1, first[-1] + 1 + len(part))
                blobs.append(part.field("bytes"))
        at, end = chunk.data_page_offset, chunk.data_page_offset + chunk.total_compressed_size
        locations: list[int] = []
        lengths: list[int] = []
        for blob in (b for part in blobs for b in part):
            if not blob.is_valid:
                locations.append(-1)
                lengths.append(0)
                continue
            data = blob.as_py()
            found = mapping.find(len(data).to_bytes(4, "little") + data[:32], at, end)
            if found < 0 or mapping[found + 4:found + 4 + len(data)] != data:  # whole, byte for byte
                return None
            locations.append(found + 4)
            lengths.append(len(data))
            at = found + 4 + len(data)
        return cls(mapping, first, locations, lengths)

    def data(self, row: int, index: int | None) -> bytes | None:
        value = self._first[row] + (index or 0)
        if index is not None and not 0 <= index < self._first[row + 1] - self._first[row]:
            raise IndexError(f"image {index} of a row of {self._first[row + 1] - self._first[row]}")
        start = self._offsets[value]
        return None if start < 0 else self._map[start:start + self._lengths[value]]


class ParquetColumn:
    """One column of a split stored as Parquet files, read when one of its rows is asked for: the column's bytes
    are never all in memory, and nothing is converted or copied to disk.

    `files` are opened `pyarrow.parquet.ParquetFile`s and `maps` the memory mappings they read (`mmap.mmap`, or
    None where there is none). An image column (structs with `bytes`) stored plainly, as the builders write it, is
    read image by image straight from the mapping (`image_bytes`, `_ByteLocations`); any other column, a row
    group at a time, the last ones kept up to `ROW_GROUP_CACHE_BYTES`. `before_read(i)` is called before anything
    is read from `files[i]` (the harness checks there that the file is still the one it verified). Safe to share
    between threads (a backend may read images from several).
    """

    def __init__(self, files: Sequence[Any], column: str, budget_bytes: int | None = None,
                 before_read: Any = None, maps: Sequence[Any] | None = None) -> None:
        import threading
        from collections import OrderedDict

        self.column = column
        self._files = list(files)
        self._maps = list(maps) if maps is not None else [None] * len(self._files)
        self._budget = budget_bytes or ROW_GROUP_CACHE_BYTES
        self._before_read = before_read or (lambda file: None)
        self._starts: list[int] = []  # first row of each row group, over all files
        self._groups: list[tuple[int, int]] = []  # (file, row group)
        rows = 0
        for i, file in enumerate(self._files):
            for group in range(file.metadata.num_row_groups):
                self._starts.append(rows)
                self._groups.append((i, group))
                rows += file.metadata.row_group(group).num_rows
        self.num_rows = rows
        self._cache: OrderedDict[int, Any] = OrderedDict()
        self._cached_bytes = 0
        self._located: dict[int, _ByteLocations | None] = {}
        self._lock = threading.Lock()

    def _place(self, row: int) -> tuple[int, int]:
        import bisect

        if not 0 <= row < self.num_rows:
            raise IndexError(f"row {row} of {self.num_rows}")
        group = bisect.bisect_right(self._starts, row) - 1
        return group, row - self._starts[group]

    def cell(self, row: int) -> Any:
        """The value of `row` as a pyarrow scalar."""
        group, local = self._place(row)
        return self._group(group)[local]

    def image_bytes(self, row: int, index: int | None = None) -> bytes | None:
        """The `bytes` of the image struct of `row` (its `index`-th one, for a list column); None when it has
        none (an image stored by path)."""
        group, local = self._place(row)
        locations = self._locations(group)
        if locations is not None:
            self._before_read(self._groups[group][0])
            return locations.data(local, index)
        cell = self._group(group)[local]
        item = cell.values[index] if index is not None else cell
        return item["bytes"].as_py()

    def _chunk(self, group: int) -> Any:
        """The metadata of the column chunk of the image bytes in `group`, or None."""
        file, index = self._groups[group]
        meta = self._files[file].metadata.row_group(index)
        paths = (f"{self.column}.bytes", f"{self.column}.list.element.bytes")
        return next((meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema in paths), None)

    def _locations(self, group: int) -> _ByteLocations | None:
        with self._lock:
            if group not in self._located:
                file, index = self._groups[group]
                chunk = self._chunk(group)
                located = None
                if self._maps[file] is not None and chunk is not None:
                    self._before_read(file)
                    values = self._files[file].read_row_group(index, columns=[self.column]).column(0)
                    located = _ByteLocations.find(self._maps[file], chunk, values)
                self._located[group] = located
            return self._located[group]

    def _group(self, group: int) -> Any:
        with self._lock:
            if group in self._cache:
                self._cache.move_to_end(group)
                return self._cache[group]
            file, index = self._groups[group]
            self._before_read(file)
            values = self._files[file].read_row_group(index, columns=[self.column]).column(0)
            self._cache[group] = values
            self._cached_bytes += values.nbytes
            while self._cached_bytes > self._budget and len(self._cache) > 1:
                _, dropped = self._cache.popitem(last=False)
                self._cached_bytes -= dropped.nbytes
            return values


class ImageTable:
    """The image table of a shared-storage build, read lazily: sha256 -> encoded bytes.

    Only the sha256 column is read up front (to index it); an image's bytes are read from its Parquet file's
    row group when asked for (`ParquetColumn`).
    """

    def __init__(self, files: Sequence[Any], location: str, before_read: Any = None,
                 maps: Sequence[Any] | None = None) -> None:
        self.location = location
        self._row: dict[str, int] = {}
        for file in files:
            for sha in file.read(columns=["sha256"]).column(0).to_pylist():
                self._row.setdefault(sha, len(self._row))
        self._images = ParquetColumn(files, "image", before_read=before_read, maps=maps)
        if self._images.num_rows != len(self._row):
            raise ValueError(f"the image table of {location} lists an image twice")

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, sha256: object) -> bool:
        return sha256 in self._row

    def data(self, sha256: str) -> bytes:
        """The encoded bytes of the image with this sha256; KeyError naming it when the table lacks it."""
        if sha256 not in self._row:
            raise KeyError(f"image {sha256} is not in the image table of {self.location}")
        data = self._images.image_bytes(self._row[sha256])
        if data is None:
            raise KeyError(f"image {sha256} of the image table of {self.location} has no bytes")
        return data


_TABLES: dict[tuple[str, str | None], ImageTable] = {}


def _hub_repo(location: str, revision: str | None) -> tuple[str, str | None] | None:
    """(repo id, revision) when `location` names a Hub repo (`hf://ORG/NAME[@REVISION]`, or `ORG/NAME` with a
    revision or that is not a local folder), None for a local folder. A revision given twice must agree."""
    hub = parse_hub_location(location)
    if hub is None:
        return None if revision is None and Path(location).is_dir() else (location, revision)
    if hub.name is None:
        raise ValueError(f"{location!r}: name the dataset repo, hf://ORG/NAME[@REVISION]")
    if hub.revision is not None and revision is not None and hub.revision != revision:
        raise ValueError(f"{location!r} names revision {hub.revision!r}, revision={revision!r} another")
    return f"{hub.org}/{hub.name}", hub.revision or revision


def _image_table_files(location: str, revision: str | None, load_kwargs: Mapping[str, Any]) -> list[str]:
    """The image table's Parquet files of a local build folder, or of a Hub repo (downloaded into the Hub cache:
    `load_kwargs` go to `huggingface_hub.snapshot_download`)."""
    folder = Path(location)
    repo = _hub_repo(location, revision)
    if repo is not None:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(repo[0], repo_type="dataset", revision=repo[1],
                                        allow_patterns=[MANIFEST_NAME, f"{IMAGE_TABLE_CONFIG}/*"], **load_kwargs))
    files = split_files(folder, IMAGE_TABLE_CONFIG, IMAGE_TABLE_SPLIT) or sorted(
        str(p) for p in (folder / IMAGE_TABLE_CONFIG).glob(f"{IMAGE_TABLE_SPLIT}-*.parquet"))
    if not files:
        raise FileNotFoundError(f"{location} has no image table ({IMAGE_TABLE_CONFIG}/{IMAGE_TABLE_SPLIT}-*.parquet)")
    return files


def image_table(location: str, revision: str | None = None, **load_kwargs: Any) -> ImageTable:
    """One `ImageTable` per (location, revision) per process, its files memory-mapped."""
    import mmap

    import pyarrow as pa
    import pyarrow.parquet as pq

    key = (str(location), revision)
    if key not in _TABLES:
        maps = []
        for path in _image_table_files(str(location), revision, load_kwargs):
            with open(path, "rb") as file:
                maps.append(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
        files = [pq.ParquetFile(pa.BufferReader(pa.py_buffer(m))) for m in maps]
        _TABLES[key] = ImageTable(files, str(location), maps=maps)
    return _TABLES[key]


def load_images(location: str | Path, row: Mapping[str, Any], revision: str | None = None,
                **load_kwargs: Any) -> list[Any]:
    """A row's images as PIL images, in prompt order, whatever the build's image storage.

    `location` is the built folder or Hub repo the row was loaded from: a folder, `ORG/NAME`, or
    `hf://ORG/NAME@REVISION` as `--data_dir` takes it (for a Hub repo, `load_kwargs`, e.g. `cache_dir`, go to
    `huggingface_hub.snapshot_download` when the image table is first read):

        ds = datasets.load_dataset("data/mmneedle", "m10_n4_k1", split="test")
        images = load_images("data/mmneedle", ds[0])
        images = load_images("hf://ORG/mmlongbench@v1.0.0", row)
    """
    import io

    from PIL import Image

    embedded = row.get(IMAGES)
    if embedded is not None:
        return [_as_pil(item) for item in embedded]
    table = image_table(str(location), revision, **load_kwargs)
    out = []
    for sha in _hashes(row):
        image = Image.open(io.BytesIO(table.data(sha)))
        image.load()
        out.append(image)
    return out


def _hashes(row: Mapping[str, Any]) -> Sequence[str]:
    hashes = row.get(IMAGE_SHA256)
    if not isinstance(hashes, list):
        raise ValueError(f"row {row.get(ID)!r} has neither {IMAGES!r} nor {IMAGE_SHA256!r}")
    return hashes


def _as_pil(item: Any) -> Any:
    import io

    from PIL import Image

    if isinstance(item, Mapping):  # Image(decode=False)
        image = Image.open(io.BytesIO(item["bytes"]))
        image.load()
        return image
    return item
