"""A built config's rows read back from a `--data_dir` release as `datasets` loads its parquet split: what a task's
tests compute their expected values from."""

from __future__ import annotations

from pathlib import Path

import datasets

from builders.core import contract


def release_rows(data_dir: Path, benchmark: str, config: str) -> datasets.Dataset:
    """The test split of `benchmark`'s `config` in `data_dir`."""
    files = contract.split_files(data_dir / benchmark, config, "test")
    return datasets.load_dataset("parquet", data_files={"test": files}, split="test")
