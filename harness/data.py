"""Find and load a task's dataset without decoding a single image.

Where `dataset_path` is looked up, in order: `--data_dir DIR` (or, without the flag, the environment
variable `MMLONGEVAL_DATA_DIR`) as `DIR/<dataset_path>`; else the default cache
`~/.cache/mmlongeval/data/<dataset_path>`; else the Hub repo named by the task's `metadata.hub_repo`.
A folder given explicitly is the only local place searched, so a typo never silently reads another
build. Image columns are loaded as `Image(decode=False)`: rows carry encoded bytes, and the runner
reads one image's bytes only when its batch runs (`ImageColumn`). A build that stores its images once
(`builders.core.contract`, shared image storage) is read the same way through its image table
(`SharedImageColumn`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features
from datasets import Image as ImageFeature

from builders.core import contract
from harness.errors import DatasetMissingError, UserError
from harness.hub import fetch_build, parse_hub_location, snapshot_commit
from harness.integrity import verify_build
from harness.task_config import TaskConfig

DATA_DIR_ENV = "MMLONGEVAL_DATA_DIR"
DEFAULT_DATA_DIR = Path("~/.cache/mmlongeval/data")


@dataclass
class LoadedDataset:
    dataset: datasets.Dataset  # the evaluated split, image columns undecoded
    location: str  # the local folder, or `hf://ORG/NAME@REVISION`
    revision: str | None  # Hub revision (tag/commit) when loaded from the Hub
    manifest: dict[str, Any] | None  # the build's `build_manifest.json`, when there is one
    fingerprint: str  # content hash when the build has one, else the datasets fingerprint
    info: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None  # the folder the files were read from (a build, or a Hub snapshot)

    def describe(self) -> dict[str, Any]:
        """What the results file records about the data."""
        return {"location": self.location, "revision": self.revision, "fingerprint": self.fingerprint, **self.info}

    @property
    def image_storage(self) -> str:
        return contract.manifest_image_storage(self.manifest)

    def image_column(self, docs: datasets.Dataset, column: str) -> ImageColumn | SharedImageColumn:
        """A reader of one image column of `docs`: the rows' own bytes, or, for the contract's `images`
        column of a shared-storage build, the build's image table."""
        if column == contract.IMAGES and column not in docs.column_names and self.image_storage == contract.SHARED:
            if self.folder is None:
                raise UserError(f"{self.location}: a shared-storage build must be read from a folder")
            try:
                table = contract.image_table(str(self.folder), None, cache_dir=str(local_cache_dir(self.folder)))
            except Exception as err:  # a missing or unreadable image table: say where, not a traceback
                raise UserError(f"{self.location}: cannot read the image table ({contract.IMAGE_TABLE_CONFIG}): "
                                f"{type(err).__name__}: {err}") from None
            return SharedImageColumn(docs, table)
        return ImageColumn(docs, column, self.folder)


def missing(config: TaskConfig, root: Path | str, reason: str,
            manifest: dict[str, Any] | None = None) -> DatasetMissingError:
    template = build_command_template(config, manifest)
    return DatasetMissingError(reason, builder_hint(template, config, root), builder_command=template,
                               dataset_name=config.dataset_name, data_dir=str(root))


def build_command_template(config: TaskConfig, manifest: dict[str, Any] | None) -> str | None:
    """How to build a missing config: the command that made the build already in place (its source, limit
    and seed: the user's own), else the task's `metadata.builder_command`; `{dataset_name}` and
    `{data_dir}` are filled in later."""
    command = (manifest or {}).get(contract.BUILD_COMMAND)
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        escaped = shlex.join(command).replace("{", "{{").replace("}", "}}")
        return escaped + " --configs {dataset_name} --out {data_dir}"
    template = config.metadata.get("builder_command")
    return str(template) if template else None


def builder_hint(template: str | None, config: TaskConfig, data_dir: Path | str) -> str:
    if not template:
        return ""
    command = str(template).format(dataset_name=config.dataset_name or "", data_dir=data_dir)
    return f"; build it with: {command}"


def local_root(data_dir: Path | str | None) -> tuple[Path, bool]:
    """The folder that holds local builds, and whether the user named it explicitly."""
    if data_dir is not None:
        return Path(data_dir).expanduser(), True
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser(), True
    return DEFAULT_DATA_DIR.expanduser(), False


def _undecoded(feature: Any) -> Any:
    if isinstance(feature, ImageFeature):
        return ImageFeature(mode=feature.mode, decode=False)
    if isinstance(feature, datasets.List | datasets.LargeList):
        return type(feature)(_undecoded(feature.feature), **({"length": feature.length} if isinstance(feature, datasets.List) else {}))
    if isinstance(feature, dict):
        return type(feature)({k: _undecoded(v) for k, v in feature.items()})
    return feature


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        return contract.read_manifest(folder)
    except contract.ManifestError as err:
        raise UserError(str(err)) from None


