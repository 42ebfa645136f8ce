"""The MileBench builder on release-layout fixtures: every config loads the user's way, each row shows exactly the
images the official prompt code sends, prompts are assembled as `MileBenchDataset` assembles them, combined grids
match their tiles pixel by pixel, archives read in place equal the unpacked folders, builds are deterministic,
and bad input fails naming the file, the record and what was expected."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

from builders.core import contract
from builders.core.errors import BuildError
from builders.core.tokens import ApproxTokenCounter
from builders.milebench import combine
from builders.milebench.build import build_milebench
from builders.milebench.fixture import RELEASED_GRIDS, write_fixture
from builders.milebench.subsets import ADV, COMBINED, CONFIGS, SUBSET_BY_KEY, image_quantity_level
from tests.support.builder_fixtures import (
    assert_refused_in_one_line,
    built_fixture,
    check_archive_edges,
    load_split,
    outside_jpeg,
    release_fixture,
    run_builders,
    sha256_hex,
    write_truncated_jpeg,
)

FEW_CONFIGS = ["action_localization", "alfred_combined", "iedit_combined", "nuscenes_adv", "image_needle", "gpr1200"]


release = release_fixture(write_fixture, "milebench")
built = built_fixture(build_milebench, "milebench_out")


def annotation(release: Path, config: str) -> dict:
    cfg = CONFIGS[config]
    return json.loads((release / "MileBench" / cfg.subset.name / cfg.release_file).read_text())


def file_sha(release: Path, subset: str, rel: str) -> str:
    return sha256_hex((release / "MileBench" / subset / rel).read_bytes())


@pytest.mark.slow
def test_every_config_loads_the_users_way_and_shows_the_images_the_official_code_sends(
    built: Path, release: Path
) -> None:
    assert sorted(p.name for p in built.iterdir() if p.is_dir()) == sorted([*CONFIGS, contract.IMAGE_TABLE_CONFIG])
    for config, cfg in CONFIGS.items():
        rows = datasets.load_dataset(str(built), config, split="test")
        records = annotation(release, config)["data"]
        assert len(rows) == len(records) > 0, config
        for row, record in zip(rows, records, strict=True):
            paths = record["task_instance"]["images_path"]
            assert row["id"] == f"{cfg.subset.name}/{record['sample_id']}"
            assert row["image_quantity_level"] == image_quantity_level(len(paths)) == record["image_quantity_level"]
            if cfg.mode == COMBINED and cfg.subset.name in RELEASED_GRIDS:
                assert row["image_sha256"] == [
                    file_sha(
                        release, cfg.subset.name, "combined_1_images/" + record["task_instance"]["combined_1_images"][0]
                    )
                ]
                assert row["combined_image"] == "release"
            elif cfg.mode == COMBINED:
                assert row["num_images"] == 1 and row["combined_image"] == "built"
            else:
                text = record["task_instance"]["context"]
                places = sum(
                    text.count(f"{{{kind}#{i}}}") for i in range(1, len(paths) + 1) for kind in ("image", "table")
                )
                # Walking from the end, one image per place and one more before the context if any is left.
                shown = paths[-min(len(paths), places + (len(paths) > places)) :]
                assert row["image_sha256"] == [file_sha(release, cfg.subset.name, f"images/{p}") for p in shown], row[
                    "id"
                ]
    # A row's images come back as PIL images through the image table.
    row = load_split(built, "image_needle")[2]
    assert len(contract.load_images(built, row)) == row["num_images"] == 32


@pytest.mark.slow
def test_prompts_are_assembled_as_the_official_dataset_class(built: Path, release: Path) -> None:
    record = annotation(release, "webqa")["data"][0]
    meta = annotation(release, "webqa")["meta_data"]
    instance = record["task_instance"]
    context = instance["context"].replace("{image#1}", "<image>").replace("{image#2}", "<image>")
    choices = "".join(f"\n{'ABCD'[i]}. {c}" for i, c in enumerate(instance["choice_list"]))
    expected = f"{meta['task_instruction'][record['task_instruction_id']]}\n{context}\nChoice list: {choices}\nYour answer is: "
    row = load_split(built, "webqa")[0]
    assert row["prompt"] == expected and row["answer_index"] == instance["choice_list"].index(record["response"])
    assert row["question"] == expected.rsplit("<image>", 1)[1] and row["question"].startswith("\nQuestion: ")
    # GPR1200's options carry no letters; combined prompts start with the grid and name images `<Image i> `.
    assert "\nChoice list: \nimage1\nimage2\n" in load_split(built, "gpr1200")[0]["prompt"]
    combined = load_split(built, "webqa_combined")[0]
    assert combined["prompt"].startswith(f"<image>\n{row['instruction']}\n") and "<Image 1> " in combined["prompt"]
    assert combined["prompt"].count("<image>") == 1 and "{image#" not in combined["prompt"]
    assert combined["prompt"].endswith(combined["question"]) and combined["question"] == row["question"]
    # Four images, two placed: the first is dropped, the second goes before the context.
    quirk = load_split(built, "action_localization")[1]
    assert quirk["context"].startswith("<image>") and quirk["num_images"] == 3 and quirk["source_num_images"] == 4
    assert "<image><image> Describe the change:" in load_split(built, "clevr_change")[0]["prompt"]
    assert "{table#" not in load_split(built, "multimodalqa")[2]["prompt"]
    # The adversarial set: shuffled options, the same gold, read from <Name>-adv.json.
    adv = load_split(built, "webqa_adv")[0]
    assert adv["choices"] != row["choices"] and adv["answer"] == row["answer"] and adv["split"] == ADV


@pytest.mark.slow
def test_token_columns_count_what_the_truncation_walks(built: Path) -> None:
    counter = ApproxTokenCounter()
    for config in ("action_localization", "image_needle", "tqa_combined", "clevr_change"):
        for row in load_split(built, config):
            pieces = row["context"].split(contract.IMAGE_PLACEHOLDER)
            assert len(row["context_tokens"]) == len(pieces) == (1 if "combined" in config else row["num_images"] + 1)
            assert row["context_tokens"] == [counter.count(p) for p in pieces]
            assert row["instruction_tokens"] == counter.count(row["instruction"])
            assert row["text_tokens"] == counter.count(row["prompt"].replace(contract.IMAGE_PLACEHOLDER, ""))
            assert row["image_tokens"] == [contract.image_tokens(w, h) for w, h in row["image_sizes"]]


def _tile_mask(text: str) -> np.ndarray:
    """True where a tile shows its image (outside the caption box)."""
    _, (left, top, right, bottom) = combine.caption_layout(text)
    mask = np.ones((combine.TILE_SIDE, combine.TILE_SIDE), dtype=bool)
    mask[max(top, 0) : bottom + 1, max(left, 0) : right + 1] = False
    return mask


@pytest.mark.slow
def test_a_built_grid_matches_its_tiles_pixel_wise(built: Path, release: Path) -> None:
    """IEdit's Medium record: 7 images (one a PNG with a transparent strip) in a 3 x 3 grid of 800-px tiles."""
    record = annotation(release, "iedit_combined")["data"][2]
    sources = [
        Image.open(release / "MileBench" / "IEdit" / "images" / p) for p in record["task_instance"]["images_path"]
    ]
    row = load_split(built, "iedit_combined")[2]
    (data,) = [contract.load_images(built, row)[0]]
    grid = np.asarray(data.convert("RGB"), dtype=np.int16)
    assert combine.grid_shape(7) == (3, 3) and data.size == (2400, 2400) and row["image_sizes"] == [[2400, 2400]]
    exact = np.asarray(combine.combine(sources), dtype=np.int16)
    for i, source in enumerate(sources):
        rows_, cols = divmod(i, 3)
        region = (slice(rows_ * 800, rows_ * 800 + 800), slice(cols * 800, cols * 800 + 800))
        expected = np.asarray(
            source.resize((800, 800), Image.Resampling.LANCZOS).convert("RGBA").convert("RGB"), dtype=np.int16
        )
        mask = _tile_mask(f"Image {i + 1}")
        # In memory the tile is the resized image, exactly, outside its caption box ...
        assert np.array_equal(exact[region][mask], expected[mask]), i
        # ... and the stored JPEG is that up to JPEG's error.
        assert np.abs(grid[region][mask] - expected[mask]).mean() < 3.0, i
        # The caption box is black with white text.
        _, (left, top, right, bottom) = combine.caption_layout(f"Image {i + 1}")
        box = exact[region][top:800, left : right + 1]
        assert (box.max(axis=2) < 30).mean() > 0.5 and (box.min(axis=2) > 225).any(), i
    # The PNG's transparent strip (white, alpha 0): resizing RGBA premultiplies alpha, so it turns black, and the
    # paste (without a mask) keeps that colour instead of blending it with the canvas.
    assert sources[1].getpixel((2, 2)) == (255, 255, 255, 0) and exact[10, 800 + 10].tolist() == [0, 0, 0]
    assert exact[10, 800 + 790].tolist() != [0, 0, 0]
    # The two cells past the last image stay black.
    assert exact[1600:, 800:].max() == 0


