"""Official mode: rebuild the paper's exact samples from the authors' released metadata.

Files, as in `metadata_stitched/` of Wang-ML-Lab/multimodal-needle-in-a-haystack:
- pools `{N}_{N}.json`: `{"COCO_val2014_stitched_0007.jpg": {"0_0": "val2014/COCO_val2014_….jpg", …}}`
  with 0-based `"row_col"` keys;
- annotations `annotations_{M}_{N}_{N}.json` (K = 1) and `{K}_annotations_{M}_{N}_{N}.json`
  (K = 2, 5): a list of `{"id", "image_ids": ["images_stitched/{N}_{N}/COCO_val2014_stitched_….jpg", …],
  "index", "row", "col", "target"}` with 0-based index/row/col, -1 for negatives; for K > 1 the
  last four are lists of length K in caption order. Ids 0-4999 are positives, 5000-9999 negatives (a run of
  S samples: ids below S / 2 positive, so an odd S has one positive more than negatives).
Only base names matter: `val2014/X.jpg` is the source image `X.jpg`, a stitched path is keyed by
its file name without `.jpg`.

`--official-metadata hf://Wang-ML-Lab/MMNeedle[@REVISION]` reads the same files from the authors' Hub release
(`data/metadata_stitched.zip`, downloaded whole into the Hub cache: it is one file), taking out only the pool and
annotation files the asked configs read, each within its bound, into the build's work folder (`hub_metadata`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from builders.core.errors import BuildError
from builders.core.hub_source import FetchedRelease, HubFile, HubRelease, fetch_release, parse_hub_source
from builders.core.release_archive import zip_files
from builders.core.release_bounds import Bound, GiB, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import release_path
from builders.mmneedle.bounds import MMNEEDLE_METADATA_FILE
from builders.mmneedle.configs import NeedleConfig
from builders.mmneedle.plan import NEGATIVE_LOCATION, RowPlan

# The authors' Hub release (its builder script in the code repository, commit 7016404, names these files); no
# commit of the dataset repo could be found from here.
HUB_RELEASE = HubRelease(
    "Wang-ML-Lab/MMNeedle",
    "main",
    "not pinned: no commit of the dataset repo could be found; the manifest records the one read",
)
# The zip holds 4 pool files (the largest, 8_8.json, ~36 MB) and 21 annotation files (~2.5-10 MB each): some 200 MB of
# JSON before deflating, so a blob of 1 GiB is not this file (its size is checked before a byte is hashed).
HUB_METADATA = HubFile(
    ("data/metadata_stitched.zip",),
    "the official metadata (metadata_stitched/)",
    Bound(1 * GiB, "MMNeedle's metadata zip"),
)


def metadata_names(cfg: NeedleConfig) -> tuple[str, str]:
    """(pool file, annotation file) a config reads."""
    name = f"annotations_{cfg.M}_{cfg.N}_{cfg.N}.json"
    return f"{cfg.N}_{cfg.N}.json", name if cfg.K == 1 else f"{cfg.K}_{name}"


def hub_metadata(
    source: str, configs: list[NeedleConfig], work: Path, progress: bool = True
) -> tuple[Path, FetchedRelease]:
    """The metadata zip of `source` (`hf://ORG/NAME[@REVISION]`) fetched, and the files `configs` read taken out of
    it into the build's work folder `work` (inside --out; wherever the zip keeps them: at its top or under
    `metadata_stitched/`), each within `MMNEEDLE_METADATA_FILE`; returns the folder holding them."""
    fetched = fetch_release(parse_hub_source(source), HUB_RELEASE, [HUB_METADATA], progress=progress, view=work / "hub")
    archive = fetched.folder / fetched.files[0]
    wanted = {name for cfg in configs for name in metadata_names(cfg)}
    target = work / "metadata_stitched"
    target.mkdir(parents=True, exist_ok=True)
    for member in zip_files(archive):
        base = member.name.rsplit("/", 1)[-1]
        if base in wanted and member.name in (base, f"metadata_stitched/{base}"):
            with open(target / base, "wb") as out:
                member.copy_to(out, MMNEEDLE_METADATA_FILE)
    return target, fetched


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _stem(path: str) -> str:
    base = _base(path)
    return base[:-4] if base.lower().endswith(".jpg") else base


class OfficialPool:
    def __init__(self, N: int, path: Path) -> None:
        self.N = N
        self.path = path
        doc = _load_json(path)
        if not isinstance(doc, dict) or not doc:
            raise BuildError(f"malformed pool file {path}: expected a non-empty object of stitched images")
        cells = [f"{r}_{c}" for r in range(N) for c in range(N)]
        self._tiles: dict[str, tuple[str, ...]] = {}
        for name, grid in doc.items():
            if (
                not isinstance(grid, dict)
                or sorted(grid) != sorted(cells)
                or not all(isinstance(v, str) for v in grid.values())
            ):
                raise BuildError(
                    f"malformed pool file {path}: {name} should map the {N * N} cells "
                    f"{cells[0]}..{cells[-1]} to image paths"
                )
            self._tiles[_stem(name)] = tuple(_base(grid[cell]) for cell in cells)

    def __contains__(self, key: str) -> bool:
        return key in self._tiles

    def tiles(self, key: str) -> tuple[str, ...]:
        return self._tiles[key]


class OfficialMetadata:
    """The released metadata folder (`metadata_stitched/` itself or a folder containing it)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        folder = Path(folder)
        if (folder / "metadata_stitched").is_dir():
            folder = folder / "metadata_stitched"
        if not folder.is_dir():
            raise BuildError(f"official metadata folder not found: {folder}")
        self.folder = folder
        self._pools: dict[int, OfficialPool] = {}
        self._annotations: dict[str, dict[int, tuple[int, dict[str, Any]]]] = {}

    def _file(self, name: str) -> Path:
        """A metadata file, inside the metadata folder (`builders.core.release_paths`)."""
        return release_path(self.folder, name, f"{self.folder}: {name}")

    def pool_path(self, N: int) -> Path:
        return self._file(f"{N}_{N}.json")

    def annotation_path(self, cfg: NeedleConfig) -> Path:
        return self._file(metadata_names(cfg)[1])

    def files_for(self, configs: list[NeedleConfig]) -> list[Path]:
        paths = {self.pool_path(cfg.N) for cfg in configs} | {self.annotation_path(cfg) for cfg in configs}
        missing = sorted(str(p) for p in paths if not p.is_file())
        if missing:
            raise BuildError(f"official metadata file(s) not found: {', '.join(missing)}")
        return sorted(paths)

    def fingerprint(self, configs: list[NeedleConfig]) -> dict[str, str]:
        return {p.name: "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in self.files_for(configs)}

    def pool(self, N: int) -> OfficialPool:
        if N not in self._pools:
            self._pools[N] = OfficialPool(N, self.pool_path(N))
        return self._pools[N]

    def negative_start(self, cfg: NeedleConfig) -> int:
        """The first negative id, read from the file: the official scripts split a run of S samples at S / 2
        (5,000 for the released 10,000), so it is the smallest id whose locations are all -1."""
        self._entries(cfg)
        by_id = self._annotations[cfg.name]
        negatives = [i for i, (_, entry) in by_id.items() if _is_negative(entry.get("index"))]
        split = min(negatives) if negatives else max(by_id, default=-1) + 1
        misplaced = sorted(i for i, (_, entry) in by_id.items() if i > split and not _is_negative(entry.get("index")))
        if misplaced:
            raise BuildError(
                f"{self.annotation_path(cfg)}: ids below {split} are positives and the rest negatives, "
                f"but id {misplaced[0]} (after the first negative) has a location"
            )
        return split

    def sample_end(self, cfg: NeedleConfig) -> int:
        """One past the file's last sample id: a run of S samples ends at S, whatever its split."""
        self._entries(cfg)
        return max(self._annotations[cfg.name], default=-1) + 1

    def _entries(self, cfg: NeedleConfig) -> None:
        if cfg.name not in self._annotations:
            path = self.annotation_path(cfg)
            doc = _load_json(path)
            if not isinstance(doc, list):
                raise BuildError(f"malformed annotation file {path}: expected a list of samples")
            by_id: dict[int, tuple[int, dict[str, Any]]] = {}
            for position, entry in enumerate(doc):
                if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
                    raise BuildError(f"malformed annotation file {path}: entry {position} has no integer 'id'")
                by_id[entry["id"]] = (position, entry)
            self._annotations[cfg.name] = by_id

    def entry(self, cfg: NeedleConfig, sample_id: int) -> tuple[int, dict[str, Any]]:
        """(position in the file, entry) of a sample id."""
        self._entries(cfg)
        by_id = self._annotations[cfg.name]
        if sample_id not in by_id:
            path = self.annotation_path(cfg)
            held = _ranges(sorted(by_id))
            raise BuildError(
                f"{path} has no sample id {sample_id} (it holds ids {held}); use --limit to build fewer rows"
            )
        return by_id[sample_id]


class OfficialPlanner:
    mode = "official"

    def __init__(self, metadata: OfficialMetadata) -> None:
        self.metadata = metadata

    def pool(self, N: int) -> OfficialPool:
        return self.metadata.pool(N)

    def negative_start(self, cfg: NeedleConfig) -> int:
        return self.metadata.negative_start(cfg)

    def sample_end(self, cfg: NeedleConfig) -> int:
        return self.metadata.sample_end(cfg)

    def plan(self, cfg: NeedleConfig, sample_id: int) -> RowPlan:
        path = self.metadata.annotation_path(cfg)
        position, entry = self.metadata.entry(cfg, sample_id)
        where = f"{path} entry {position} (id {sample_id})"
        pool = self.pool(cfg.N)

        image_ids = entry.get("image_ids")
        if not isinstance(image_ids, list) or len(image_ids) != cfg.M or not all(isinstance(p, str) for p in image_ids):
            raise BuildError(f"{where}: 'image_ids' should list {cfg.M} stitched image paths")
        haystack = tuple(_stem(p) for p in image_ids)
        for key in haystack:
            if key not in pool:
                raise BuildError(f"{where}: stitched image {key}.jpg is not in {pool.path}")

        fields: dict[str, Any] = {name: entry.get(name) for name in ("index", "row", "col", "target")}
        if cfg.K == 1:
            fields = {name: [value] for name, value in fields.items()}
        for name, value in fields.items():
            kind = str if name == "target" else int
            if not isinstance(value, list) or len(value) != cfg.K or not all(isinstance(v, kind) for v in value):
                shape = "a string" if kind is str else "an integer"
                expected = shape if cfg.K == 1 else f"a list of {cfg.K} ({shape} each)"
                raise BuildError(f"{where}: '{name}' should be {expected}")
        needles = tuple(_base(t) for t in fields["target"])
        triples = list(zip(fields["index"], fields["row"], fields["col"], strict=True))
        split = self.negative_start(cfg)
        positive = sample_id < split
        grids = [pool.tiles(key) for key in haystack]
        if positive:
            for k, (index, row, col) in enumerate(triples):
                if not (0 <= index < cfg.M and 0 <= row < cfg.N and 0 <= col < cfg.N):
                    raise BuildError(
                        f"{where}: needle {k + 1} location ({index}, {row}, {col}) is outside a {cfg.M}x{cfg.N}x{cfg.N} haystack"
                    )
                if grids[index][row * cfg.N + col] != needles[k]:
                    raise BuildError(
                        f"{where}: needle {k + 1} {needles[k]} is not at ({index}, {row}, {col}) of the haystack "
                        f"(the pool has {grids[index][row * cfg.N + col]} there)"
                    )
            return RowPlan(sample_id, True, haystack, needles, tuple(triples))
        if any(triple != NEGATIVE_LOCATION for triple in triples):
            raise BuildError(f"{where}: a negative sample (id >= {split}) should have index = row = col = -1")
        inside = {name for grid in grids for name in grid}
        for needle in needles:
            if needle in inside:
                raise BuildError(f"{where}: negative needle {needle} is inside the haystack")
        return RowPlan(sample_id, False, haystack, needles, (NEGATIVE_LOCATION,) * cfg.K)


def _is_negative(index: object) -> bool:
    """An entry's `index` (K = 1: an int; K > 1: a list) says "no needle": -1 everywhere."""
    values = index if isinstance(index, list) else [index]
    return bool(values) and all(v == -1 for v in values)


def _load_json(path: Path) -> object:
    if not path.is_file():
        raise BuildError(f"official metadata file not found: {path}")
    return parse_json(read_file(path, MMNEEDLE_METADATA_FILE), f"malformed metadata file {path}")


def _ranges(ids: list[int]) -> str:
    if not ids:
        return "none"
    parts, start, prev = [], ids[0], ids[0]
    values: list[int | None] = [*ids[1:], None]
    for value in values:
        if value is not None and value == prev + 1:
            prev = value
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        if value is not None:
            start = prev = value
    return ", ".join(parts)
