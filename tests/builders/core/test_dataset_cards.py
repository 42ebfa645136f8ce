"""The dataset cards as a Hub user reads them: the code in a card runs as written (with `datasets` alone, the
project's packages unimportable) against a build folder standing in for the Hub repo and gives the row's images;
`load_images` reads `hf://ORG/NAME@REVISION`; every card cites its paper and its sources, names its licences, and
says what it was built from."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import datasets
import pytest
import yaml

from builders.core import card, contract
from builders.locovqa.build import build_locovqa
from builders.locovqa.fixture import write_fixture as write_locovqa_sources
from builders.milebench.build import build_milebench
from builders.milebench.fixture import write_fixture as write_milebench_release
from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.fixture import write_fixture as write_mmlongbench_release
from builders.mmneedle import build_mmneedle
from tests.support.paths import PROJECT

PROJECT_PACKAGES = ("builders", "harness", "tasks", "dataset_cards")
COMMIT = "0123456789abcdef0123456789abcdef01234567"

# Runs a card's Python blocks in order, in one namespace, as a reader pasting them would; the project's packages
# cannot be imported until a block needs them (`from builders...`); after each block, the pixels of `images`.
RUNNER = """
import hashlib, json, sys
blocks, packages = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in packages:
    sys.modules[name] = None  # import fails: the recipe must need `datasets` alone
namespace, out = {}, []
for block in blocks:
    if "from builders" in block:
        for name in packages:
            del sys.modules[name]
    exec(block, namespace)
    images = namespace.get("images")
    out.append(None if images is None else [
        [type(im).__module__.split(".")[0], im.mode, list(im.size), hashlib.sha256(im.tobytes()).hexdigest()]
        for im in images])