@pytest.mark.slow
def test_the_releases_grids_are_used_as_they_are_unless_asked_to_build(tmp_path: Path, built: Path) -> None:
    assert set(load_split(built, "alfred_combined")["combined_image"]) == {"release"}
    rebuilt = build_milebench(source="fixture", out_dir=tmp_path, configs=["alfred_combined"], combined_images="build")
    rows = load_split(rebuilt, "alfred_combined")
    assert set(rows["combined_image"]) == {"built"} and rows[0]["image_sizes"] == [[1600, 800]]
    manifest = contract.read_manifest(rebuilt)
    assert manifest["configs"]["alfred_combined"]["combined_images"] == {"release": 0, "built": 3}
    assert manifest["request"]["combined_images"] == "build" and "DejaVuSans" in manifest["request"]["caption_font"]


def _parquet_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha256_hex(p.read_bytes()) for p in sorted(folder.rglob("*.parquet"))}


def test_archives_read_in_place_equal_folders_and_builds_are_byte_identical(tmp_path: Path, release: Path) -> None:
    folders = build_milebench(source=str(release), out_dir=tmp_path / "a", configs=FEW_CONFIGS)
    again = build_milebench(source=str(release), out_dir=tmp_path / "b", configs=FEW_CONFIGS)
    assert _parquet_hashes(folders) == _parquet_hashes(again)
    # Archive members in two orders (images before and after their annotation files).
    for seed in (0, 1):
        archives = write_fixture(tmp_path / f"archives{seed}", archives=True, seed=seed)
        assert sorted(p.name for p in archives.iterdir()) == [f"MileBench_part{k}.tar.gz" for k in range(6)]
        packed = build_milebench(source=str(archives), out_dir=tmp_path / f"c{seed}", configs=FEW_CONFIGS)
        assert _parquet_hashes(packed) == _parquet_hashes(folders)
    assert contract.read_manifest(folders)["configs"]["nuscenes_adv"]["annotation_sha256"] == sha256_hex(
        (release / "MileBench" / "nuscenes" / "nuscenes-adv.json").read_bytes()
    )


