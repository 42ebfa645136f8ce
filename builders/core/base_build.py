"""Adding configs to a build already in place, without rebuilding the configs it holds.

A build whose manifest's request equals the new request in everything but `configs` is extended rather
than replaced: the configs it holds are carried over (their files copied into the new staging folder and
checked against the manifest's sha256 on the way, their manifest entries kept), only the missing ones are
built, and a shared-storage build's image table is written again as the union of the old and new images.
A config's rows do not depend on which other configs are built beside it, so the result is, byte for byte,
the folder one build of all the configs would have made; only the manifest's `environment`, `stats` and
`steps` (one entry per build that added configs) tell the two apart.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Features

from builders.core import contract
from builders.core.errors import BuildError
from builders.core.images import EncodedImage
from builders.core.release_paths import relative_name, release_path

CONFIGS_KEY = "configs"  # the request field that lists a build's configs; every other field must match


def without_configs(request: Mapping[str, object]) -> dict[str, Any]:
    return {key: value for key, value in request.items() if key != CONFIGS_KEY}


def extends(existing_request: object, request: Mapping[str, object]) -> bool:
    """Whether a build made with `existing_request` can take the configs of `request` (the same build but
    for the configs it lists)."""
    return (
        isinstance(existing_request, Mapping)
        and CONFIGS_KEY in request
        and CONFIGS_KEY in existing_request
        and without_configs(existing_request) == without_configs(request)
    )


def ordered(names: Sequence[str], order: Sequence[str] | None) -> list[str]:
    """`names` in the benchmark's canonical `order` (names it does not list go last, in their own order)."""
    if order is None:
        return list(dict.fromkeys(names))
    rank = {name: i for i, name in enumerate(order)}
    return sorted(dict.fromkeys(names), key=lambda name: rank.get(name, len(rank)))


class BaseBuild:
    """The build in place that a new build extends."""

    def __init__(self, folder: Path, manifest: contract.BuildManifest) -> None:
        self.folder = folder
        self.manifest = manifest
        self.configs: dict[str, contract.ConfigFiles] = dict(manifest.get("configs") or {})

    @property
    def _where(self) -> str:
        """Where a file path of the base comes from, for messages: the paths its manifest lists stay inside it."""
        return f"{self.folder / contract.MANIFEST_NAME}: file"

    @property
    def content_hash(self) -> str | None:
        return self.manifest.get("content_hash")

    def steps(self) -> list[dict[str, Any]]:
        """The base's build history (a build older than `steps` was one step)."""
        steps = self.manifest.get("steps")
        if isinstance(steps, list):
            return list(steps)
        return [
            {
                "configs": list(self.configs),
                "environment": self.manifest.get("environment", {}),
                "stats": self.manifest.get("stats", {}),
            }
        ]

    def carry_config(self, name: str, staging: Path) -> Features:
        """Copy config `name`'s files into `staging`, checking each against the manifest; its features."""
        features = None
        for entry in self.configs[name].get("files", []):
            target = staging / relative_name(entry.get("path"), self._where)
            target.parent.mkdir(parents=True, exist_ok=True)
            self._copy_checked(entry, target)
            if features is None:
                features = Features.from_arrow_schema(pq.read_schema(target))
        if features is None:
            raise BuildError(
                f"{self.folder / contract.MANIFEST_NAME}: config {name} lists no files; rebuild it with --overwrite"
            )
        return features

    def carry_images(self, add: Any) -> None:
        """Pass every image of the base's image table to `add(EncodedImage)`, checking its files first."""
        table = self.manifest.get("image_table")
        if not isinstance(table, Mapping):
            return
        for entry in table.get("files", []):
            path = release_path(self.folder, entry.get("path"), self._where)
            self._check(entry, path)
            for batch in pq.ParquetFile(path).iter_batches(columns=["sha256", "image", "width", "height"]):
                for row in batch.to_pylist():
                    add(EncodedImage(row["image"]["bytes"], row["sha256"], row["width"], row["height"]))

    def _copy_checked(self, entry: Mapping[str, object], target: Path) -> None:
        source = release_path(self.folder, entry.get("path"), self._where)
        self._check(entry, source, copy_to=target)
        shutil.copystat(source, target)

    def _check(self, entry: Mapping[str, object], path: Path, copy_to: Path | None = None) -> None:
        """Hash `path` (copying it to `copy_to` on the way) and compare with the manifest's sha256."""
        try:
            actual = contract.file_sha256(path, copy_to)
        except FileNotFoundError:
            raise BuildError(f"{path} is missing from the build being extended; rebuild with --overwrite") from None
        if actual != entry.get("sha256"):
            raise BuildError(
                f"{path} does not match its manifest (sha256 {actual[:12]}..., expected "
                f"{str(entry.get('sha256'))[:12]}...): the build being extended is damaged; "
                "rebuild with --overwrite"
            )