def _manifest_info(manifest: dict[str, Any] | None, config_name: str | None) -> dict[str, Any]:
    """The manifest fields worth recording with results: hash, builder, seed, source, contract, caveats, this
    config."""
    if not manifest:
        return {}

    def scalars(d: Any) -> dict[str, Any]:
        return {k: v for k, v in d.items() if not isinstance(v, dict | list)} if isinstance(d, dict) else {}

    info: dict[str, Any] = {k: v for k, v in scalars(manifest).items()
                            if k in ("content_hash", "builder", "builder_version", "format", "version", "seed")}
    request = manifest.get("request")
    if isinstance(request, dict):
        info.update({k: v for k, v in scalars(request).items() if k in ("mode", "seed", "rows", "limit")})
        if isinstance(request.get("source"), dict):
            info["source"] = scalars(request["source"])
    if isinstance(manifest.get("contract"), dict):
        info["contract"] = scalars(manifest["contract"])  # image storage and token rule
    if isinstance(manifest.get("caveats"), dict) and manifest["caveats"]:
        info["caveats"] = {str(kind): str(text) for kind, text in manifest["caveats"].items()}  # synthetic, limited
    configs = manifest.get("configs")
    if isinstance(configs, dict) and config_name in configs:
        info["config"] = scalars(configs[config_name])
    return info


def load_task_dataset(config: TaskConfig, data_dir: Path | str | None = None) -> LoadedDataset:
    try:
        hub = parse_hub_location(data_dir)
        repo = hub.repo_for(config.dataset_path) if hub else None
    except ValueError as err:
        raise UserError(f"--data_dir {err}") from None
    if hub is not None and repo is not None:
        return _load_from_hub(config, repo, hub.revision, str(data_dir))
    root, explicit = local_root(data_dir)
    given = Path(config.dataset_path).expanduser()
    local = given if given.is_absolute() else root / config.dataset_path
    if local.is_dir():
        return _load(config, local.resolve(), _read_manifest(local), root, str(local.resolve()), None)
    hub_repo = config.metadata.get("hub_repo")
    if hub_repo and not explicit:
        revision = config.dataset_kwargs.get("revision") or config.metadata.get("hub_revision")
        return _load_from_hub(config, str(hub_repo), revision, str(root))
    looked = [str(local)] + ([f"Hub repo {hub_repo}"] if hub_repo and not explicit else [])
    env_note = "" if explicit else f" (set --data_dir or ${DATA_DIR_ENV} to use another folder)"
    raise missing(config, root, f"task {config.task!r}: dataset {config.dataset_path!r} not found; "
                                f"looked in {', '.join(looked)}{env_note}")


def _load_from_hub(config: TaskConfig, repo: str, revision: str | None, hint_dir: str) -> LoadedDataset:
    """A pushed build, fetched into the Hub cache (only what the task reads) and read as a local one."""
    location = f"hf://{repo}" + (f"@{revision}" if revision else "")
    try:
        folder = fetch_build(repo, revision, config.dataset_name)
        manifest = _read_manifest(folder)
    except UserError:
        raise
    except Exception as err:  # offline without a cached snapshot, no such repo or revision, no network
        raise missing(config, hint_dir, f"task {config.task!r}: cannot get {location}: "
                                        f"{type(err).__name__}: {str(err).splitlines()[0]}") from None
    loaded = _load(config, folder, manifest, Path(hint_dir), location, revision)
    loaded.info["commit"] = snapshot_commit(folder)
    return loaded


def local_cache_dir(folder: Path) -> Path:
    """An Arrow cache folder of its own for one local build.

    `datasets` keys the cache of a local folder on its README metadata only, so two builds with
    the same card (a rebuild in place, a copy with a changed shard) would share one cache and the
    second would silently read the first's rows. Keying on every data file's size and mtime
    makes a changed build convert afresh.
    """
    stats = sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                   for p in folder.rglob("*") if p.is_file())
    key = hashlib.sha256(json.dumps([str(folder.resolve()), stats]).encode()).hexdigest()[:16]
    return Path(datasets.config.HF_DATASETS_CACHE) / "mmlongeval_local" / key


