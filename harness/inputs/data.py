"""Find a task's dataset, verify its files and load its rows without reading a single image.

Where `dataset_path` is looked up, in order: `--data_dir DIR` (or, without the flag, the environment
variable `MMLONGEVAL_DATA_DIR`) as `DIR/<dataset_path>`; else the default cache
`~/.cache/mmlongeval/data/<dataset_path>`; else the Hub repo named by the task's `metadata.hub_repo`.
A folder given explicitly is the only local place searched, so a typo never silently reads another
build.

A build is read only when its manifest has the right shape (`builders.core.contract.manifest_schema`) and lists every file the
task reads; each file is opened, hashed and checked against the manifest, then read from the same memory
mapping (`harness.inputs.integrity`, `harness.inputs.parquet_split`). Data that cannot be verified this way (no manifest, a
malformed one, a file it does not list) is refused unless the run passes `--trust_unverified_data`; then its
files are still hashed, and the results say "unverified".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from builders.core import contract
from harness.config.task_config import TaskConfig
from harness.errors import HubUnavailableError, UserError, did_you_mean_path
from harness.inputs.build_files import (
    build_command_template,
    card_paths,
    file_inside,
    manifest_entries,
    missing,
    pattern_paths,
)
from harness.inputs.hub import (
    LOCAL_DATA_DIR,
    fetch_build,
    looks_like_repo_id,
    snapshot_commit,
    why_unavailable,
)
from harness.inputs.integrity import DataFile, open_files, verify_files
from harness.inputs.parquet_split import ImageColumn, SharedImageColumn, SplitFiles, image_table, source_rows

DATA_DIR_ENV = "MMLONGEVAL_DATA_DIR"
DEFAULT_DATA_DIR = Path("~/.cache/mmlongeval/data")
TRUST_FLAG = "--trust_unverified_data"
VERIFIED, UNVERIFIED = "verified", "unverified"
FILES = "files:"  # a data fingerprint's form since issue 99 (`files_fingerprint`); before, the manifest's content hash


def files_fingerprint(sha256s: Iterable[str]) -> str:
    """The data a run read, as its journal and results record it: `files:` and the sha256 of the files' sha256s (each
    hashed from the bytes its rows come from), in the order read."""
    return FILES + hashlib.sha256(" ".join(sha256s).encode()).hexdigest()


@dataclass
class LoadedDataset:
    location: str  # the local folder, or `hf://ORG/NAME@REVISION`
    revision: str | None  # Hub revision (tag/commit) when loaded from the Hub
    manifest: contract.BuildManifest | None  # the build's `build_manifest.json`, when it has one of the right shape
    fingerprint: str  # "files:" and the sha256 of the files read (`files_fingerprint`)
    info: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None  # the folder the files were read from (a build, or a Hub snapshot)
    split: SplitFiles | None = None  # the opened files the rows came from, for their images
    allowed: Path | None = None  # where paths of the folder may lead (a Hub snapshot's links: its repo cache)
    verified: bool = True  # every file read was checked against the manifest
    read_as_text: dict[str, str] = field(default_factory=dict)  # the columns the task reads as text: its keys

    def batches(self) -> Iterator[pa.Table]:
        """The evaluated split's rows a piece at a time, image columns left out, with their source row
        (`SplitFiles.batches`)."""
        assert self.split is not None, "the rows were let go of"
        return self.split.batches(self.read_as_text)

    def describe(self) -> dict[str, Any]:
        """What the results file records about the data."""
        return {"location": self.location, "revision": self.revision, "fingerprint": self.fingerprint, **self.info}

    @property
    def image_columns(self) -> list[str]:
        return self.split.image_columns if self.split is not None else []

    def image_column(self, docs: pa.Table, column: str, task: str) -> ImageColumn | SharedImageColumn:
        """A reader of one image column of `docs`: the rows' own bytes, or, for the contract's `images`
        column of a shared-storage build (or unverified data with an image table), the build's image table."""
        if column == contract.IMAGES and column not in self.image_columns and self.folder is not None:
            table = self.folder / contract.IMAGE_TABLE_CONFIG
            if contract.manifest_image_storage(self.manifest) == contract.SHARED or (
                not self.verified and table.is_dir()
            ):
                images, files = self._image_table()
                return SharedImageColumn(docs, images, files, self.location)
        assert self.split is not None
        return ImageColumn(self.split, column, source_rows(docs, task), self.folder, self.allowed)

    def _image_table(self) -> tuple[contract.ImageTable, list[DataFile]]:
        """The build's image table, and the files it reads."""
        assert self.folder is not None
        if self.manifest is not None and self.manifest.get("image_table"):
            files = verify_files(
                self.folder, self.manifest["image_table"]["files"], self.folder / contract.MANIFEST_NAME, self.allowed
            )
        else:
            names = sorted(
                p.relative_to(self.folder).as_posix()
                for p in (self.folder / contract.IMAGE_TABLE_CONFIG).glob(f"{contract.IMAGE_TABLE_SPLIT}-*.parquet")
            )
            files = open_files([file_inside(self.folder, name, self.allowed) for name in names])
            if not files:
                raise UserError(
                    f"{self.location}: the rows name their images by {contract.IMAGE_SHA256!r} but "
                    f"its image table ({contract.IMAGE_TABLE_CONFIG}/) holds no Parquet file"
                )
        key = (str(self.folder), tuple(f.sha256 for f in files))
        if key not in _IMAGE_TABLES:
            _IMAGE_TABLES[key] = image_table(files, self.location), files
        return _IMAGE_TABLES[key]


