"""Which files of a build a task reads, each kept inside the build's folder: the manifest's entries for its config
and split, or (data without a usable manifest) the card's data files or the task's `data_files` patterns; and the
error a missing config or split gets, with the command that builds it.

`datasets` is imported only where it is called (data without a manifest, a `process_docs` that takes a
`datasets.Dataset`), and quiet there (`datasets_quiet`): its "Generating test split" and "Map"/"Filter" lines, which a
run's own bars already cover, are not printed.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from builders.core import contract
from harness.config.task_config import TaskConfig
from harness.errors import DatasetMissingError, UserError
from harness.inputs.integrity import resolve_inside

# A task's `metadata.builder_source`: the official release (`hf://ZhaoweiWang/MMLongBench`) that its `builder_command`'s
# `RELEASE_DIR` stands for, as the README builds it. It only describes the task: not part of its identity.
BUILDER_SOURCE = "builder_source"
RELEASE_DIR = "RELEASE_DIR"


def missing(
    config: TaskConfig,
    root: Path | str,
    reason: str,
    manifest: contract.BuildManifest | None = None,
    held: tuple[str, str] | None = None,
) -> DatasetMissingError:
    template = build_command_template(config, manifest)
    command = template.format(dataset_name=config.dataset_name or "", data_dir=root) if template else ""
    return DatasetMissingError(
        reason,
        f"; build it with: {command}" if template else "",
        builder_command=template,
        dataset_name=config.dataset_name,
        data_dir=str(root),
        held=held,
    )


def build_command_template(config: TaskConfig, manifest: contract.BuildManifest | None) -> str | None:
    """How to build a missing config: the command that made the build already in place (its source, limit
    and seed: the user's own), else the task's `metadata.builder_command`; `{dataset_name}` and
    `{data_dir}` are filled in later."""
    command = manifest.get("build_command") if manifest is not None else None  # `contract.BUILD_COMMAND`
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        escaped = shlex.join(command).replace("{", "{{").replace("}", "}}")
        return escaped + " --configs {dataset_name} --out {data_dir}"
    template = config.metadata.get("builder_command")
    if not template:
        return None
    source = config.metadata.get(BUILDER_SOURCE)  # the official release, where `RELEASE_DIR` stands for it
    return str(template).replace(RELEASE_DIR, str(source)) if source else str(template)


def pattern_paths(folder: Path, patterns: Any, split: str, allowed: Path | None) -> list[Path]:
    """The files a task's `dataset_kwargs.data_files` name for `split` (globs relative to the folder)."""
    if isinstance(patterns, dict):
        patterns = patterns.get(split, [])
    patterns = [patterns] if isinstance(patterns, str) else list(patterns or [])
    paths: list[Path] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise UserError(f"dataset_kwargs.data_files: {pattern!r} is not a pattern inside {folder}")
        for path in sorted(folder.glob(pattern)):
            paths.append(file_inside(folder, str(path.relative_to(folder)), allowed))
    return paths


def file_inside(folder: Path, relative: str, allowed: Path | None) -> Path:
    """`folder / relative`, as named (a Hub snapshot's link, not its blob), once it is known to stay inside."""
    try:
        resolve_inside(folder, relative, allowed)
    except ValueError as err:
        raise UserError(f"{folder}: data file {err}") from None
    return folder / relative


@contextmanager
def datasets_quiet() -> Iterator[None]:
    """`datasets`' progress bars and its logging below errors off inside, as they were after."""
    import datasets

    bars = datasets.is_progress_bar_enabled()
    verbosity = datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()


def card_paths(config: TaskConfig, folder: Path, allowed: Path | None) -> list[Path]:
    """The files `datasets` would read for the split (the card's `configs:`, or its default layout): how data
    without a usable manifest is found. Its lock files go to a folder of their own, removed after."""
    import datasets  # here only: a build with its manifest is read without it

    with tempfile.TemporaryDirectory() as scratch, datasets_quiet():
        try:
            builder = datasets.load_dataset_builder(str(folder), config.dataset_name, cache_dir=scratch)
            files = (builder.config.data_files or {}).get(config.test_split)
        except Exception as err:  # no such config or split, no data files, an unreadable card
            raise UserError(
                f"task {config.task!r}: {folder} has no config {config.dataset_name!r} with split "
                f"{config.test_split!r} ({type(err).__name__}: {str(err).splitlines()[0]})"
            ) from None
    return [file_inside(folder, os.path.relpath(str(file), folder), allowed) for file in files or []]


def manifest_entries(
    config: TaskConfig, folder: Path, manifest: contract.BuildManifest, root: Path, location: str
) -> list[contract.ManifestFile]:
    """The manifest's files of the task's config and split."""
    entry = manifest["configs"].get(config.dataset_name) if config.dataset_name is not None else None
    files = entry["files"] if entry is not None else []
    chosen = [f for f in files if Path(f["path"]).name.startswith(f"{config.test_split}-")]
    if not chosen:
        held = "config" if entry is None else "split"
        raise missing(
            config,
            root,
            f"task {config.task!r}: {location} has no {held} {config.dataset_name!r}"
            f"{'' if entry is None else f' / {config.test_split!r}'}",
            manifest,
            held=(location, ", ".join(sorted(manifest["configs"]))),
        )
    return chosen