def _load(config: TaskConfig, folder: Path, manifest: dict[str, Any] | None, root: Path, location: str,
          revision: str | None) -> LoadedDataset:
    """Load one config's split from a local folder (a build, or a Hub snapshot), its files verified first."""
    kwargs = {k: v for k, v in config.dataset_kwargs.items() if k != "revision"}
    verified: list[dict[str, str]] = []
    if manifest and config.dataset_name:
        verified = verify_build(folder, manifest, [config.dataset_name])  # before reading a row
    kwargs.setdefault("cache_dir", str(local_cache_dir(folder)))
    # The manifest's files of this split, read by the Parquet loader: the card is not parsed on every load.
    files = (contract.split_files(folder, config.dataset_name, config.test_split)
             if manifest and config.dataset_name and not {"data_files", "data_dir"} & set(kwargs) else None)
    try:
        if files:
            features = Features.from_arrow_schema(pq.read_schema(files[0]))
        else:
            features = datasets.load_dataset_builder(str(folder), config.dataset_name, **kwargs).info.features
        # Without declared features nothing decodes either: images are read through Arrow
        # (`ImageColumn`) and documents are read without their image columns.
        if features is not None:
            kwargs["features"] = Features({k: _undecoded(v) for k, v in features.items()})
        if files:
            dataset = datasets.load_dataset("parquet", data_files={config.test_split: files}, split=config.test_split,
                                            **kwargs)
        else:
            dataset = datasets.load_dataset(str(folder), config.dataset_name, split=config.test_split, **kwargs)
    except ValueError as err:
        text = str(err)
        if "not found" in text.lower() or "unknown split" in text.lower() or "BuilderConfig" in text:
            raise missing(config, root, f"task {config.task!r}: {location} has no config {config.dataset_name!r} "
                                        f"with split {config.test_split!r} ({text.splitlines()[0]})", manifest) from None
        raise UserError(f"task {config.task!r}: cannot load {location} ({config.dataset_name}): {text}") from None
    except FileNotFoundError as err:
        raise missing(config, root, f"task {config.task!r}: cannot load {location} ({config.dataset_name}): {err}",
                      manifest) from None
    except Exception as err:  # offline Hub, unreadable Parquet, ...: say what and where, not a traceback
        raise missing(config, root, f"task {config.task!r}: cannot load {location} ({config.dataset_name}): "
                                    f"{type(err).__name__}: {err}", manifest) from None
    info = _manifest_info(manifest, config.dataset_name)
    if verified:
        info["verified_files"] = verified
    # This config's own content hash where the build records one (adding configs to a build must
    # not invalidate finished samples), else the build's, else the datasets fingerprint.
    config_info = info.get("config", {})
    fingerprint = str(config_info.get("content_sha256") or info.get("content_hash") or dataset._fingerprint)
    return LoadedDataset(dataset, location, revision, manifest, fingerprint, info, folder)


class ImageColumn:
    """Reads one encoded image of one row on demand, straight from the memory-mapped Arrow table.

    Only the bytes of the asked-for image are copied out; nothing is decoded here.
    """

    def __init__(self, dataset: datasets.Dataset, column: str, base_dir: Path | None = None) -> None:
        if column not in dataset.column_names:
            raise UserError(f"image column {column!r} not in the dataset (columns: {', '.join(dataset.column_names)})")
        self._table = dataset.select_columns([column]).with_format("arrow")
        self.column = column
        self.base_dir = base_dir

    def _cell(self, row: int) -> Any:
        return self._table[row].column(0)[0]

    def count(self, row: int) -> int:
        cell = self._cell(row)
        if not cell.is_valid:
            return 0
        return len(cell) if isinstance(cell, pa.ListScalar | pa.LargeListScalar) else 1

    def read(self, row: int, index: int) -> bytes:
        cell = self._cell(row)
        item = cell.values[index] if isinstance(cell, pa.ListScalar | pa.LargeListScalar) else cell
        data = item["bytes"].as_py() if "bytes" in item.type.names else None
        if data is None:
            path = item["path"].as_py() if "path" in item.type.names else None
            if not path:
                raise ValueError(f"image {index} of row {row} has neither bytes nor a path")
            file = Path(path) if Path(path).is_absolute() or self.base_dir is None else self.base_dir / path
            data = file.read_bytes()
        return data


class SharedImageColumn:
    """The images of rows that name theirs by `image_sha256`, read from the build's image table on demand."""

    def __init__(self, dataset: datasets.Dataset, table: contract.ImageTable) -> None:
        if contract.IMAGE_SHA256 not in dataset.column_names:
            raise UserError(f"the rows have no {contract.IMAGE_SHA256!r} column to find their images by "
                            f"(columns: {', '.join(dataset.column_names)})")
        self._hashes = dataset.select_columns([contract.IMAGE_SHA256]).with_format("arrow")
        self._table = table
        self.column = contract.IMAGES

    def _row(self, row: int) -> list[str]:
        return self._hashes[row].column(0)[0].as_py() or []

    def count(self, row: int) -> int:
        return len(self._row(row))

    def read(self, row: int, index: int) -> bytes:
        return self._table.data(self._row(row)[index])