# One index per image table (by its files' hashes) per process: the tasks of one build share it.
_IMAGE_TABLES: dict[tuple[str, tuple[str, ...]], tuple[contract.ImageTable, list[DataFile]]] = {}


def local_root(data_dir: Path | str | None) -> tuple[Path, bool]:
    """The folder that holds local builds, and whether the user named it explicitly."""
    try:
        if data_dir is not None:
            return contract.expanded(data_dir), True
        if os.environ.get(DATA_DIR_ENV):
            return contract.expanded(os.environ[DATA_DIR_ENV]), True
        return contract.expanded(DEFAULT_DATA_DIR), False
    except ValueError as err:
        where = f"--data_dir {data_dir}" if data_dir is not None else DATA_DIR_ENV
        raise UserError(f"{where}: {err}") from None


def _manifest_info(manifest: contract.BuildManifest | None, config_name: str | None) -> dict[str, Any]:
    """The manifest fields worth recording with results: hash, builder, seed, source, contract, caveats, this
    config."""
    if not manifest:
        return {}

    def scalars(d: object) -> dict[str, Any]:
        return {k: v for k, v in d.items() if not isinstance(v, dict | list)} if isinstance(d, dict) else {}

    info: dict[str, Any] = {
        k: v
        for k, v in scalars(manifest).items()
        if k in ("content_hash", "builder", "builder_version", "format", "version", "seed")
    }
    request = manifest.get("request")
    if isinstance(request, dict):
        info.update({k: v for k, v in scalars(request).items() if k in ("mode", "seed", "rows", "limit")})
        if isinstance(request.get("source"), dict):
            info["source"] = scalars(request["source"])
        elif isinstance(request.get("source"), str):  # MMLongBench and MileBench: "fixture-v2", "release"
            info["source"] = {"kind": re.sub(r"-v\d+$", "", request["source"]), "spec": request["source"]}
    if isinstance(manifest.get("contract"), dict):
        info["contract"] = scalars(manifest["contract"])  # image storage and token rule
    if isinstance(manifest.get("caveats"), dict) and manifest["caveats"]:
        info["caveats"] = {str(kind): str(text) for kind, text in manifest["caveats"].items()}  # synthetic, limited
    configs = manifest.get("configs")
    if isinstance(configs, dict) and config_name in configs:
        info["config"] = scalars(configs[config_name])
    return info