def test_configs_are_added_to_a_build_in_place(tmp_path: Path, release: Path) -> None:
    first = build_milebench(source=str(release), out_dir=tmp_path / "x", configs=["gpr1200"])
    build_milebench(source=str(release), out_dir=tmp_path / "x", configs=["image_needle"])
    whole = build_milebench(source=str(release), out_dir=tmp_path / "y", configs=["gpr1200", "image_needle"])
    assert _parquet_hashes(first) == _parquet_hashes(whole)


def _damage(root: Path, subset: str, file: str, edit) -> None:
    path = root / "MileBench" / subset / file
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


DAMAGES = {
    "missing image": (
        lambda root: (root / "MileBench/ActionLocalization/images/0/1.jpg").unlink(),
        r"1 image\(s\) not found .*ActionLocalization/images/0/1\.jpg \(needed by "
        r"ActionLocalization/ActionLocalization\.json record 0 \(sample_id 0\)\)",
    ),
    "malformed json": (
        lambda root: (root / "MileBench/ActionLocalization/ActionLocalization.json").write_text("{no"),
        r"ActionLocalization/ActionLocalization\.json: not valid JSON",
    ),
    "gold not among options": (
        lambda root: _damage(
            root, "ActionLocalization", "ActionLocalization.json", lambda d: d["data"][1].update(response="a chair")
        ),
        r"ActionLocalization\.json record 1 \(sample_id 1\): the gold answer 'a chair' is not among its options",
    ),
    "instruction id": (
        lambda root: _damage(
            root, "ActionLocalization", "ActionLocalization.json", lambda d: d["data"][2].update(task_instruction_id=7)
        ),
        r"record 2 \(sample_id 2\): task_instruction_id 7 is outside meta_data\.task_instruction \(0\.\.1\)",
    ),
    "too many places": (
        lambda root: _damage(
            root,
            "ActionLocalization",
            "ActionLocalization.json",
            lambda d: d["data"][0]["task_instance"].update(
                images_path=["0/0.jpg"], context="a {image#1} b {image#1} c"
            ),
        ),
        r"record 0 \(sample_id 0\): the context places 2 images but images_path lists 1",
    ),
    "question type": (
        lambda root: _damage(
            root,
            "ActionLocalization",
            "ActionLocalization.json",
            lambda d: d["meta_data"].update(question_type="open-ended"),
        ),
        r"ActionLocalization\.json meta_data: meta_data\.question_type is 'open-ended'; ActionLocalization is scored "
        r"by multiple_choice",
    ),
    "no images field": (
        lambda root: _damage(
            root,
            "ActionLocalization",
            "ActionLocalization.json",
            lambda d: d["data"][0]["task_instance"].pop("images_path"),
        ),
        r"record 0 \(sample_id 0\): 'images_path' must be a list of image paths, got None",
    ),
    "damaged image": (
        lambda root: (root / "MileBench/ActionLocalization/images/0/1.jpg").write_bytes(b"not an image"),
        r"image .*ActionLocalization/images/0/1\.jpg \(needed by .*record 0 \(sample_id 0\)\) is damaged",
    ),
    # Issue 17: what a hostile or broken release did.
    "path out through ..": (
        lambda root: _damage(
            root,
            "ActionLocalization",
            "ActionLocalization.json",
            lambda d: d["data"][0]["task_instance"]["images_path"].__setitem__(0, "../../../outside.jpg"),
        ),
        r"ActionLocalization\.json record 0 \(sample_id 0\): task_instance\.images_path: path '\.\./\.\./\.\./outside\.jpg' "
        r"leads out of the release",
    ),
    "absolute path": (
        lambda root: _damage(
            root,
            "ActionLocalization",
            "ActionLocalization.json",
            lambda d: d["data"][1]["task_instance"]["images_path"].__setitem__(0, "/etc/hostname"),
        ),
        r"record 1 \(sample_id 1\): task_instance\.images_path: path '/etc/hostname' is absolute",
    ),
    "symlink out": (
        lambda root: _link_out(root / "MileBench/ActionLocalization/images/0/1.jpg"),
        r"ActionLocalization\.json record 0 \(sample_id 0\): image: path 'images/0/1\.jpg' leads out of .*ActionLocalization "
        r"through a symbolic link \(to .*outside\.jpg\)",
    ),
    "truncated jpeg": (
        lambda root: write_truncated_jpeg(root / "MileBench/ActionLocalization/images/0/1.jpg"),
        r"ActionLocalization/images/0/1\.jpg \(needed by .*record 0 \(sample_id 0\)\) is damaged \(cut short",
    ),
    "no records": (
        lambda root: _damage(root, "ActionLocalization", "ActionLocalization.json", lambda d: d.update(data=[])),
        r"ActionLocalization/ActionLocalization\.json: 'data' holds no records",
    ),
    "not utf-8": (
        lambda root: (root / "MileBench/ActionLocalization/ActionLocalization.json").write_bytes(
            b'{"meta_data": {"task_instruction": ["caf\xe9"]}, "data": []}'
        ),
        r"ActionLocalization/ActionLocalization\.json: not valid JSON \('utf-8' codec can't decode",
    ),
}