print(json.dumps(out))
"""


def front_matter(readme: str) -> dict:
    _, yaml_text, _ = readme.split("---\n", 2)
    return yaml.safe_load(yaml_text)


def python_blocks(readme: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme, flags=re.S)


def run_card(folder: Path, tmp_path: Path) -> tuple[list[str], list]:
    """The card's Python blocks, `repo` set to `folder` (the one line a reader edits), run offline in a fresh
    interpreter; returns the blocks and what each left in `images`."""
    readme = (folder / "README.md").read_text(encoding="utf-8")
    blocks = python_blocks(readme)
    placeholder = f'repo = "{card.REPO_PLACEHOLDER}"'
    assert sum(placeholder in b for b in blocks) == 1
    blocks = [b.replace(placeholder, f"repo = {str(folder)!r}") for b in blocks]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(tmp_path / "datasets_cache"),
        "HF_HUB_CACHE": str(tmp_path / "hub_cache"),
    }
    run = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(blocks), json.dumps(PROJECT_PACKAGES)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return blocks, json.loads(run.stdout.splitlines()[-1])


def pixels(images: list) -> list:
    return [["PIL", im.mode, list(im.size), hashlib.sha256(im.tobytes()).hexdigest()] for im in images]


@pytest.fixture(scope="module")
def mmlb_fixture_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_mmlongbench(
        source="fixture", out_dir=tmp_path_factory.mktemp("mmlb"), configs=["niah_vh_single_8k", "niah_vh_single_16k"]
    )


@pytest.mark.slow  # the card's recipe in a child process
def test_the_card_recipe_gives_a_niah_vh_single_8k_rows_images_with_datasets_alone(
    mmlb_fixture_build: Path, tmp_path: Path
) -> None:
    readme = (mmlb_fixture_build / "README.md").read_text(encoding="utf-8")
    assert 'load_dataset(repo, "niah_vh_single_8k"' in readme and "streaming=True" in readme
    blocks, images = run_card(mmlb_fixture_build, tmp_path)
    assert len(blocks) == 4 and "from builders" in blocks[3] and not any("builders" in b for b in blocks[:3])
    rows = datasets.load_dataset(
        "parquet",
        split="test",
        data_files={"test": contract.split_files(mmlb_fixture_build, "niah_vh_single_8k", "test")},
    )
    first, last = (pixels(contract.load_images(mmlb_fixture_build, rows[i])) for i in (0, -1))
    assert len(first) == rows[0][contract.NUM_IMAGES] == 5 and first != last
    assert images[0] is None  # the first block loads the rows; the images come from the image table
    assert images[1] == first  # streamed
    assert images[2] == last  # the whole table, by hash
    assert images[3] == first  # load_images, once the project is installed


@pytest.mark.slow  # the card's recipe in a child process
def test_an_embedded_build_card_gives_the_rows_images_with_datasets_alone(tmp_path: Path) -> None:
    built = build_mmneedle(source="synthetic", out_dir=tmp_path / "data", configs=["m1_n2_k1"], limit=1, num_proc=1)
    blocks, images = run_card(built, tmp_path)
    row = datasets.load_dataset(str(built), "m1_n2_k1", split="test")[0]
    assert len(blocks) == 2 and images[0] == images[1] == pixels(row["images"]) and len(images[0]) == 1


def test_load_images_reads_a_hub_location_as_data_dir_does(mmlb_fixture_build: Path, tmp_path: Path) -> None:
    # A Hub cache holding acme/mmlongbench at tag v1.0.0, as `snapshot_download` leaves it; read without network.
    cache = tmp_path / "hub"
    repo = cache / "datasets--acme--mmlongbench"
    shutil.copytree(mmlb_fixture_build, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "v1.0.0").write_text(COMMIT)
    row = datasets.load_dataset(str(mmlb_fixture_build), "niah_vh_single_8k", split="test")[0]
    expected = pixels(contract.load_images(mmlb_fixture_build, row))
    for location in ("hf://acme/mmlongbench@v1.0.0", f"hf://acme/mmlongbench@{COMMIT}"):
        got = contract.load_images(location, row, cache_dir=str(cache), local_files_only=True)
        assert pixels(got) == expected, location
    assert (
        pixels(
            contract.load_images(
                "acme/mmlongbench", row, revision="v1.0.0", cache_dir=str(cache), local_files_only=True
            )
        )
        == expected
    )
    with pytest.raises(ValueError, match="name the dataset repo"):
        contract.load_images("hf://acme", row)
    with pytest.raises(ValueError, match="names revision 'v1.0.0'"):
        contract.load_images("hf://acme/mmlongbench@v1.0.0", row, revision="v2.0.0")


def test_the_cards_datasets_pin_is_pyprojects_and_pip_install_dot_ships_every_package() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    pins = [d for d in project["project"]["dependencies"] if re.match(r"datasets\b", d)]
    assert pins == ["datasets>=5.2,<6"] and pins[0].startswith(card.DATASETS_REQUIREMENT + ",")
    # The card's `pip install .` must give what the console scripts and the card templates need.
    shipped = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert project["project"]["name"] == "mmlongeval" and sorted(shipped) == sorted(PROJECT_PACKAGES)
    assert all((PROJECT / name / "__init__.py").is_file() for name in shipped)
    scripts = {entry.split(".")[0] for entry in project["project"]["scripts"].values()}
    assert scripts <= set(shipped)


# ---------------------------------------------------------------- citations, licences, what it was built from

PAPERS = {"mmneedle": "2406.11230", "mmlongbench": "2505.10610", "milebench": "2404.18532", "locovqa": "2406.16851"}
SOURCES = {
    "mmneedle": ["MS COCO"],
    "mmlongbench": ["InfoSeek", "Visual Haystack", "MM-NIAH", "SlideVQA"],
    "milebench": ["CLEVRER", "GPR1200", "nuScenes"],
    "locovqa": ["OK-VQA", "MMStar", "MNIST", "MS COCO"],
}


def fixture_build(benchmark: str, out: Path) -> Path:
    if benchmark == "mmneedle":
        return build_mmneedle(source="synthetic", out_dir=out, configs=["m1_n2_k1"], limit=1, num_proc=1)
    if benchmark == "mmlongbench":
        return build_mmlongbench(source="fixture", out_dir=out, configs=["niah_vh_single_8k"])
    if benchmark == "milebench":
        return build_milebench(source="fixture", out_dir=out, configs=["clevr_change"], num_proc=1)
    return build_locovqa(out_dir=out, configs=["okvqa_cmp_4"], limit=2, num_proc=1)


def release_build(benchmark: str, out: Path) -> Path:
    """A build from the benchmark's real source layout (the fixture writers' files, given as a release would be)."""
    if benchmark == "mmlongbench":
        release = write_mmlongbench_release(out / "release")
        return build_mmlongbench(source=str(release), out_dir=out, configs=["niah_vh_single_8k"])
    if benchmark == "milebench":
        release = write_milebench_release(out / "release")
        return build_milebench(source=str(release), out_dir=out, configs=["clevr_change"], num_proc=1)
    written = write_locovqa_sources(out / "sources")
    return build_locovqa(
        source=[f"okvqa={written['okvqa']}", f"coco={written['coco']}"],
        out_dir=out,
        configs=["okvqa_cmp_4"],
        limit=2,
        num_proc=1,
    )


@pytest.mark.parametrize("benchmark", sorted(PAPERS))
def test_a_fixture_builds_card_cites_its_paper_and_says_it_was_built_from_the_fixture(
    benchmark: str, tmp_path: Path
) -> None:
    built = fixture_build(benchmark, tmp_path)
    readme = (built / "README.md").read_text(encoding="utf-8")
    meta = front_matter(readme)
    (bibtex,) = re.findall(r"```bibtex\n(.*?)```", readme, flags=re.S)
    assert bibtex.startswith("@") and PAPERS[benchmark] in bibtex and "title" in bibtex and "author" in bibtex
    assert all(source in readme for source in SOURCES[benchmark])
    assert meta["license"] == "cc0-1.0" and "license_name" not in meta and "publicdomain/zero/1.0" in readme
    body = " ".join(readme.split())
    assert not re.search(r"(?<!not )from the authors' release", body)
    assert re.search(r"built by `mmlongeval` \(`builders build \w+`\) from the (builder's )?offline synthetic", body)
    request = contract.read_manifest(built)["request"]
    if benchmark in ("mmlongbench", "milebench"):  # the fixture as the manifest records it
        assert f"(`{request['source']}` in the manifest" in body and request["source"].startswith("fixture-v")
    if benchmark == "locovqa":
        assert f"fixture {request['source']['fixture']} in the manifest" in body
    assert f'pip install "{card.DATASETS_REQUIREMENT}"' in readme and "datasets >= 4" not in readme


@pytest.mark.parametrize("benchmark", ["mmlongbench", "milebench", "locovqa"])
def test_a_release_builds_card_names_its_licences_with_links(benchmark: str, tmp_path: Path) -> None:
    built = release_build(benchmark, tmp_path / "out")
    readme = (built / "README.md").read_text(encoding="utf-8")
    meta = front_matter(readme)
    assert meta["license"] == "other" and meta["license_name"] and meta["license_link"].startswith("https://")
    licence = readme.split("## Licence\n", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"\]\(https://[^)]+\)", licence)) >= 2, licence  # each licence named with its link
    body = " ".join(readme.split())
    assert "offline synthetic" not in body and "Offline fixture" not in readme
    if benchmark == "locovqa":
        assert (
            "from the source files named below" in body
            and meta["license_link"] == "https://cocodataset.org/#termsofuse"
        )
    else:
        assert "from the authors' release ([" in body


def test_a_coco_builds_card_says_it_was_built_from_coco_and_links_coco_terms(coco_build: Path) -> None:
    readme = (coco_build / "README.md").read_text(encoding="utf-8")
    meta = front_matter(readme)
    assert meta["license"] == "other" and meta["license_link"] == "https://cocodataset.org/#termsofuse"
    body = " ".join(readme.split())
    assert "(`builders build mmneedle`) from MS COCO 2014 validation images and captions," in body
    assert "synthetic" not in body.split("## Load")[0].split("# MMNeedle", 1)[1]
