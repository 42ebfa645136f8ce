"""VLMEvalKit's MMLongBench sets as a source (`vlmevalkit_*` configs): rows, images and ids as the TSVs publish them,
from a folder in the Hub's layout or VLMEvalKit's own, or from the Hub cache; every path kept inside, every file read
within bounds, every image hashed; bad input one line naming the file and the line."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from builders import cli
from builders.core.errors import BuildError
from builders.core.release_bounds import Bound, LineBound
from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.fixture import write_fixture
from builders.mmlongbench.vlmevalkit import tsv as tsv_module
from builders.mmlongbench.vlmevalkit.fixture import write_tsv, write_vlmevalkit_fixture
from builders.mmlongbench.vlmevalkit.rows import interleaved
from tests.support.builder_fixtures import read_rows
from tests.support.hub_cache import fill_hub_cache

CONFIGS_256K = "vlmevalkit_256k"


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture release with VLMEvalKit's files beside it, as the Hub repo holds them."""
    root = write_fixture(tmp_path_factory.mktemp("vk") / "release")
    write_vlmevalkit_fixture(root, root.parent, ["32k", "256k"])
    return root


@pytest.fixture(scope="module")
def built(official: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vk_out")
    build_mmlongbench(source=str(official), out_dir=out, configs=["vlmevalkit_32k", CONFIGS_256K])
    return out / "mmlongbench"


def tsv_records(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def archive_images(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name.removeprefix("mmlb_image/"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def rows_of(built: Path, length: str) -> list[dict]:
    from builders.mmlongbench.leaves import VLMEVALKIT_CONFIGS

    return [row for name, cfg in VLMEVALKIT_CONFIGS.items() if cfg.length == length for row in read_rows(built, name)]


def test_every_row_is_the_tsvs_own(official: Path, built: Path) -> None:
    records = tsv_records(official / "vlmevalkit" / "MMLongBench_256K.tsv")
    images = archive_images(official / "vlmevalkit" / "MMLongBench_256K_images.tar.gz")
    rows = {row["id"]: row for row in rows_of(built, "256k")}
    assert sorted(rows, key=int) == [r["index"] for r in records]  # every row, none added
    for position, record in enumerate(records):
        row = rows[record["index"]]
        extra = json.loads(record["extra_info"])
        assert row["source_id"] == record["question_id"] and row["tsv_row"] == position
        assert row["prompt"] == record["question"].replace("<image token>", "<image>")
        assert json.loads(row["answer"]) == extra["answer"] and row["question"] == extra["question"]
        paths = json.loads(record["image_path"])
        assert row["image_sha256"] == [hashlib.sha256(images[p]).hexdigest() for p in paths]
        assert (row["task"], row["source_dataset"], row["mmlb_subset"]) == (
            record["task"],
            record["source_dataset"],
            record["mmlb_subset"],
        )
        assert row["length"] == 262144


def test_the_manifest_names_the_tsv_and_its_version(official: Path, built: Path) -> None:
    manifest = json.loads((built / "build_manifest.json").read_text())
    entry = manifest["configs"]["vlmevalkit_niah_vh_single_256k"]
    tsv = official / "vlmevalkit" / "MMLongBench_256K.tsv"
    assert entry["file"] == "vlmevalkit/MMLongBench_256K.tsv"
    assert entry["file_sha256"] == hashlib.sha256(tsv.read_bytes()).hexdigest()
    assert entry["version"].startswith("VLMEvalKit's published set")
    card = (built / "README.md").read_text()
    assert (
        "Configs named `vlmevalkit_*` are VLMEvalKit's published sets" in card and "| `tsv_index`, `tsv_row` |" in card
    )
    assert "Configs named `v1_1_*`" not in card


def test_depths_are_named_only_where_an_example_has_all_of_its_rows(built: Path) -> None:
    rows = read_rows(built, "vlmevalkit_niah_vh_single_32k")  # 32K: every row of every example
    assert {r["needle"] for r in rows} == {"depth"}
    assert [r["depth"] for r in rows[:6]] == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert [r["eval_index"] for r in rows] == list(range(len(rows)))


def test_an_example_missing_a_depth_has_no_depth_named(official: Path, tmp_path: Path) -> None:
    folder = tmp_path / "fewer" / "vlmevalkit"
    folder.mkdir(parents=True)
    shutil.copy(official / "vlmevalkit" / "MMLongBench_32K_images.tar.gz", folder)
    records = tsv_records(official / "vlmevalkit" / "MMLongBench_32K.tsv")
    first_vh = next(k for k, r in enumerate(records) if r["source_dataset"] == "vh_single")
    write_tsv(folder / "MMLongBench_32K.tsv", records[:first_vh] + records[first_vh + 1 :])
    build_mmlongbench(source=str(folder.parent), out_dir=tmp_path / "o", configs=["vlmevalkit_niah_vh_single_32k"])
    rows = read_rows(tmp_path / "o" / "mmlongbench", "vlmevalkit_niah_vh_single_32k")
    short = records[first_vh]["question_id"]
    assert {(r["needle"], r["depth"]) for r in rows if r["source_id"] == short} == {("", None)}
    assert {r["needle"] for r in rows if r["source_id"] != short} == {"depth"}


def test_a_local_folder_in_vlmevalkits_own_layout_gives_the_same_rows(
    official: Path, built: Path, tmp_path: Path
) -> None:
    """$LMUData: the TSV at the top, the images extracted under images/mmlb_image/<length>/ (looked up first)."""
    folder = tmp_path / "LMUData"
    (folder / "images" / "mmlb_image" / "256K").mkdir(parents=True)
    shutil.copy(official / "vlmevalkit" / "MMLongBench_256K.tsv", folder)
    for path, data in archive_images(official / "vlmevalkit" / "MMLongBench_256K_images.tar.gz").items():
        target = folder / "images" / "mmlb_image" / "256K" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    out = tmp_path / "out"
    build_mmlongbench(source=str(folder), out_dir=out, configs=[CONFIGS_256K])
    mine = rows_of(out / "mmlongbench", "256k")
    assert [(r["id"], r["prompt"], r["image_sha256"]) for r in mine] == [
        (r["id"], r["prompt"], r["image_sha256"]) for r in rows_of(built, "256k")
    ]
    assert all(r["claims"] == [] for r in mine if r["category"] == "summ")  # no release beside: no claims
    assert any(r["claims"] for r in rows_of(built, "256k") if r["category"] == "summ")  # the release's claims


def test_the_hub_source_reads_the_vlmevalkit_folder_alone(official: Path, tmp_path: Path, offline_hub: Path) -> None:
    names = ("vlmevalkit/MMLongBench_256K.tsv", "vlmevalkit/MMLongBench_256K_images.tar.gz")
    fill_hub_cache(offline_hub, "ZhaoweiWang/MMLongBench", {name: official / name for name in names})
    out = tmp_path / "out"
    argv = ["build", "mmlongbench", "--source", "hf://ZhaoweiWang/MMLongBench", "--configs", CONFIGS_256K]
    assert cli.main([*argv, "--out", str(out), "--quiet"]) == 0
    manifest = json.loads((out / "mmlongbench" / "build_manifest.json").read_text())
    assert manifest["inputs"]["hub"]["files"] == list(names)  # no release archive fetched
    assert len(rows_of(out / "mmlongbench", "256k")) == len(tsv_records(official / names[0]))


def rewrite(official: Path, tmp_path: Path, edit) -> Path:
    """A copy of the 256K files whose TSV records `edit` changes (the first record)."""
    folder = tmp_path / "edited" / "vlmevalkit"
    folder.mkdir(parents=True)
    shutil.copy(official / "vlmevalkit" / "MMLongBench_256K_images.tar.gz", folder)
    records = tsv_records(official / "vlmevalkit" / "MMLongBench_256K.tsv")
    edit(records[0])
    write_tsv(folder / "MMLongBench_256K.tsv", records)
    return folder.parent


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(image_path='["../../etc/passwd"]'), "image_path: path '../../etc/passwd' leads out"),
        (lambda r: r.update(image_path='["a", 3]'), "image_path should be a JSON list of paths"),
        (lambda r: r.update(extra_info="[1]"), "extra_info should be a JSON object"),
        (lambda r: r.update(task="vqa"), "task 'vqa' with source_dataset"),
        (lambda r: r.update(image_path='["vrag/none.jpg"]'), "1 image(s) not found in"),
    ],
)
def test_bad_records_are_one_line_naming_the_tsv_and_the_line(
    official: Path, tmp_path: Path, edit, message: str
) -> None:
    source = rewrite(official, tmp_path, edit)
    with pytest.raises(BuildError) as raised:
        build_mmlongbench(source=str(source), out_dir=tmp_path / "out", configs=[CONFIGS_256K])
    text = str(raised.value)
    assert message in text and "\n" not in text
    if "not found" not in message:
        assert "vlmevalkit/MMLongBench_256K.tsv:2 (index" in text


def test_a_tsv_without_vlmevalkits_columns_or_a_record_cut_short_is_refused(official: Path, tmp_path: Path) -> None:
    folder = tmp_path / "f" / "vlmevalkit"
    folder.mkdir(parents=True)
    shutil.copy(official / "vlmevalkit" / "MMLongBench_256K_images.tar.gz", folder)
    (folder / "MMLongBench_256K.tsv").write_text("index\tquestion\n0\thello\n")
    with pytest.raises(BuildError, match=r"MMLongBench_256K.tsv:1: the header lacks question_id, answer"):
        build_mmlongbench(source=str(folder.parent), out_dir=tmp_path / "o1", configs=[CONFIGS_256K])
    text = (official / "vlmevalkit" / "MMLongBench_256K.tsv").read_text()
    (folder / "MMLongBench_256K.tsv").write_text(text.split("\n", 1)[0] + "\n0\tonly two\n")
    with pytest.raises(BuildError, match=r"MMLongBench_256K.tsv:2: 2 fields, the header names 11"):
        build_mmlongbench(source=str(folder.parent), out_dir=tmp_path / "o2", configs=[CONFIGS_256K])
    with pytest.raises(BuildError, match=r"holds neither vlmevalkit/MMLongBench_512K.tsv nor MMLongBench_512K.tsv"):
        build_mmlongbench(source=str(folder.parent), out_dir=tmp_path / "o3", configs=["vlmevalkit_512k"])


def test_a_tsv_line_past_its_bound_is_refused_naming_it(
    official: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tsv_module, "TSV_LINES", LineBound(Bound(100, "a TSV line"), 1000))
    with pytest.raises(BuildError, match=r"MMLongBench_256K.tsv:1: more than 100 bytes, over the 100 bytes"):
        list(tsv_module.read_records(official / "vlmevalkit" / "MMLongBench_256K.tsv", "MMLongBench_256K.tsv"))


def test_an_archive_holding_an_image_both_ways_is_refused(official: Path, tmp_path: Path) -> None:
    folder = tmp_path / "twice" / "vlmevalkit"
    folder.mkdir(parents=True)
    shutil.copy(official / "vlmevalkit" / "MMLongBench_256K.tsv", folder)
    images = archive_images(official / "vlmevalkit" / "MMLongBench_256K_images.tar.gz")
    first = json.loads(tsv_records(folder / "MMLongBench_256K.tsv")[0]["image_path"])[0]
    with tarfile.open(folder / "MMLongBench_256K_images.tar.gz", "w:gz") as tar:
        for name, data in [*((f"mmlb_image/{p}", d) for p, d in images.items()), (f"mmlb_image/256K/{first}", b"x")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BuildError, match=rf"holds the image '{first}' twice, as 'mmlb_image/{first}' and as"):
        build_mmlongbench(source=str(folder.parent), out_dir=tmp_path / "o", configs=[CONFIGS_256K])


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [
        ("a <image token> b <image> c", 2, "a <image> b <image> c"),  # both spellings take the next image
        ("a <image token> b", 3, "a <image> b<image><image>"),  # images no placeholder took follow the text
        ("no placeholder", 2, "<image><image>no placeholder"),  # ... all of them before it when it has none
        ("a <image token> b <image token>", 1, "a <image> b "),  # a placeholder past the last image is dropped
        ("text", 0, "text"),
    ],
)
def test_images_go_where_vlmevalkits_build_prompt_puts_them(text: str, count: int, expected: str) -> None:
    assert interleaved(text, count) == expected