def load_task_dataset(
    config: TaskConfig, data_dir: Path | str | None = None, trust_unverified: bool = False
) -> LoadedDataset:
    try:
        hub = contract.parse_hub_location(data_dir)
        repo = hub.repo_for(config.dataset_path) if hub else None
    except ValueError as err:
        raise UserError(f"--data_dir {err}") from None
    if hub is not None and repo is not None:
        return _load_from_hub(config, repo, hub.revision, str(data_dir), trust_unverified)
    if data_dir is not None and looks_like_repo_id(data_dir):
        raise UserError(
            f"--data_dir {data_dir}: no such folder; for the Hub dataset repo {data_dir} write "
            f"--data_dir hf://{data_dir} (hf://{data_dir}@v1.0.0 for a tag or commit)"
        )
    root, explicit = local_root(data_dir)
    try:
        given = contract.expanded(config.dataset_path)
    except ValueError as err:
        raise UserError(
            f"{config.source}:1: task {config.task!r}: dataset_path {config.dataset_path!r}: {err}"
        ) from None
    local = given if given.is_absolute() else root / config.dataset_path
    if local.is_dir():
        return _load(config, local.resolve(), root, str(local.resolve()), None, trust_unverified)
    hub_repo = config.metadata.get("hub_repo")
    if hub_repo and not explicit:
        revision = config.dataset_kwargs.get("revision") or config.metadata.get("hub_revision")
        return _load_from_hub(config, str(hub_repo), revision, str(root), trust_unverified)
    build = _build_in(root)
    if explicit and build is not None:  # `--data_dir data/mmneedle`: the folder `builders build` printed
        raise UserError(
            f"--data_dir {root} is a {build} build (it holds {contract.MANIFEST_NAME}); --data_dir takes "
            f"the folder holding the builds: use --data_dir {root.parent}"
        )
    if explicit and not root.exists():  # the same for every task: said once (`DatasetMissingError.combined`)
        # a typo of the folder beside that holds this build (`dta` for `data`): that name, not a second build
        near = did_you_mean_path(root, lambda folder: (folder / config.dataset_path).is_dir())
        if near:
            raise UserError(f"--data_dir {root}: no such folder{near}")
        raise missing(config, root, f"--data_dir {root}: no such folder")
    looked = [str(local)] + ([f"Hub repo {hub_repo}"] if hub_repo and not explicit else [])
    env_note = "" if explicit else f" (set --data_dir or ${DATA_DIR_ENV} to use another folder)"
    raise missing(
        config,
        root,
        # the same words for every task of the build: said once, however many tasks read it (`combined`)
        f"dataset {config.dataset_path!r} not found; looked in {', '.join(looked)}{env_note}",
    )


def _build_in(folder: Path) -> str | None:
    """The benchmark a build folder holds (its manifest's `builder`, else the folder's name), or None for a folder
    that is not a build."""
    manifest_path = folder / contract.MANIFEST_NAME
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(contract.read_regular(manifest_path, contract.MANIFEST_MOST, "a build manifest"))
    except (OSError, ValueError):
        manifest = None
    builder = manifest.get("builder") if isinstance(manifest, dict) else None
    return builder.rpartition(".")[2] if isinstance(builder, str) and builder else folder.name  # builders.mmneedle


def _load_from_hub(
    config: TaskConfig, repo: str, revision: str | None, hint_dir: str, trust_unverified: bool
) -> LoadedDataset:
    """A pushed build, fetched into the Hub cache (only what the task reads) and read as a local one: its files
    are verified against the manifest pushed with them (`harness.inputs.hub` says what that proves)."""
    location = f"hf://{repo}" + (f"@{revision}" if revision else "")
    try:
        folder = fetch_build(repo, revision, config.dataset_name)
    except Exception as err:  # offline without a cached snapshot, no such repo or revision, no network
        raise HubUnavailableError(
            location,
            why_unavailable(repo, revision, err),
            data_dir=LOCAL_DATA_DIR,
            builder_command=build_command_template(config, None),
            dataset_name=config.dataset_name,
        ) from None
    # A snapshot's files are links into the repo's blob store, beside `snapshots/`.
    allowed = folder.parent.parent if snapshot_commit(folder) else None
    # A config the pushed build lacks is built here, not "--out hf://...".
    hint_root = Path(LOCAL_DATA_DIR) if contract.parse_hub_location(hint_dir) else Path(hint_dir)
    loaded = _load(config, folder, hint_root, location, revision, trust_unverified, allowed)
    loaded.info["commit"] = snapshot_commit(folder)
    return loaded


