"""`harness power` (issue 48, item 7): from MMLongBench's fixture build alone (source ids of 3 and 6 depth rows, known
before any run) the minimum detectable effect is the closed form with the design effect 1 + (m̄ - 1)ρ, and a seeded
simulation of paired runs with that correlation detects a true difference of that size about as often as the power
asked for; from a finished run's journal the spread and design effect are the run's own; bad input is one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from builders.mmlongbench.build import build_mmlongbench
from harness.outputs.power.analysis import PowerOptions, power_row
from harness.run.cli import main
from harness.uncertainty.comparisons import paired_difference
from harness.uncertainty.variance import design_from_keys

VH = ["niah_vh_single_8k", "niah_vh_multi_8k"]
SINGLE, MULTI = (f"mmlongbench_{c}" for c in VH)


@pytest.fixture(scope="module")
def vh_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("power_vh")
    build_mmlongbench(source="fixture", out_dir=root, configs=VH)
    return root


def _power(capsys: pytest.CaptureFixture[str], *argv: object) -> dict:
    assert main(["power", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _z(alpha: float = 0.05, power: float = 0.8) -> float:
    return stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)


def test_the_minimum_detectable_effect_before_a_run_is_the_closed_form(
    vh_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _power(capsys, "--tasks", f"{SINGLE},{MULTI}", "--data_dir", vh_dir, "--icc", "0.4", "--effect", "10")
    rows = {row["task"]: row for row in found["rows"]}
    for task, size in ((SINGLE, 6), (MULTI, 3)):  # 3 source ids, each with all its depth rows
        row = rows[task]
        assert (row["n"], row["n_clusters"], row["rows_per_cluster"]) == (3 * size, 3, size)
        deff = 1 + (size - 1) * 0.4
        sd = 50 * math.sqrt(2 * (1 - 0.5))  # two 0/1 runs at 50 % (sd 50 points), paired at per-row correlation 0.5
        assert row["design_effect"] == pytest.approx(deff)
        assert row["mde"] == pytest.approx(_z() * math.sqrt(deff * sd * sd / (3 * size)))
        needed = math.ceil(deff * (_z() * sd / 10) ** 2)
        assert (row["rows_needed"], row["clusters_needed"]) == (needed, math.ceil(needed / size))
    one = _power(capsys, "--tasks", SINGLE, "--data_dir", vh_dir, "--one_sample", "--sd", "20", "--icc", "0")
    assert one["rows"][0]["mde"] == pytest.approx(_z() * 20 / math.sqrt(18))  # ρ = 0: rows as independent
    apart = _power(capsys, "--tasks", SINGLE, "--data_dir", vh_dir, "--unpaired", "--icc", "0")
    assert apart["rows"][0]["comparison_sd"] == pytest.approx(50 * math.sqrt(2))


def test_a_seeded_simulation_detects_the_minimum_detectable_effect_with_the_power_asked() -> None:
    clusters, size, icc, sd = 120, 5, 0.3, 1.0
    design = design_from_keys([[f"item{i // size}"] for i in range(clusters * size)])
    options = PowerOptions(comparison="one_sample", icc=icc, sd=sd)
    row = power_row("sim", "sim", None, design, sd, 1 + (size - 1) * icc, icc, options)
    keys = [[f"item{i // size}"] for i in range(clusters * size)]

    def detected(effect: float, draws: int, seed: int) -> float:
        """How often the clustered paired test rejects at 5 % when per-row differences with an item effect
        (correlation `icc` within an item) have mean `effect`."""
        rng = np.random.default_rng(seed)
        hits = 0
        for _ in range(draws):
            item = np.repeat(rng.normal(0, math.sqrt(icc) * sd, clusters), size)
            d = effect + item + rng.normal(0, math.sqrt(1 - icc) * sd, clusters * size)
            hits += paired_difference(d, np.zeros_like(d), keys).p_value < 0.05
        return hits / draws

    assert detected(row["mde"], 1000, 48) == pytest.approx(0.8, abs=0.04)
    # the i.i.d. formula's smaller MDE (no design effect) is detected far less often than the power it promised
    iid = power_row("sim", "sim", None, design, sd, 1.0, 0.0, options)
    assert detected(iid["mde"], 500, 49) < 0.6


def test_after_a_run_the_spread_and_design_effect_are_the_run_s(
    vh_dir: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [
        ["--tasks", SINGLE, "--model", "random", "--data_dir", vh_dir],
        [
            "--tasks",
            "mmneedle_m1_n2_k1_pos",
            "--model",
            "constant",
            "--model_args",
            "answer=-1",
            "--data_dir",
            data_dir,
        ],
    ]
    for argv in runs:
        assert main([*map(str, argv), "--output_path", str(tmp_path), "--no_progress"]) == 0
    capsys.readouterr()
    (results_file,) = (tmp_path / "random").glob("results_*.json")
    results = json.loads(results_file.read_text())
    found = _power(capsys, tmp_path, "--model", "random", "--metrics", "vh_acc", "--effect", "10")
    (row,) = found["rows"]
    entry, behind = results["results"][SINGLE], results["uncertainty"][SINGLE]["vh_acc"]
    assert row["sd"] == pytest.approx(entry["vh_acc_stderr,none"] * math.sqrt(18))
    assert row["design_effect"] == pytest.approx(max(behind["design_effect"], 1.0))
    assert row["icc"] == pytest.approx((behind["design_effect"] - 1) / 5)  # clusters of 6: 2L/n = 5
    # a constant answer wrong for every row: no spread, so nothing to plan from (said, not a zero)
    (flat,) = _power(capsys, tmp_path, "--model", "constant", "--metrics", "exact_acc")["rows"]
    assert flat["mde"] == "N/A" and flat["rows_needed"] is None and "no spread" in flat["note"]
    assert main(["power", str(tmp_path), "--model", "random", "--metrics", "vh_acc"]) == 0
    table = capsys.readouterr().out
    assert "a run: each metric's sd and design effect measured" in table and SINGLE in table


def test_bad_input_is_one_line(vh_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["--data_dir", str(vh_dir)], "name the tasks"),
        (["--tasks", "mmlongbench_nonesuch", "--data_dir", str(vh_dir)], "mmlongbench_nonesuch"),
        (["--tasks", SINGLE, "--data_dir", str(vh_dir), "--alpha", "2"], "between 0 and 1"),
        (["--tasks", SINGLE, "--data_dir", str(vh_dir), "--sd", "0"], "--sd"),
        (["--tasks", SINGLE, "--data_dir", str(vh_dir), "--effect", "150"], "--effect 150: a difference in points"),
        (["--tasks", SINGLE, "--data_dir", str(vh_dir), "--paired", "--unpaired"], "not allowed with"),
        ([str(tmp_path), "--icc", "0.2"], "--icc"),
        ([str(tmp_path), "--icc", "0"], "--icc"),
        ([str(tmp_path / "nowhere")], "no such folder"),
        (["--tasks", SINGLE, "--data_dir", str(tmp_path / "nowhere")], "nowhere"),
    ]
    for argv, said in cases:
        assert main(["power", *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("harness: error:") and said in err, (argv, err)
