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
    assert contract.IMAGES in contract.row_features("embedded") and contract.IMAGES not in contract.row_features(
        "shared"
    )


@pytest.mark.parametrize("storage", contract.IMAGE_STORAGES)
def test_the_contract_columns_as_a_build_writes_them_are_the_features(storage: str) -> None:
    """What the harness checks a build's declared columns against (without importing `datasets`) is what a build
    declares: `Features.to_dict()` of the contract's features."""
    assert Features(contract.row_features(storage)).to_dict() == contract.row_feature_dicts(storage)
    assert Features(contract.image_table_features()).to_dict() == contract.image_table_feature_dicts()


def test_features_that_break_the_contract_are_named() -> None:
    columns = dict(contract.row_features("embedded"))
    del columns["image_tokens"]
    with pytest.raises(ValueError, match="cfg: the contract column 'image_tokens' is missing"):
        contract.check_features(Features(columns), "embedded", "cfg")
    columns = {**contract.row_features("embedded"), "num_images": Value("int64")}
    with pytest.raises(
        ValueError, match=r"column 'num_images' is Value\('int64'\), the contract says Value\('int32'\)"
    ):
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

    def files(*paths: str) -> list[dict[str, object]]:
        return [{"path": path, "num_bytes": 1, "sha256": "0" * 64} for path in paths]

    manifest = {
        "format": contract.MANIFEST_FORMAT,
        "configs": {"b": {"files": files("b/x")}, "a": {"files": files("a/x", "a/y")}},
        "image_table": {"config": "image_table", "images": 1, "files": files("image_table/x")},
    }
    contract.write_manifest(tmp_path, manifest)
    assert contract.read_manifest(tmp_path) == manifest
    # Read only once its shape is the declared one (`manifest_schema`): what is wrong is named, file and field.
    contract.write_manifest(tmp_path, {**manifest, "configs": {"b": {"files": [{"path": "b/x"}]}}})
    with pytest.raises(contract.ManifestError, match=r"build_manifest\.json: configs\.b\.files\[0\]\.num_bytes: "):
        contract.read_manifest(tmp_path)
    assert [f["path"] for f in contract.data_files(manifest)] == ["a/x", "a/y", "b/x", "image_table/x"]
    # A build written before the manifest recorded its image storage embeds its images.
    assert contract.manifest_image_storage(manifest) == "embedded"
    assert contract.manifest_image_storage({"contract": {"image_storage": "shared"}}) == "shared"


@pytest.mark.parametrize(
    "manifest",
    [[], "text", None, {"configs": None}, {"configs": []}, {"configs": {"a": {"files": [{"path": 3}, "a/x"]}}}],
)
def test_split_files_of_a_manifest_that_lists_nothing_readable_is_none(tmp_path: Path, manifest: object) -> None:
    """A manifest (JSON) that is not an object, or whose configs or files are of another kind, names no files: the
    folder is then read through its card, as when it has no manifest, instead of raising AttributeError."""
    (tmp_path / contract.MANIFEST_NAME).write_text(json.dumps(manifest))
    assert contract.split_files(tmp_path, "a", "test") is None


def test_split_files_lists_a_configs_split(tmp_path: Path) -> None:
    files = [{"path": "a/test-00000.parquet"}, {"path": "a/train-00000.parquet"}, {"path": "a/test-00001.parquet"}]
    (tmp_path / contract.MANIFEST_NAME).write_text(json.dumps({"configs": {"a": {"files": files}}}))
    assert contract.split_files(tmp_path, "a", "test") == [
        str(tmp_path / "a/test-00000.parquet"),
        str(tmp_path / "a/test-00001.parquet"),
    ]
    assert contract.split_files(tmp_path, "b", "test") is None


def _mapped(path: Path):
    import mmap

    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(path, "rb") as file:
        mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    return pq.ParquetFile(pa.BufferReader(pa.py_buffer(mapping))), mapping


def test_parquet_column_reads_each_image_from_the_mapping_or_else_its_row_group(tmp_path: Path) -> None:
    """Image bytes as the builders write them (uncompressed, PLAIN) are read one image at a time from the file's
    mapping; the same images compressed are read through their row group; both give every image's own bytes."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Image, List
    from datasets.arrow_writer import get_parquet_column_options

    rng = random.Random(0)
    prefix = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(40)  # every image starts alike, as JPEGs do
    pool = [prefix + rng.randbytes(rng.randrange(0, 3000)) for _ in range(12)]
    rows = [
        {
            "id": str(i),
            "images": [rng.choice(pool) for _ in range(rng.randrange(0, 4))],
            "image": rng.choice(pool) if i % 5 else None,
        }
        for i in range(60)
    ]
    features = Features({"id": Value("string"), "images": List(Image()), "image": Image()})
    table = pa.Table.from_pylist(
        [
            {
                "id": r["id"],
                "images": [{"bytes": b, "path": None} for b in r["images"]],
                "image": None if r["image"] is None else {"bytes": r["image"], "path": None},
            }
            for r in rows
        ],
        schema=features.arrow_schema,
    )
    shard = tmp_path / "plain.parquet"  # with the options the builders' writer uses (`builders.core.parquet_writer`)
    pq.write_table(
        table,
        shard,
        row_group_size=15,
        write_page_index=True,
        **get_parquet_column_options(features, features.arrow_schema),
    )
    compressed = tmp_path / "compressed.parquet"
    pq.write_table(table, compressed, compression="snappy", row_group_size=25)

    for path, plain in ((shard, True), (compressed, False)):
        file, mapping = _mapped(path)
        assert file.metadata.num_row_groups > 1
        listed = contract.ParquetColumn([file], "images", maps=[mapping])
        single = contract.ParquetColumn([file], "image", maps=[mapping])
        for i, row in enumerate(rows):
            assert [listed.image_bytes(i, k) for k in range(len(row["images"]))] == row["images"]
            assert single.image_bytes(i) == row["image"]
        with pytest.raises(IndexError):
            listed.image_bytes(0, len(rows[0]["images"]))
        assert all((located is not None) == plain for located in listed._located.values())
        assert listed._cache if not plain else not listed._cache  # row groups held only where bytes are not plain