def _refused(location: str, problem: str) -> UserError:
    return UserError(
        f"{location}: cannot verify this data: {problem}; rebuild it with `builders build`, or pass "
        f"{TRUST_FLAG} to read it unverified"
    )


def _load(
    config: TaskConfig,
    folder: Path,
    root: Path,
    location: str,
    revision: str | None,
    trust_unverified: bool,
    allowed: Path | None = None,
) -> LoadedDataset:
    """Load one config's split from a local folder (a build, or a Hub snapshot): the files it reads verified
    against the manifest, then read from the very bytes that were hashed."""
    manifest, problem = contract.read_checked_manifest(folder)
    if problem and not trust_unverified:
        raise _refused(location, problem)
    patterns = config.dataset_kwargs.get("data_files")
    entries: list[contract.ManifestFile] | None = (
        None  # the manifest's entries of the files read, when it lists them all
    )
    if patterns is not None:  # the task names its files: each must be one the manifest lists
        paths = pattern_paths(folder, patterns, config.test_split, allowed)
        listed = {folder / f["path"]: f for f in contract.data_files(manifest)} if manifest else {}
        unlisted = [p for p in paths if p not in listed]
        if manifest and unlisted:
            problem = f"the build manifest does not list {unlisted[0]}"
            if not trust_unverified:
                raise _refused(location, problem)
        elif manifest:
            entries = [listed[p] for p in paths]
    elif manifest is not None:
        entries = manifest_entries(config, folder, manifest, root, location)
        paths = [folder / f["path"] for f in entries]
    else:
        paths = card_paths(config, folder, allowed)
    if not paths:
        raise missing(
            config,
            root,
            f"task {config.task!r}: {location} has no data files for config "
            f"{config.dataset_name!r}, split {config.test_split!r}",
            manifest,
        )
    if entries is not None:
        files = verify_files(folder, entries, folder / contract.MANIFEST_NAME, allowed)  # before a row is read
    else:
        files = open_files(paths)
    names = [Path(os.path.relpath(p, folder)).as_posix() for p in paths]
    return _loaded(config, folder, location, revision, manifest, files, names, problem, allowed)


def _loaded(
    config: TaskConfig,
    folder: Path,
    location: str,
    revision: str | None,
    manifest: contract.BuildManifest | None,
    files: list[DataFile],
    names: list[str],
    problem: str | None,
    allowed: Path | None,
) -> LoadedDataset:
    read = [{"path": name, "sha256": f.sha256} for name, f in zip(names, files, strict=True)]
    info = _manifest_info(manifest, config.dataset_name)
    if problem is None:
        info.update(verification=VERIFIED, verified_files=read)
    else:
        info.update(verification=UNVERIFIED, unverified_reason=problem, unverified_files=read)
    # What was read: the sha256 of the read files' own (hashed from the bytes the rows come from), never the
    # manifest's `content_sha256`, which a manifest whose file hashes were rewritten still states. One config's
    # files, so adding configs to a build invalidates no finished sample.
    fingerprint = files_fingerprint(f.sha256 for f in files)
    info["config"] = {**info.get("config", {}), "content_sha256": fingerprint.removeprefix(FILES)}
    split = SplitFiles(files, location, verified=problem is None)
    # The columns the task names as its prompt and target (a hook or a template reads what it reads).
    named = {key: getattr(config, key) for key in ("doc_to_text", "doc_to_target")}
    read_as_text = {value: key for key, value in named.items() if isinstance(value, str) and value in split.columns}
    return LoadedDataset(
        location, revision, manifest, fingerprint, info, folder, split, allowed, problem is None, read_as_text
    )
