"""The data contract: the columns every row carries, the manifest reader, and what a build lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Features, Value

from builders.core import contract
from builders.mmneedle.rows import features as mmneedle_features


def test_every_builder_feature_set_carries_the_contract() -> None:
    for storage in contract.IMAGE_STORAGES:
        contract.check_features(mmneedle_features(storage), storage, "mmneedle")
    assert contract.IMAGES in contract.row_features("embedded") and contract.IMAGES not in contract.row_features("shared")


def test_features_that_break_the_contract_are_named() -> None:
    columns = dict(contract.row_features("embedded"))
    del columns["image_tokens"]
    with pytest.raises(ValueError, match="cfg: the contract column 'image_tokens' is missing"):
        contract.check_features(Features(columns), "embedded", "cfg")
    columns = {**contract.row_features("embedded"), "num_images": Value("int64")}
    with pytest.raises(ValueError, match=r"column 'num_images' is Value\('int64'\), the contract says Value\('int32'\)"):
        contract.check_features(Features(columns), "embedded", "cfg")
    with pytest.raises(ValueError, match="shared image storage keeps images out of the rows"):
        contract.check_features(Features(contract.row_features("embedded")), "shared", "cfg")
    with pytest.raises(ValueError, match="image storage must be one of embedded, shared"):
        contract.row_features("inline")


def test_manifest_reader(tmp_path: Path) -> None:
    assert contract.read_manifest(tmp_path) is None
    (tmp_path / contract.MANIFEST_NAME).write_text("{not json")
    with pytest.raises(contract.ManifestError, match=f"unreadable build manifest {tmp_path / contract.MANIFEST_NAME}"):
        contract.read_manifest(tmp_path)
    (tmp_path / contract.MANIFEST_NAME).write_text(json.dumps({"format": "other/1"}))
    with pytest.raises(contract.ManifestError, match="not a build manifest of this project"):
        contract.read_manifest(tmp_path)
    manifest = {"format": contract.MANIFEST_FORMAT,
                "configs": {"b": {"files": [{"path": "b/x"}]}, "a": {"files": [{"path": "a/x"}, {"path": "a/y"}]}},
                "image_table": {"files": [{"path": "image_table/x"}]}}
    contract.write_manifest(tmp_path, manifest)
    assert contract.read_manifest(tmp_path) == manifest
    assert [f["path"] for f in contract.data_files(manifest)] == ["a/x", "a/y", "b/x", "image_table/x"]
    # A build written before the manifest recorded its image storage embeds its images.
    assert contract.manifest_image_storage(manifest) == "embedded"
    assert contract.manifest_image_storage({"contract": {"image_storage": "shared"}}) == "shared"
