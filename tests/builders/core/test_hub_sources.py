"""`--source hf://ORG/NAME[@REVISION]`: each benchmark's official release read from a Hugging Face Hub cache laid
out as `huggingface_hub` lays it out (filled here from the offline fixtures, under the release's published file
names), with HF_HUB_OFFLINE=1. The build equals the one from a folder of the same files; the manifest records
repo, revision and commit; the files fetched for a config are exactly the ones it reads (each is needed, together
they suffice); and a source that is not on the Hub, or not in the cache offline, is one line saying what to do."""

from __future__ import annotations

import json
import os
import shutil
from hashlib import sha256
from pathlib import Path

import pytest

from builders import cli
from builders.core.errors import BuildError
from tests.support.builder_fixtures import run_builders
from tests.support.hub_cache import COMMIT, fill_hub_cache, mmlongbench_hub_files
from tests.support.paths import PROJECT


def build(*argv: str) -> int:
    return cli.main(["build", *argv, "--quiet"])


def without_blobs(record: dict) -> dict:
    """A manifest's Hub record without its blobs, once each is checked to be the sha256 and size of an LFS blob of
    the cache (named by its sha256)."""
    blobs = record.pop("blobs")
    assert sorted(blobs) == sorted(record["files"])
    for blob in blobs.values():
        assert blob["etag"] == blob["sha256"] and len(blob["sha256"]) == 64 and blob["num_bytes"] > 0
    return record


def manifest(folder: Path) -> dict:
    return json.loads((folder / "build_manifest.json").read_text())


# ------------------------------------------------------------------------------------------ MMLongBench


@pytest.fixture(scope="module")
def mmlb_hub_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixture release as the Hub repo publishes it today: `0_mmlb_data.tar.gz`, `1_vrag_image.tar.gz`, ..."""
    return mmlongbench_hub_files(tmp_path_factory.mktemp("mmlb_hub"))


@pytest.mark.slow  # a Hub cache filled and a build from it (~2 s)
def test_done_when_mmlongbench_builds_offline_from_an_empty_hub_cache_filled_from_the_fixtures(
    tmp_path: Path, mmlb_hub_files: dict[str, Path]
) -> None:
    """The issue's command, run as a user runs it, in a fresh process with HF_HUB_OFFLINE=1."""
    cache = tmp_path / "hub"
    fill_hub_cache(cache, "ZhaoweiWang/MMLongBench", mmlb_hub_files)
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(PROJECT)}
    argv = ["build", "mmlongbench", "--source", "hf://ZhaoweiWang/MMLongBench", "--configs", "niah_vh_single_8k"]
    done = run_builders(*argv, "--out", "data", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    built = manifest(tmp_path / "data" / "mmlongbench")
    record = built["inputs"]["hub"]
    assert record.pop("blobs") == {  # beside the commit, each blob read (issue 49, item 6)
        name: {"sha256": sha256(path.read_bytes()).hexdigest(), "num_bytes": path.stat().st_size, "etag": sha}
        for name, path in mmlb_hub_files.items()
        if name in record["files"]
        for sha in [sha256(path.read_bytes()).hexdigest()]
    }
    assert record == {
        "repo": "ZhaoweiWang/MMLongBench",
        "revision": "main",
        "commit": COMMIT,
        "files": ["0_mmlb_data.tar.gz", "2_vh_image.tar.gz"],
    }
    assert built["configs"]["niah_vh_single_8k"]["rows"] > 0
    assert built[contract_key("BUILD_COMMAND")][:5] == [
        "builders",
        "build",
        "mmlongbench",
        "--source",
        "hf://ZhaoweiWang/MMLongBench",
    ]


def contract_key(name: str) -> str:
    from builders.core import contract

    return getattr(contract, name)


def test_mmlongbench_from_the_hub_equals_the_build_from_a_folder_of_the_same_files(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path]
) -> None:
    fill_hub_cache(offline_hub, "ZhaoweiWang/MMLongBench", mmlb_hub_files, revision="v1", commit=COMMIT)
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, path in mmlb_hub_files.items():
        shutil.copy(path, folder / name)
    configs = "niah_vh_single_8k,vrag_infoseek_16k"
    assert (
        build(
            "mmlongbench",
            "--source",
            "hf://ZhaoweiWang/MMLongBench@v1",
            "--configs",
            configs,
            "--out",
            str(tmp_path / "hub_out"),
        )
        == 0
    )
    assert build("mmlongbench", "--source", str(folder), "--configs", configs, "--out", str(tmp_path / "dir_out")) == 0
    hub, local = manifest(tmp_path / "hub_out" / "mmlongbench"), manifest(tmp_path / "dir_out" / "mmlongbench")
    assert hub["content_hash"] == local["content_hash"]
    assert hub["inputs"]["hub"]["revision"] == "v1" and hub["inputs"]["hub"]["commit"] == COMMIT


