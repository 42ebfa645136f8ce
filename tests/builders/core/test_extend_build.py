"""Builds users can extend: configs added to a build in place, the recorded command, the plan, and the card's
licence and caveats."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from builders.cli import main
from builders.core.errors import BuildError
from builders.mmneedle import build_mmneedle
from tests.support.builder_fixtures import read_rows

ONE_GO = ["m1_n2_k1", "m10_n1_k2", "m1_n4_k5"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _build(out: Path, configs: list[str], storage: str = "embedded", **kwargs) -> Path:
    return build_mmneedle(
        source="synthetic:400",
        out_dir=out,
        configs=configs,
        limit=3,
        seed=2,
        num_proc=2,
        image_storage=storage,
        **kwargs,
    )


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "build_manifest.json").read_text())


def _card_yaml(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])


@pytest.mark.parametrize("storage", ["embedded", "shared"])
def test_added_configs_give_the_one_go_build_byte_for_byte(tmp_path: Path, storage: str) -> None:
    whole = _build(tmp_path / "whole", ONE_GO, storage)
    # Built in two steps, the later configs first: the order of the steps must not show.
    part = _build(tmp_path / "part", ["m1_n4_k5"], storage)
    kept = _files(part)["m1_n4_k5/test-00000-of-00001.parquet"]
    assert _build(tmp_path / "part", ["m1_n2_k1", "m10_n1_k2"], storage) == part

    files_whole, files_part = _files(whole), _files(part)
    assert sorted(files_whole) == sorted(files_part)
    for name in files_whole:
        if name != "build_manifest.json":
            assert files_whole[name] == files_part[name], name  # every parquet (image table too) and the card
    assert files_part["m1_n4_k5/test-00000-of-00001.parquet"] == kept
    one, two = _manifest(whole), _manifest(part)
    assert [step["configs"] for step in two["steps"]] == [["m1_n4_k5"], ["m1_n2_k1", "m10_n1_k2"]]
    assert [step["configs"] for step in one["steps"]] == [ONE_GO]
    assert two["request"]["configs"] == ONE_GO == list(two["configs"])  # canonical order, as one build writes
    different = {key for key in one if one[key] != two[key]}
    assert different == {"stats", "steps"}  # the environment too, were the steps run with other libraries
    assert two["content_hash"] == one["content_hash"]
    if storage == "shared":
        assert two["image_table"] == one["image_table"]


def test_asking_for_configs_the_build_holds_changes_nothing(tmp_path: Path) -> None:
    folder = _build(tmp_path, ONE_GO)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}
    assert _build(tmp_path, ["m10_n1_k2"]) == folder
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mmneedle"]  # no staging folder left behind


def test_a_damaged_build_is_not_extended(tmp_path: Path) -> None:
    folder = _build(tmp_path, ["m1_n2_k1"])
    shard = folder / "m1_n2_k1" / "test-00000-of-00001.parquet"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte changed
    shard.write_bytes(bytes(data))
    with pytest.raises(
        BuildError,
        match=r"m1_n2_k1/test-00000-of-00001.parquet does not match its manifest .*"
        r"rebuild with --overwrite",
    ):
        _build(tmp_path, ["m10_n1_k2"])
    assert shard.read_bytes() == bytes(data) and not (folder / "m10_n1_k2").exists()
    assert len(read_rows(_build(tmp_path, ["m1_n2_k1", "m10_n1_k2"], overwrite=True), "m10_n1_k2")) == 6


def test_a_build_that_differs_in_more_than_its_configs_still_needs_overwrite(tmp_path: Path) -> None:
    _build(tmp_path, ["m1_n2_k1"])
    with pytest.raises(BuildError, match=r"already holds a different build \(limit: 3 -> 4\); pass --overwrite"):
        build_mmneedle(source="synthetic:400", out_dir=tmp_path, configs=["m10_n1_k2"], limit=4, seed=2, num_proc=1)
    folder = build_mmneedle(
        source="synthetic:400", out_dir=tmp_path, configs=["m10_n1_k2"], limit=4, seed=2, num_proc=1, overwrite=True
    )
    assert list(_manifest(folder)["configs"]) == ["m10_n1_k2"]  # --overwrite: exactly what was asked for


def test_the_recorded_command_adds_a_config_as_the_first_build_made_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "data"
    code = main(
        [
            "build",
            "mmneedle",
            "--sou",
            "synthetic:400",
            "--limit=3",
            "--seed",
            "2",
            "--configs",
            "m1_n2_k1",
            "--num-proc",
            "1",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    command = _manifest(out / "mmneedle")["build_command"]
    assert command == ["builders", "build", "mmneedle", "--source", "synthetic:400", "--limit", "3", "--seed", "2"]
    # What the harness prints for a missing config, run as printed.
    hint = shlex.join(command) + f" --configs m10_n1_k2 --out {out} --quiet"
    assert main(shlex.split(hint)[1:]) == 0
    captured = capsys.readouterr()
    assert f"added m10_n1_k2 to the build in {out / 'mmneedle'}; kept its 1 other config(s)" in captured.err
    assert _files(out / "mmneedle").keys() == _files(_build(tmp_path / "whole", ["m1_n2_k1", "m10_n1_k2"])).keys()
    assert main(shlex.split(hint)[1:]) == 0
    captured = capsys.readouterr()
    assert "nothing to build" in captured.err and f"unchanged {out / 'mmneedle'}" in captured.out


def test_the_plan_comes_first_and_a_dry_run_writes_nothing(tmp_path: Path, capsys) -> None:
    argv = [
        "build",
        "mmneedle",
        "--source",
        "synthetic:400",
        "--limit",
        "6",
        "--configs",
        "m1_n2_k1,m10_n2_k1",
        "--num-proc",
        "1",
        "--out",
        str(tmp_path),
    ]
    assert main([*argv, "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert not tmp_path.joinpath("mmneedle").exists() and captured.out == ""
    (plan,) = [line for line in captured.err.splitlines() if line.startswith("plan: ")]
    assert plan.startswith("plan: 2 config(s), 24 rows (")
    assert "stitched images to encode: " in plan and " of 2x2" in plan and "on 1 worker(s)" in plan
    estimated = float(plan.split("; about ")[1].split(" MB")[0]) * 1e6

    assert main(argv) == 0
    assert capsys.readouterr().err.splitlines()[0] == plan  # the same plan, then the build
    built = sum(p.stat().st_size for p in (tmp_path / "mmneedle").glob("*/*.parquet"))
    assert 0.75 < estimated / built < 1.33, (estimated, built)
    assert main([*argv, "--quiet", "--overwrite"]) == 0
    assert "plan:" not in capsys.readouterr().err


def test_the_card_states_the_licence_of_its_source_and_flags_a_synthetic_build(
    tmp_path: Path, coco_build: Path, synth_build: Path
) -> None:
    coco = _card_yaml(coco_build)
    assert coco["license"] == "other" and coco["license_link"] == "https://cocodataset.org/#termsofuse"
    coco_text = (coco_build / "README.md").read_text()
    assert "under the [Flickr terms of use]" in coco_text and "licensed [CC BY 4.0]" in coco_text
    assert set(_manifest(coco_build)["caveats"]) == {"limited"}  # --limit 4, below the paper's rows
    assert "synthetic" not in coco["tags"] and "limited" in coco["tags"]

    synthetic = _card_yaml(synth_build)
    assert synthetic["license"] == "cc0-1.0" and "synthetic" in synthetic["tags"]
    assert set(synthetic["caveats"]) == {"synthetic", "limited"}
    assert synthetic["caveats"] == _manifest(synth_build)["caveats"]
    assert "> - **synthetic**: synthetic images and captions" in (synth_build / "README.md").read_text()

    uncapped = build_mmneedle(source="synthetic:400", out_dir=tmp_path, configs=["m1_n2_k5"], limit=100, num_proc=2)
    assert set(_manifest(uncapped)["caveats"]) == {"synthetic"}  # 100 + 100 is the paper's subset for K = 5


def test_push_warns_before_tagging_a_synthetic_or_limited_build(
    tmp_path: Path, coco_dir: Path, synth_build: Path, capsys
) -> None:
    push = ["--repo", "acme/mmneedle", "--tag", "v1.0.0", "--dry-run"]
    assert main(["push", str(synth_build), *push]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"warning: {synth_build} is a synthetic and limited build; tagging it v1.0.0 publishes data "
        "whose scores are not comparable with the paper's:"
    )
    assert any(line.startswith("warning:   synthetic: ") for line in err)

    paper = build_mmneedle(source=f"coco={coco_dir}", out_dir=tmp_path, configs=["m1_n2_k2"], num_proc=2)
    assert _manifest(paper)["caveats"] == {}  # the paper's rows of a COCO source: nothing to warn about
    assert main(["push", str(paper), *push]) == 0
    assert capsys.readouterr().err == ""
