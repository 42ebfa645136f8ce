"""MMLongBench's rows clustered on their source id (issue 48) on a fixture build through the real `harness` run: a
constant answer, right or wrong for every row of an id, has a design effect of exactly the id's row count (6 depths
of a VH-Single id, 3 of a VH-Multi one) and, pooled over two lengths by a group, twice that: the group counts the id
once, where its rule's own error takes the lengths for independent samples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from builders.mmlongbench.build import build_mmlongbench
from harness.uncertainty.small_sample import INTERVAL_RULE
from tests.support.clustered_results import assert_clustered_fields, results_in, strict_mean_group

CONFIGS = ["niah_vh_single_8k", "niah_vh_single_16k", "niah_vh_multi_8k"]
SINGLE_8K, SINGLE_16K, MULTI_8K = (f"mmlongbench_{c}" for c in CONFIGS)


@pytest.fixture(scope="module")
def vh_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mmlb_vh")
    build_mmlongbench(source="fixture", out_dir=root, configs=CONFIGS)
    return root


def test_a_constant_answer_has_the_rows_of_an_id_as_design_effect_and_a_group_counts_the_id_once(
    harness, vh_dir: Path, tmp_path: Path
) -> None:
    groups = strict_mean_group(tmp_path, "vh_single_lengths", [SINGLE_8K, SINGLE_16K], "vh_acc")
    run = harness(
        "--tasks", f"vh_single_lengths,{MULTI_8K}", "--model", "constant", "--model_args", "answer=Yes",
        "--include_path", groups, "--data_dir", vh_dir, "--output_path", tmp_path / "out",
    )  # fmt: skip
    assert run.code == 0, run.err
    results = results_in(tmp_path / "out" / "constant")
    assert assert_clustered_fields(results) >= 10
    behind = results["uncertainty"]
    # the fixture's ids: 3 per dataset, their golds Yes, No, Yes; "Yes" is right for all rows of two ids
    assert results["results"][SINGLE_8K]["vh_acc,none"] == pytest.approx(200 / 3)
    assert behind[SINGLE_8K]["vh_acc"] == {
        "n": 18, "n_clusters": 3, "design_effect": pytest.approx(6.0), "overlap": False, "method": "mean",
        # three equal items: CR2 is CR1, Kish's clusters C; the interval rule's figures (issue 107): the items'
        # totals (two right, one wrong: 1, 1, -2) sum to 0 against equal weights (slope 0), and each item's rows
        # agree (ρ̂ 1), so the working model's n is that of the two items other than the largest, (18/6)² / 2
        "stderr_cr2": pytest.approx(results["results"][SINGLE_8K]["vh_acc_stderr_clustered,none"]),
        "kish_clusters": 3.0, "largest_cluster": 6, "slope": pytest.approx(0.0, abs=1e-12),
        "working_model_n": pytest.approx(4.5), "interval_rule": INTERVAL_RULE,
    }  # fmt: skip
    assert behind[MULTI_8K]["vh_acc"]["design_effect"] == pytest.approx(3.0)
    # pooled over 8K and 16K: 36 rows, still 3 items, each asked 12 times
    pooled = behind["vh_single_lengths"]["vh_acc"]
    assert (pooled["n"], pooled["n_clusters"], pooled["method"]) == (36, 3, "delta method")
    assert pooled["design_effect"] == pytest.approx(12.0)
    group = results["groups"]["vh_single_lengths"]
    task = results["results"][SINGLE_8K]
    # the same answers at both lengths: the group is as uncertain as one length ...
    assert group["vh_acc_stderr_clustered,none"] == pytest.approx(task["vh_acc_stderr_clustered,none"])
    # ... where the rule's own error takes the two lengths for independent samples
    assert group["vh_acc_stderr,none"] == pytest.approx(task["vh_acc_stderr,none"] / math.sqrt(2))
    # the task's own (`!function`) aggregation, VH folded at 50, by the seeded cluster bootstrap
    assert behind[SINGLE_8K]["score"]["method"] == "bootstrap"
    again = harness(
        "--tasks", SINGLE_8K, "--model", "constant", "--model_args", "answer=Yes", "--data_dir", vh_dir,
        "--output_path", tmp_path / "again",
    )  # fmt: skip
    assert again.code == 0, again.err
    assert results_in(tmp_path / "again" / "constant")["results"][SINGLE_8K] == results["results"][SINGLE_8K]