@pytest.mark.parametrize(
    "config",
    [
        "niah_vh_single_8k",
        "vrag_infoseek_8k",
        "niah_mmniah_ret_text_8k",
        "icl_food101_8k",
        "summ_govreport_8k",
        "docvqa_slidevqa_8k",
        "ablation_triviaqa_8k",
    ],
)
def test_mmlongbench_fetches_exactly_the_files_a_config_reads(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path], config: str
) -> None:
    """Built from a cache holding only the files `hub_files` names: enough. Less any one of them: the build fails
    (every file fetched is read)."""
    from builders.mmlongbench.leaves import BUILDABLE_CONFIGS
    from builders.mmlongbench.release import hub_files

    names = [f.names[0] for f in hub_files([BUILDABLE_CONFIGS[config]])]
    assert len(names) == len(set(names)) and set(names) <= set(mmlb_hub_files)
    for i, left_out in enumerate([None, *names]):
        commit = f"{i:040x}"
        fill_hub_cache(
            offline_hub,
            "ZhaoweiWang/MMLongBench",
            {n: mmlb_hub_files[n] for n in names if n != left_out},
            revision=f"r{i}",
            commit=commit,
        )
        out = tmp_path / f"out{i}"
        argv = ["mmlongbench", "--source", f"hf://ZhaoweiWang/MMLongBench@r{i}", "--configs", config, "--out", str(out)]
        if left_out is None:
            assert build(*argv) == 0
        else:
            assert build(*argv) == 2, f"{config} built without {left_out}"


