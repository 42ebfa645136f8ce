"""LoCoVQA's rows clustered on their item (issue 48) through the real `harness` run on the offline build: the needle
ablation's item is its digit, put on one haystack at every position, so a constant answer, right for every row of
one digit, has a design effect of exactly the rows a digit has in a task, and pooled over both modes by a group,
twice that; the random baseline's results carry every clustered field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.locovqa import build_locovqa
from tests.support.clustered_results import assert_clustered_fields, results_in, strict_mean_group

TASKS = ["locovqa_needle_int_4", "locovqa_needle_cmp_4"]


@pytest.fixture(scope="module")
def needle_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("locovqa_needle")
    build_locovqa(["synthetic"], root, ["needle_int_4", "needle_cmp_4"], limit=2, cell_size=16)
    return root


def test_a_digit_is_one_item_at_every_position_and_in_both_modes(harness, needle_build: Path, tmp_path: Path) -> None:
    groups = strict_mean_group(tmp_path, "needle_4_both_modes", TASKS, "accuracy")
    run = harness(
        "--tasks", "needle_4_both_modes", "--model", "constant", "--model_args", "answer=0",
        "--include_path", groups, "--data_dir", needle_build, "--output_path", tmp_path / "out",
    )  # fmt: skip
    assert run.code == 0, run.err
    results = results_in(tmp_path / "out" / "constant")
    assert assert_clustered_fields(results) >= 3
    for task in TASKS:  # digits 0 and 1, each at the 4 positions: "0" is right for one digit's 4 rows
        assert results["results"][task]["accuracy,none"] == pytest.approx(0.5)
        behind = results["uncertainty"][task]["accuracy"]
        assert (behind["n"], behind["n_clusters"], behind["design_effect"]) == (8, 2, pytest.approx(4.0))
    pooled = results["uncertainty"]["needle_4_both_modes"]["accuracy"]
    assert (pooled["n"], pooled["n_clusters"], pooled["design_effect"]) == (16, 2, pytest.approx(8.0))


def test_the_random_baseline_s_results_carry_every_clustered_field(harness, needle_build: Path, tmp_path: Path) -> None:
    run = harness(
        "--tasks", ",".join(TASKS), "--model", "random", "--data_dir", needle_build, "--output_path", tmp_path
    )
    assert run.code == 0, run.err
    results = results_in(tmp_path / "random")
    assert assert_clustered_fields(results) >= 4
    journal = (tmp_path / "random" / f"journal_{TASKS[0]}.jsonl").read_text().splitlines()[1:]
    keys = {json.loads(line)["sample_id"]: json.loads(line)["cluster"] for line in journal}
    assert keys["needle_int_4-g0-p00"] == keys["needle_int_4-g0-p03"] == ['locovqa:{"answer":"0","task":"needle"}']
