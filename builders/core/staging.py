"""Where a build lands: a temporary folder next to the target, moved into place only when
complete (its manifest, `builders.core.contract`, written last).

A failed or killed build never leaves a folder that looks complete: the dataset is assembled in
`OUT/.<name>.tmp-<pid>-<random>` and renamed to `OUT/<name>` after its manifest is written. A
target that already holds a different build (its manifest's `request` differs) is an error
unless `overwrite`; a build that differs only in its configs extends it (`builders.core.base_build`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import shlex
import shutil
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from builders.core import contract
from builders.core.errors import BuildError

_TMP_PATTERN = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)-[0-9a-f]+$")


def read_manifest(folder: Path) -> contract.BuildManifest | None:
    """The folder's manifest (None if it has none); an unreadable one is a `BuildError`."""
    try:
        return contract.read_manifest(folder)
    except contract.ManifestError as exc:
        raise BuildError(str(exc)) from None


def environment() -> dict[str, str]:
    """Library versions that determine the output bytes (recorded, not compared)."""
    versions = {"python": platform.python_version()}
    for package in ("pillow", "pyarrow", "datasets", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def describe_difference(old: Mapping[str, object], new: Mapping[str, object]) -> str:
    keys = sorted(set(old) | set(new))
    if any(old.get(k) != new.get(k) for k in keys if k != "configs"):
        keys = [k for k in keys if k != "configs"]  # configs alone can be added to a build: not the difference
    parts = [f"{k}: {json.dumps(old.get(k))} -> {json.dumps(new.get(k))}" for k in keys if old.get(k) != new.get(k)]
    # Short differences first (`limit: 2 -> null`), so the cut below never hides one behind a long setting.
    text = "; ".join(sorted(parts, key=len))
    return text if len(text) < 400 else text[:400] + "..."


def same_build_hint(
    existing: contract.BuildManifest, request: dict[str, Any], out_dir: Path, command: list[str] | None = None
) -> str:
    """The command that adds this request's configs to the build in place, with the flags that build recorded
    (`contract.BUILD_COMMAND`); empty when it recorded none (a build made through the Python API).

    Where this build's flags are already those (`command`), repeating them cannot help: the source itself
    depends on which configs are asked (MMLongBench's `fixture:full` writes pools for configs past 128K), so
    the hint is to build the two sets of configs together, replacing the build in place."""
    recorded = existing.get(contract.BUILD_COMMAND)
    configs = request.get("configs")
    if not (isinstance(recorded, list) and recorded and all(isinstance(part, str) for part in recorded)):
        return ""
    if not (isinstance(configs, list) and configs and all(isinstance(name, str) for name in configs)):
        return ""
    if command is not None and list(command) == recorded:
        held = existing.get("request", {}).get("configs")
        held = [name for name in held if isinstance(name, str)] if isinstance(held, list) else []
        together = [
            *recorded,
            "--configs",
            ",".join(dict.fromkeys([*held, *configs])),
            "--out",
            str(out_dir),
            "--overwrite",
        ]
        return (
            "it was built with these same flags, but with these configs they give another source: to keep "
            f"its configs and add these, build all together: {shlex.join(together)}; or build these into "
            "another --out; or "
        )
    added = [*recorded, "--configs", ",".join(configs), "--out", str(out_dir)]
    return f"to add configs to it, repeat the flags it was built with: {shlex.join(added)}; or "


class StagedOutput:
    """Context manager yielding a temporary folder that becomes `out_dir/name` on `commit()`."""

    def __init__(
        self,
        out_dir: Path,
        name: str,
        request: dict[str, Any],
        overwrite: bool = False,
        command: list[str] | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.name = name
        self.target = self.out_dir / name
        self.request = request
        self.overwrite = overwrite
        self.command = command  # this build's recorded flags (`contract.BUILD_COMMAND`), for the hint
        self.base_hash: str | None = None  # the content hash of the build in place that this one extends
        self.staging: Path | None = None
        self._committed = False

    def check_target(self) -> None:
        """Fail early, before any work, if the target holds something else."""
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise BuildError(f"output path {self.out_dir} exists and is not a folder")
        if not self.target.exists():
            return
        if not self.target.is_dir():
            raise BuildError(f"{self.target} exists and is not a folder")
        existing = read_manifest(self.target)
        if existing is None:
            if any(self.target.iterdir()) and not self.overwrite:
                raise BuildError(f"{self.target} exists and holds no build manifest; remove it or pass --overwrite")
            return
        if self.base_hash is not None and existing.get("content_hash") == self.base_hash:
            return  # the build this one extends, still as it was
        if existing.get("request") != self.request and not self.overwrite:
            if self.base_hash is not None:
                raise BuildError(f"{self.target} changed while this build was extending it; run the build again")
            difference = describe_difference(existing.get("request", {}), self.request)
            hint = same_build_hint(existing, self.request, self.out_dir, self.command)
            raise BuildError(
                f"{self.target} already holds a different build ({difference}); {hint}pass --overwrite to replace it"
            )

    def __enter__(self) -> Path:
        self.check_target()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._remove_abandoned()
        self.staging = self.out_dir / f".{self.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        self.staging.mkdir()
        return self.staging

    def commit(self) -> Path:
        """Swap the finished staging folder into place (two renames on the same file system)."""
        assert self.staging is not None
        self.check_target()  # another process may have written the target meanwhile
        old = None
        if self.target.exists():
            old = self.out_dir / f".{self.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
            self.target.rename(old)
        self.staging.rename(self.target)
        self._committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def __exit__(self, *exc: object) -> None:
        if not self._committed and self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)

    def _remove_abandoned(self) -> None:
        """Delete staging folders of this name left by builds that were killed."""
        for entry in self.out_dir.iterdir():
            match = _TMP_PATTERN.match(entry.name)
            if not match or match["name"] != self.name or not entry.is_dir():
                continue
            if not _pid_alive(int(match["pid"])):
                shutil.rmtree(entry, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