def test_mmlongbench_offline_without_the_files_says_how_to_download_them(
    tmp_path: Path, offline_hub: Path, mmlb_hub_files: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    fill_hub_cache(offline_hub, "ZhaoweiWang/MMLongBench", {"0_mmlb_data.tar.gz": mmlb_hub_files["0_mmlb_data.tar.gz"]})
    assert (
        build(
            "mmlongbench",
            "--source",
            "hf://ZhaoweiWang/MMLongBench",
            "--configs",
            "icl_food101_8k",
            "--out",
            str(tmp_path),
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "3_icl_image.tar.gz is not in the Hub cache and HF_HUB_OFFLINE=1 forbids downloading it" in err
    assert f"hf download ZhaoweiWang/MMLongBench 3_icl_image.tar.gz --repo-type dataset --revision {COMMIT}" in err
    assert build("mmlongbench", "--source", "hf://Nobody/Nothing", "--out", str(tmp_path)) == 2
    assert "hf://Nobody/Nothing@main is not in the Hub cache" in capsys.readouterr().err
    assert build("mmlongbench", "--source", "hf://Nobody", "--out", str(tmp_path)) == 2
    assert "expected hf://ORG/NAME or hf://ORG/NAME@REVISION" in capsys.readouterr().err


def test_a_hub_source_of_the_python_api_is_a_build_error(tmp_path: Path, offline_hub: Path) -> None:
    from builders.mmlongbench.build import build_mmlongbench

    with pytest.raises(BuildError, match="not in the Hub cache"):
        build_mmlongbench(source="hf://ZhaoweiWang/MMLongBench", out_dir=tmp_path, configs=["niah_vh_single_8k"])


# -------------------------------------------------------------------------------------------- MileBench


@pytest.fixture(scope="module")
def milebench_hub_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from builders.milebench.fixture import write_fixture

    root = write_fixture(tmp_path_factory.mktemp("milebench_hub") / "release", archives=True)
    return {p.name: p for p in sorted(root.glob("MileBench_part*.tar.gz"))}


def test_milebench_builds_offline_from_the_hub_cache_as_from_a_folder(
    tmp_path: Path, offline_hub: Path, milebench_hub_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from builders.core.hub_source import PinnedFile
    from builders.milebench.release import HUB_RELEASE

    assert HUB_RELEASE.pinned
    # The fixture's archives stand at the pinned revision: pinned here to their own bytes, as the release's are.
    pins = {
        name: PinnedFile(sha256(path.read_bytes()).hexdigest(), path.stat().st_size)
        for name, path in milebench_hub_files.items()
    }
    monkeypatch.setattr("builders.milebench.build.HUB_RELEASE", dataclasses.replace(HUB_RELEASE, files=pins))
    fill_hub_cache(
        offline_hub,
        "FreedomIntelligence/MileBench",
        milebench_hub_files,
        revision=HUB_RELEASE.revision,
        commit=HUB_RELEASE.revision,
    )
    configs = "action_localization,gpr1200_adv"
    assert (
        build(
            "milebench",
            "--source",
            "hf://FreedomIntelligence/MileBench",
            "--configs",
            configs,
            "--out",
            str(tmp_path / "hub_out"),
        )
        == 0
    )
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, path in milebench_hub_files.items():
        shutil.copy(path, folder / name)
    assert build("milebench", "--source", str(folder), "--configs", configs, "--out", str(tmp_path / "dir_out")) == 0
    hub, local = manifest(tmp_path / "hub_out" / "milebench"), manifest(tmp_path / "dir_out" / "milebench")
    assert hub["content_hash"] == local["content_hash"]
    assert without_blobs(hub["inputs"]["hub"]) == {
        "repo": "FreedomIntelligence/MileBench",
        "revision": HUB_RELEASE.revision,
        "commit": HUB_RELEASE.revision,
        "files": ["MileBench_part0.tar.gz", "MileBench_part1.tar.gz"],
    }


@pytest.mark.parametrize("config", ["action_localization", "text_needle_combined", "spot_the_diff_adv"])
def test_milebench_fetches_exactly_the_part_a_config_reads(
    tmp_path: Path, offline_hub: Path, milebench_hub_files: dict[str, Path], config: str
) -> None:
    from builders.milebench.release import hub_files
    from builders.milebench.subsets import CONFIGS

    (part,) = [f.names[0] for f in hub_files([CONFIGS[config]])]
    others = {n: p for n, p in milebench_hub_files.items() if n != part}
    fill_hub_cache(offline_hub, "FreedomIntelligence/MileBench", {part: milebench_hub_files[part]}, revision="only")
    assert (
        build(
            "milebench",
            "--source",
            "hf://FreedomIntelligence/MileBench@only",
            "--configs",
            config,
            "--out",
            str(tmp_path / "a"),
        )
        == 0
    )
    fill_hub_cache(offline_hub, "FreedomIntelligence/MileBench", others, revision="others", commit="f" * 40)
    assert (
        build(
            "milebench",
            "--source",
            "hf://FreedomIntelligence/MileBench@others",
            "--configs",
            config,
            "--out",
            str(tmp_path / "b"),
        )
        == 2
    )


# ---------------------------------------------------------------------------------------------- LoCoVQA


@pytest.fixture(scope="module")
def locovqa_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from builders.locovqa.fixture import write_fixture

    return write_fixture(tmp_path_factory.mktemp("locovqa_hub"))


def mnist_parquet(folder: Path) -> bytes:
    """The fixture's IDX digits as `ylecun/mnist` publishes MNIST: one Parquet file, each image a PNG."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from builders.locovqa.mnist import read_idx

    pixels = read_idx(folder / "train-images-idx3-ubyte.gz", 2051, 3)
    labels = read_idx(folder / "train-labels-idx1-ubyte.gz", 2049, 1)
    pngs = []
    for digit in pixels:
        buffer = io.BytesIO()
        Image.fromarray(digit, mode="L").save(buffer, format="PNG")
        pngs.append({"bytes": buffer.getvalue(), "path": None})
    out = io.BytesIO()
    pq.write_table(pa.table({"image": pngs, "label": pa.array(labels.astype("int64"))}), out)
    return out.getvalue()


def test_locovqa_mmstar_and_mnist_build_offline_from_the_hub_cache_as_from_their_files(
    tmp_path: Path, offline_hub: Path, locovqa_sources: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from builders.core.hub_source import PinnedFile
    from builders.locovqa.mnist import HUB_PARQUET
    from builders.locovqa.sources import HUB_SOURCES

    mmstar, mnist = HUB_SOURCES["mmstar"][0], HUB_SOURCES["mnist"][0]
    assert mmstar.pinned and mnist.pinned
    # The fixture's MMStar file stands at the pinned revision: pinned here to its own bytes, as the release's is.
    data = locovqa_sources["mmstar"].read_bytes()
    pins = {"mmstar.parquet": PinnedFile(sha256(data).hexdigest(), len(data))}
    monkeypatch.setitem(HUB_SOURCES, "mmstar", (dataclasses.replace(mmstar, files=pins), HUB_SOURCES["mmstar"][1]))
    fill_hub_cache(
        offline_hub,
        mmstar.repo,
        {"mmstar.parquet": locovqa_sources["mmstar"]},
        revision=mmstar.revision,
        commit=mmstar.revision,
    )
    fill_hub_cache(
        offline_hub,
        mnist.repo,
        {HUB_PARQUET: mnist_parquet(locovqa_sources["mnist"])},
        revision=mnist.revision,
        commit=mnist.revision,
    )
    lister = ["--entity-lister", f"mmstar=cache:{locovqa_sources['mmstar_entities']}"]
    common = ["--configs", "mmstar_cmp_4,mnist_int_4", "--limit", "2", *lister]
    coco = f"coco={locovqa_sources['coco']}"
    assert (
        build(
            "locovqa",
            "--source",
            "mmstar=hf://Lin-Chen/MMStar",
            "mnist=hf://ylecun/mnist",
            coco,
            *common,
            "--out",
            str(tmp_path / "hub_out"),
        )
        == 0
    )
    assert (
        build(
            "locovqa",
            "--source",
            f"mmstar={locovqa_sources['mmstar']}",
            f"mnist={locovqa_sources['mnist']}",
            coco,
            *common,
            "--out",
            str(tmp_path / "dir_out"),
        )
        == 0
    )
    hub, local = manifest(tmp_path / "hub_out" / "locovqa"), manifest(tmp_path / "dir_out" / "locovqa")
    assert hub["content_hash"] == local["content_hash"]
    assert {name: without_blobs(record) for name, record in hub["inputs"]["hub"].items()} == {
        "mmstar": {
            "repo": "Lin-Chen/MMStar",
            "revision": mmstar.revision,
            "commit": mmstar.revision,
            "files": ["mmstar.parquet"],
        },
        "mnist": {"repo": "ylecun/mnist", "revision": mnist.revision, "commit": mnist.revision, "files": [HUB_PARQUET]},
    }


@pytest.mark.parametrize(
    ("name", "where"),
    [("okvqa", "https://okvqa.allenai.org/download.html"), ("coco", "https://cocodataset.org/#download")],
)
def test_locovqa_sources_not_on_the_hub_say_where_to_get_them_and_the_layout(
    tmp_path: Path, offline_hub: Path, capsys: pytest.CaptureFixture, name: str, where: str
) -> None:
    assert build("locovqa", "--source", f"{name}=hf://someone/{name}", "mmstar=x", "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and where in err and f"--source {name}=DIR, where DIR holds" in err


# --------------------------------------------------------------------------------------------- MMNeedle


def test_mmneedle_official_metadata_from_the_hub_builds_as_from_the_folder_and_takes_out_only_what_it_reads(
    tmp_path: Path, offline_hub: Path
) -> None:
    """The metadata zip is one file (fetched whole); of it, only the pool and annotation files of the asked configs
    are taken out, and the build equals the one from the metadata folder."""
    from tests.support.builder_fixtures import write_coco
    from tests.support.mmneedle_metadata import write_metadata_zip

    coco = write_coco(tmp_path / "coco", count=50)
    meta, archive = write_metadata_zip(tmp_path)
    fill_hub_cache(offline_hub, "Wang-ML-Lab/MMNeedle", {"data/metadata_stitched.zip": archive})
    common = ["--source", f"coco={coco}", "--configs", "m1_n2_k1", "--limit", "3"]
    assert (
        build(
            "mmneedle", *common, "--official-metadata", "hf://Wang-ML-Lab/MMNeedle", "--out", str(tmp_path / "hub_out")
        )
        == 0
    )
    assert build("mmneedle", *common, "--official-metadata", str(meta), "--out", str(tmp_path / "dir_out")) == 0
    hub, local = manifest(tmp_path / "hub_out" / "mmneedle"), manifest(tmp_path / "dir_out" / "mmneedle")
    assert hub["content_hash"] == local["content_hash"]
    assert sorted(hub["request"]["official_metadata"]) == ["2_2.json", "annotations_1_2_2.json"]
    assert without_blobs(hub["inputs"]["hub"]) == {
        "repo": "Wang-ML-Lab/MMNeedle",
        "revision": "main",
        "commit": COMMIT,
        "files": ["data/metadata_stitched.zip"],
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("coco=hf://someone/coco", "download it from https://cocodataset.org/#download"),
        ("hf://Wang-ML-Lab/MMNeedle", "--source coco=DIR --official-metadata hf://Wang-ML-Lab/MMNeedle"),
    ],
)
def test_mmneedle_coco_is_not_on_the_hub_and_the_error_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture, source: str, expected: str
) -> None:
    assert build("mmneedle", "--source", source, "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and expected in err and "val2014/*.jpg and annotations/captions_val2014.json" in err
