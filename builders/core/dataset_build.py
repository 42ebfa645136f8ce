"""The steps every build shares: a staging folder, one Parquet writer per config, the image table of a
shared-storage build, the content hash, the card and the manifest, then an atomic publish.

    with DatasetBuild(out_dir, info, {"configs": [...], ...}, inputs=..., image_storage="embedded") as build:
        for config in build.pending:
            with build.config_writer(config, features) as writer:
                for row, nbytes in rows(config):
                    writer.write(row, nbytes)
            build.add_config(writer.close(), {"extra": "manifest fields"})
        path = build.publish(stats={...}, card_context={...})

A benchmark brings its rows, features, request (what decides its output) and card template
(`dataset_cards/<name>/card.md.jinja`); everything here is the same for every benchmark. A folder that
holds the same request with other configs is extended, not replaced (`builders.core.base_build`): `pending`
lists what is left to write.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Features

from builders.core import contract
from builders.core.base_build import CONFIGS_KEY, BaseBuild, extends, ordered
from builders.core.card import CardConfig, front_matter, render_card
from builders.core.errors import BuildError
from builders.core.image_table_writer import ImageTableWriter
from builders.core.images import EncodedImage
from builders.core.parquet_writer import SHARD_BYTES, ConfigResult, ShardedParquetWriter
from builders.core.staging import StagedOutput, environment, read_manifest
from builders.core.store import BudgetedStore, encoded_store


@dataclass(frozen=True)
class BuilderInfo:
    """Who builds a dataset: its folder name, the builder module and version, and the card's metadata
    (`license`, `pretty_name`, `language`, `task_categories`, `tags`, ...; see `DatasetCardData`)."""

    name: str
    module: str
    version: str
    card: Mapping[str, Any] = field(default_factory=dict)


def size_category(rows: int) -> str:
    """The Hub's `size_categories` label for a number of rows."""
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < bound:
            return label
    return "1M<n<10M"


def files_entry(result: ConfigResult) -> contract.ConfigFiles:
    return {
        "rows": result.num_rows,
        "num_bytes": result.num_bytes,
        "content_sha256": result.content_sha256,
        "files": [{"path": f.path, "num_bytes": f.num_bytes, "sha256": f.sha256} for f in result.files],
    }


