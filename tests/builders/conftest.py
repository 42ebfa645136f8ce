"""Fixtures for the builder tests: a tiny COCO-format folder and small builds, made on the spot."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.mmneedle import build_mmneedle
from tests.support.builder_fixtures import (
    COCO_CONFIGS,
    COCO_IMAGES,
    SYNTH_CONFIGS,
    coco_file_name,
    expected_caption,
    write_coco,
)


@pytest.fixture(scope="session")
def coco_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("coco")
    write_coco(root)
    return root


@pytest.fixture(scope="session")
def coco_captions() -> dict[str, str]:
    return {coco_file_name(i): expected_caption(i) for i in range(COCO_IMAGES)}


@pytest.fixture(scope="session")
def synth_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    return build_mmneedle(source="synthetic", out_dir=out, configs=SYNTH_CONFIGS, limit=3, seed=0, num_proc=2)


@pytest.fixture(scope="session")
def coco_build(tmp_path_factory: pytest.TempPathFactory, coco_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("cocobuild")
    return build_mmneedle(source=f"coco={coco_dir}", out_dir=out, configs=COCO_CONFIGS, limit=4, seed=3, num_proc=2)
