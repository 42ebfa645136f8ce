"""Fixtures for the builder tests: a tiny COCO-format folder and small builds, made on the spot, and an empty Hub
cache used offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.mmneedle import build_mmneedle
from tests.support.builder_fixtures import (
    COCO_CONFIGS,
    COCO_IMAGES,
    build_synth,
    coco_file_name,
    expected_caption,
    write_coco,
)
from tests.support.hub_cache import use_offline_hub_cache


@pytest.fixture(scope="session")
def coco_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_coco(tmp_path_factory.mktemp("coco"))


@pytest.fixture(scope="session")
def coco_captions() -> dict[str, str]:
    return {coco_file_name(i): expected_caption(i) for i in range(COCO_IMAGES)}


@pytest.fixture(scope="session")
def synth_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_synth(tmp_path_factory.mktemp("synth"))


@pytest.fixture(scope="session")
def coco_build(tmp_path_factory: pytest.TempPathFactory, coco_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("cocobuild")
    return build_mmneedle(source=f"coco={coco_dir}", out_dir=out, configs=COCO_CONFIGS, limit=4, seed=3, num_proc=2)


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hub cache (`tmp_path / "hub"`), used by `huggingface_hub` in this process with HF_HUB_OFFLINE=1."""
    return use_offline_hub_cache(monkeypatch, tmp_path / "hub")
