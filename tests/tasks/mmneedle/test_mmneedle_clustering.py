"""MMNeedle's rows clustered on the stitched images they show (issue 48), through the real `harness` run on the
synthetic build: an M=1 sample's image is its own in a config (each row a cluster: design effect exactly 1) and
the same at K=1 and K=5 (a group over K counts it once); the random baseline has no item effect, so its design
effect is about 1 on the crossed M=10 configs too; the results of the `mmneedle_k1` group carry every clustered
field."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from builders.mmneedle import build_mmneedle
from tests.support.clustered_results import assert_clustered_fields, results_in, strict_mean_group

K1, K5 = "mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k5_pos"


@pytest.fixture(scope="module")
def k1_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every K=1 config, 20 positives and 20 negatives each (as `make demo` builds them)."""
    root = tmp_path_factory.mktemp("mmneedle_k1")
    configs = ["m1_n2_k1", "m1_n4_k1", "m1_n8_k1", "m10_n1_k1", "m10_n2_k1", "m10_n4_k1", "m10_n8_k1"]
    build_mmneedle(source="synthetic", out_dir=root, configs=configs, limit=20, seed=0, num_proc=1)
    return root


def test_the_random_baseline_has_a_design_effect_of_one(harness, k1_dir: Path, tmp_path: Path) -> None:
    run = harness("--tasks", "mmneedle_k1", "--model", "random", "--data_dir", k1_dir, "--output_path", tmp_path)
    assert run.code == 0, run.err
    results = results_in(tmp_path / "random")
    assert assert_clustered_fields(results) >= 79  # 7 positive configs x 7 metrics, 7 negative x 4, 2 of the group
    behind = results["uncertainty"]
    one_image = behind["mmneedle_m1_n2_k1_pos"]["exact_acc"]
    assert (one_image["n_clusters"], one_image["design_effect"]) == (20, pytest.approx(1.0))
    crossed = [
        entry["design_effect"]
        for task, metrics in behind.items()
        if task.startswith("mmneedle_m10_")
        for entry in metrics.values()
        if entry["n_clusters"] < entry["n"] and isinstance(entry["design_effect"], float)
    ]
    assert len(crossed) >= 10 and 0.85 <= statistics.mean(crossed) <= 1.15  # rows sharing images, no item effect
    assert behind["mmneedle_k1"]["exact_acc_pos"]["method"] == "delta method"


def test_a_group_over_k_counts_an_m1_image_once(harness, data_dir: Path, tmp_path: Path) -> None:
    groups = strict_mean_group(tmp_path, "m1_n2_over_k", [K1, K5], "existence_acc")
    run = harness(
        "--tasks", "m1_n2_over_k", "--model", "random", "--include_path", groups, "--data_dir", data_dir,
        "--output_path", tmp_path / "out",
    )  # fmt: skip
    assert run.code == 0, run.err
    results = results_in(tmp_path / "out" / "random")
    n = results["sample_counts"][K1]["n_scored"]
    assert results["sample_counts"][K5]["n_scored"] == n
    pooled = results["uncertainty"]["m1_n2_over_k"]["existence_acc"]
    assert (pooled["n"], pooled["n_clusters"]) == (2 * n, n)  # sample i shows one stitched image at K=1 and K=5