class DatasetBuild:
    """One build into `out_dir/<info.name>`: use as a context manager; nothing is visible at the target
    until `publish()` succeeds, and a failure or kill leaves no folder that looks complete."""

    def __init__(
        self,
        out_dir: str | Path,
        info: BuilderInfo,
        request: Mapping[str, Any],
        *,
        inputs: Mapping[str, Any] | None = None,
        image_storage: str = contract.EMBEDDED,
        overwrite: bool = False,
        shard_bytes: int = SHARD_BYTES,
        config_order: Sequence[str] | None = None,
        command: Sequence[str] | None = None,
        caveats: Mapping[str, str] | None = None,
        card: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            contract.check_image_storage(image_storage)
        except ValueError as exc:
            raise BuildError(str(exc)) from None
        self.info = info
        self.image_storage = image_storage
        self.shard_bytes = shard_bytes
        # As it will read back from the manifest (tuples become lists), so rebuilds compare equal.
        self.request = json.loads(
            json.dumps(
                {"benchmark": info.name, "builder_version": info.version, **request, "image_storage": image_storage}
            )
        )
        self.inputs = dict(inputs or {})
        self.config_order = config_order
        self.command = list(command) if command is not None else None
        self.caveats = dict(caveats or {})
        self.card_fields = {**info.card, **(card or {})}
        self.overwrite = overwrite
        self._staged = StagedOutput(Path(out_dir), info.name, self.request, overwrite, self.command)
        self._configs: dict[str, dict[str, Any]] = {}
        self._features: dict[str, Features] = {}
        self.staging: Path | None = None
        self.images: ImageTableWriter | None = None  # shared storage: the image table
        self._kept: BudgetedStore[EncodedImage] | None = None  # embedded storage: the images rows show by reference
        self.base: BaseBuild | None = None  # the build in place that this one adds configs to
        self._looked_for_base = False
        self._keeping = threading.Lock()
        # The configs this build must write: those of the request, less those the build in place holds.
        self.pending: list[str] = list(self.request.get(CONFIGS_KEY) or [])

    @property
    def target(self) -> Path:
        return self._staged.target

    def __enter__(self) -> DatasetBuild:
        self.find_base()
        self.staging = self._staged.__enter__()
        if self.image_storage == contract.SHARED:
            self.images = ImageTableWriter(self.staging / ".image_table.spool")
        if self.base is not None and self.pending:
            for kind, text in (self.base.manifest.get("caveats") or {}).items():
                self.add_caveat(kind, str(text))  # the configs carried over keep what limits them
            for name, entry in self.base.configs.items():
                self._features[name] = self.base.carry_config(name, self.staging)
                self._configs[name] = dict(entry.items())
            if self.images is not None:
                self.base.carry_images(self.images.add)
        return self

    def find_base(self) -> None:
        """Extend the build in place when it differs from this one only in its configs: sets `base`, `pending`
        and the request's configs (all the build will hold). Runs on entering; call it first to plan."""
        if self._looked_for_base:
            return
        self._looked_for_base = True
        existing = read_manifest(self.target) if self.target.is_dir() else None
        if existing is None or self.overwrite or not extends(existing.get("request"), self.request):
            return
        self.base = BaseBuild(self.target, existing)
        requested = self.request[CONFIGS_KEY]
        self.pending = [name for name in requested if name not in self.base.configs]
        self.request[CONFIGS_KEY] = ordered([*self.base.configs, *requested], self.config_order)
        self._staged.request = self.request
        self._staged.base_hash = self.base.content_hash

    def __exit__(self, *exc: object) -> None:
        if self.images is not None:
            self.images.close()
        if self._kept is not None:
            self._kept.close()
        self._staged.__exit__(*exc)

    def keep_image(self, image: EncodedImage) -> None:
        """Hold an image for the rows that show it by reference (`contract_rows.KeptImage`): in the image table
        (shared storage) or, for the rows to embed it, in a spool file. An image held already is skipped. Safe to
        call from worker threads."""
        if self.images is not None:
            self.images.add(image)
            return
        assert self.staging is not None, "use DatasetBuild as a context manager"
        with self._keeping:
            if self._kept is None:
                self._kept = encoded_store(self.staging / ".kept_images.spool", 0)
            if image.sha256 not in self._kept:
                self._kept.put(image.sha256, image)

    def kept_image(self, sha256: str) -> EncodedImage:
        """An image given to `keep_image`."""
        if self.images is not None:
            return self.images.get(sha256)
        assert self._kept is not None, "no image was kept"
        return self._kept.get(sha256)

    def add_caveat(self, kind: str, text: str) -> None:
        """Flag the build (`synthetic`, `limited`, ...); a second text for a kind already flagged is added to it."""
        held = self.caveats.get(kind)
        if held is None:
            self.caveats[kind] = text
        elif text not in held:
            self.caveats[kind] = f"{held}; {text}"

    def config_writer(self, name: str, features: Features) -> ShardedParquetWriter:
        """The Parquet writer of one config; its features must carry the contract's columns."""
        assert self.staging is not None, "use DatasetBuild as a context manager"
        if self.base is not None and name in self.base.configs:
            raise ValueError(
                f"{self.info.name}: config {name!r} is carried over from {self.target}; "
                "write only the configs in `build.pending`"
            )
        if name == contract.IMAGE_TABLE_CONFIG or name in self._features:
            raise ValueError(f"{self.info.name}: config name {name!r} is taken")
        contract.check_features(features, self.image_storage, f"{self.info.name} config {name}")
        self._features[name] = features
        return ShardedParquetWriter(self.staging, name, features, contract.row_digest, shard_bytes=self.shard_bytes)

    def add_config(self, result: ConfigResult, extra: Mapping[str, Any] | None = None) -> None:
        """Record a written config; `extra` holds the benchmark's own manifest fields for it. A config without
        rows is an error: a release file that yields none is not a dataset."""
        if result.num_rows == 0:
            raise BuildError(f"{self.info.name}: config {result.name} has no rows; its source holds none")
        self._configs[result.name] = {**(extra or {}), **files_entry(result)}

    def publish(self, stats: Mapping[str, Any] | None = None, card_context: Mapping[str, Any] | None = None) -> Path:
        """Write the image table (shared storage), the card and the manifest, then move the folder into place.
        A build that had nothing to add to the build in place leaves it untouched."""
        assert self.staging is not None, "use DatasetBuild as a context manager"
        if self.base is not None and not self.pending:
            return self.target
        order = ordered([*self.request.get(CONFIGS_KEY, []), *self._configs], None)
        self._configs = {name: self._configs[name] for name in order if name in self._configs}
        table = None
        if self._kept is not None:
            self._kept.close()  # the spool must not be published with the data
        if self.images is not None:
            table = self.images.write(self.staging, self.shard_bytes)
            self.images.close()
        manifest = self._manifest(table, stats or {})
        (self.staging / "README.md").write_text(self._card(manifest, table, card_context or {}), encoding="utf-8")
        contract.write_manifest(self.staging, manifest)  # last: a folder with a manifest is complete
        return self._staged.commit()

    def _manifest(self, table: ConfigResult | None, stats: Mapping[str, Any]) -> contract.BuildManifest:
        hashes = {name: info["content_sha256"] for name, info in self._configs.items()}
        if table is not None:
            hashes[contract.IMAGE_TABLE_CONFIG] = table.content_sha256
        content = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode())
        manifest: dict[str, Any] = {
            "format": contract.MANIFEST_FORMAT,
            "benchmark": self.info.name,
            "builder": self.info.module,
            "builder_version": self.info.version,
            "content_hash": "sha256:" + content.hexdigest(),
            "contract": {
                "image_storage": self.image_storage,
                "token_rule": contract.TOKEN_RULE,
                "image_placeholder": contract.IMAGE_PLACEHOLDER,
            },
            "request": self.request,
            "inputs": self.inputs,
            "caveats": self.caveats,
            "environment": environment(),  # of the latest step
            "stats": dict(stats),  # of the latest step
            "steps": self._steps(stats),
            "configs": self._configs,
        }
        if self.command is not None:
            manifest[contract.BUILD_COMMAND] = self.command
        if table is not None:
            manifest["image_table"] = {
                "config": contract.IMAGE_TABLE_CONFIG,
                "images": table.num_rows,
                **files_entry(table),
            }
        if not contract.is_build_manifest(manifest):  # the shape the harness reads (`contract.manifest_schema`)
            raise BuildError(f"{self.info.name}: not a build manifest: {contract.manifest_problem(manifest)}")
        return manifest

    def _steps(self, stats: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One entry per build that wrote configs into this folder: which, with what libraries."""
        written = [name for name in self._configs if self.base is None or name not in self.base.configs]
        step = {"configs": written, "environment": environment(), "stats": dict(stats)}
        return [*(self.base.steps() if self.base is not None else []), step]

    def _card(self, manifest: contract.BuildManifest, table: ConfigResult | None, context: Mapping[str, Any]) -> str:
        configs = [
            CardConfig(name, self._features[name], info["rows"], info["num_bytes"])
            for name, info in self._configs.items()
        ]
        if table is not None:
            configs.append(
                CardConfig(table.name, Features(contract.image_table_features()), table.num_rows, table.num_bytes)
            )
        rows = sum(info["rows"] for info in self._configs.values())
        card = dict(self.card_fields)
        if self.caveats:  # flagged where the Hub and its search see it: the tags and a field of their own
            card["tags"] = [*card.get("tags", []), *(kind for kind in self.caveats if kind not in card.get("tags", []))]
            card["caveats"] = dict(self.caveats)
        yaml_text = front_matter(configs, **card, size_categories=[size_category(rows)])
        return render_card(self.info.name, yaml_text, manifest=manifest, configs=manifest["configs"], **context)