def _link_out(path: Path) -> None:
    """Replace a release file by a symbolic link to a file outside the release."""
    path.unlink()
    path.symlink_to(outside_jpeg(path.parents[5]))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_bad_release_input_fails_naming_file_record_and_what_was_expected(
    tmp_path: Path, release: Path, damage: str
) -> None:
    copy = tmp_path / "release"
    shutil.copytree(release / "MileBench" / "ActionLocalization", copy / "MileBench" / "ActionLocalization")
    make, message = DAMAGES[damage]
    make(copy)
    with pytest.raises(BuildError, match=message):
        build_milebench(source=str(copy), out_dir=tmp_path / "out", configs=["action_localization"])
    assert not (tmp_path / "out").exists()  # no dataset, no work folder, no lock: nothing was stored


@pytest.mark.slow  # the builders command in a child process
def test_a_path_out_of_the_release_stops_the_cli_with_one_line(tmp_path: Path, release: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(release / "MileBench" / "ActionLocalization", copy / "MileBench" / "ActionLocalization")
    outside = outside_jpeg(tmp_path)
    _damage(
        copy,
        "ActionLocalization",
        "ActionLocalization.json",
        lambda d: d["data"][2]["task_instance"]["images_path"].__setitem__(0, str(outside)),
    )
    result = run_builders(
        "build", "milebench", "--source", str(copy), "--configs", "action_localization", "--out", str(tmp_path / "out"),
        "--quiet",
    )  # fmt: skip
    assert_refused_in_one_line(
        result,
        f"builders: error: ActionLocalization/ActionLocalization.json record 2 (sample_id 2): "
        f"task_instance.images_path: path '{outside}' is absolute; a release names its files relative to its own "
        "folders",
        tmp_path / "out",
    )


@pytest.mark.slow  # the builders command in a child process
def test_an_archive_member_out_of_the_release_or_a_truncated_archive_is_one_error(tmp_path: Path) -> None:
    archives = write_fixture(tmp_path / "archives", archives=True)
    member = "MileBench/ActionLocalization/images/../../../../outside.jpg"
    check_archive_edges(archives, "MileBench_part0.tar.gz", member, "milebench", "action_localization", build_milebench)


def test_skipping_bad_images_leaves_out_their_records_lists_them_and_flags_the_build(
    tmp_path: Path, release: Path
) -> None:
    copy = tmp_path / "release"
    for subset in ("ActionLocalization", "ALFRED"):
        shutil.copytree(release / "MileBench" / subset, copy / "MileBench" / subset)
    write_truncated_jpeg(copy / "MileBench/ActionLocalization/images/0/1.jpg")  # record 0's
    configs = ["action_localization", "alfred"]
    whole = build_milebench(source=str(release), out_dir=tmp_path / "whole", configs=configs)
    out = build_milebench(source=str(copy), out_dir=tmp_path / "out", configs=configs, skip_bad_images=True)
    manifest = contract.read_manifest(out)
    entry = manifest["configs"]["action_localization"]
    assert entry["skipped_rows"] == 1 and [row["id"] for row in entry["skipped"]] == ["ActionLocalization/0"]
    assert "ActionLocalization/images/0/1.jpg" in entry["skipped"][0]["reason"]
    assert load_split(out, "action_localization")["id"] == load_split(whole, "action_localization")["id"][1:]
    assert "skipped_rows" not in manifest["configs"]["alfred"]
    assert load_split(out, "alfred")["id"] == load_split(whole, "alfred")["id"]
    assert "1 row(s) left out because an image they show is damaged" in manifest["caveats"]["limited"]
    assert manifest["request"]["skip_bad_images"] is True
    card = (out / "README.md").read_text()
    assert "- limited" in card  # the card's tags


def test_an_unknown_subset_or_a_missing_one_is_named(tmp_path: Path, release: Path) -> None:
    with pytest.raises(BuildError, match="unknown config.* nope; valid: action_localization"):
        build_milebench(source=str(release), out_dir=tmp_path, configs=["nope"])
    only = tmp_path / "only"
    shutil.copytree(release / "MileBench" / "TQA", only / "MileBench" / "TQA")
    with pytest.raises(
        BuildError, match=r"WebQA/WebQA\.json in no archive is not in the release .*config webqa reads it"
    ):
        build_milebench(source=str(only), out_dir=tmp_path / "o", configs=["webqa"])


@pytest.mark.slow  # the builders command in a child process
def test_cli_plans_without_writing_and_names_bad_options(tmp_path: Path) -> None:
    builders = str(Path(sys.executable).parent / "builders")
    plan = subprocess.run(
        [
            builders,
            "build",
            "milebench",
            "--source",
            "fixture",
            "--configs",
            "alfred,alfred_combined",
            "--out",
            str(tmp_path),
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plan.returncode == 0, plan.stderr
    assert "plan: 2 config(s), 6 rows" in plan.stderr and not (tmp_path / "milebench").exists()
    bad = subprocess.run(
        [builders, "build", "milebench", "--configs", "nope", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "unknown config(s) nope" in bad.stderr


def test_subset_table_is_table_6() -> None:
    assert len(SUBSET_BY_KEY) == 29 and len(CONFIGS) == 87
    assert sum(s.samples for s in SUBSET_BY_KEY.values()) == 6440
    assert {s.task_id for s in SUBSET_BY_KEY.values() if s.family == "rouge_l"} == {"S-3", "S-4"}
    assert [s.name for s in SUBSET_BY_KEY.values() if s.family == "rouge_l"] == [
        "Spot-the-Diff",
        "CLEVR-Change",
        "IEdit",
        "ALFRED",
    ]
    assert [image_quantity_level(n) for n in (2, 5, 6, 31, 32, 109)] == [
        "Few",
        "Few",
        "Medium",
        "Medium",
        "Many",
        "Many",
    ]


def test_the_grid_rule_is_the_official_geometry() -> None:
    assert [combine.grid_shape(n) for n in (1, 2, 3, 4, 5, 10, 109)] == [
        (1, 1),
        (2, 1),
        (2, 2),
        (2, 2),
        (3, 2),
        (4, 3),
        (11, 10),
    ]
    (x, y), (left, top, right, bottom) = combine.caption_layout("Image 12")
    assert (left, top) == (x - 12, y - 22) and bottom == 800 + 12 and (800 - (right - 12 - x)) // 2 == x
    image = Image.new("RGB", (30, 20), (10, 200, 30))
    buffer = io.BytesIO()
    combine.combine([image]).save(buffer, format="PNG")
    assert Image.open(buffer).size == (800, 800)
