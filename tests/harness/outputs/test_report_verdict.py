"""The verdict beside a paper's number (issue 48, items 4-5): in its mode (same items: equivalence within the
benchmark's tolerance by two one-sided tests; fresh sample: both sides clustered), ✓ / ✗ / ≈ / – per cell with the
difference and its interval, the ✗ marks adjusted for the table's cells (Holm, or Benjamini-Hochberg), and under each
table the count chance alone gives. Runs are relabelled as a model the paper evaluated (by checkpoint name), on data
recorded as the paper's own, then as synthetic."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from harness.outputs.report import verdict
from harness.outputs.report.verdict import Paper
from harness.outputs.report.verdict_family import Family, adjusted_by
from harness.outputs.results.estimates import Estimate
from harness.outputs.results.model_results import ModelResults, load_results
from harness.uncertainty.bootstrap import DEFAULT_ITERS
from tasks.locovqa import report as locovqa
from tasks.locovqa.decay_slope import within_item_slope
from tasks.locovqa.intervals import curve_intervals, curve_points, interval_text
from tasks.milebench import report as milebench
from tasks.milebench.aggregation import load_paper_results as milebench_paper
from tasks.mmlongbench import report as mmlongbench
from tasks.mmlongbench.aggregation import load_paper_results as mmlongbench_paper
from tests.support.results_runs import locovqa_random_run


def _sources(tasks: list[str], kind: str = "release") -> dict[str, dict[str, Any]]:
    """Results-file records saying each task ran on a build of the paper's rows (`kind`: its source)."""
    run = {
        "config": {"limit": None},
        "datasets": {
            t: {
                "location": "/data/build",
                "content_hash": "sha256:" + "0" * 64,
                "rows": "paper",
                "source": {"kind": kind, "spec": kind},
                "verification": "verified",
            }
            for t in tasks
        },
        "n-samples": {t: {"original": 100, "effective": 100} for t in tasks},
    }
    return dict.fromkeys(tasks, run)


SAME = verdict.Mode(verdict.SAME_ITEMS, "the paper's rows", 5.0, run_to_run=verdict.ASSUMED_RUN_TO_RUN)
FRESH = verdict.Mode(verdict.FRESH_SAMPLE, "new draws", 5.0)


def _mark(comparison: verdict.Comparison, method: str = "holm") -> str:
    family = Family(method=method)
    return family.add(comparison).verdict.mark


def _ours(value: float, stderr: float, n: int = 100) -> Estimate:
    """A 0-100 score with its (clustered) error over n rows, one item each."""
    return Estimate(value, stderr, stderr, n, n, 100, 1.0)


def test_same_items_is_an_equivalence_test_within_the_run_to_run_spread() -> None:
    # the paper's own 600 rows (100 ids) at a design effect of 3.5: ±1.96 x 100 x sqrt(.05 x 3.5 / 600) = ±3.35
    # around ours - paper, whatever the item-sampling error (here 4.0): inside ±5, ✓
    half = 1.96 * 100 * math.sqrt(0.05 * 3.5 / 600)
    found = verdict.compare(Estimate(50.0, 2.1, 4.0, 600, 100, 100, 3.5), Paper(50.0, 600, 100), SAME)
    assert (found.low, found.high) == pytest.approx((-half, half), abs=1e-2)
    assert found.equivalent and _mark(found) == "✓"
    # 10 points below on the same rows: the interval lies outside ±5, ✗ (the old rule, on the item-sampling error,
    # said ≈ for both)
    found = verdict.compare(Estimate(40.0, 2.1, 4.0, 600, 100, 100, 3.5), Paper(50.0, 600, 100), SAME)
    assert found.p_disagree < 0.01 and _mark(found) == "✗"
    assert found.difference_text() == "-10.0 [-13.3, -6.7]"
    # 3 points off on 100 rows: ±4.4 reaches across -5, ≈ (an interval narrower than the band, straddling it)
    found = verdict.compare(Estimate(50.0, 5.0, 5.0, 100, 100, 100, 1.0), Paper(53.0), SAME)
    assert found.high - found.low < 10 and found.low < -5 < found.high and _mark(found) == "≈"
    # a 0 % of 12 rows: the interval stays on the scale, [0, 12.6], and ≈
    found = verdict.compare(Estimate(0.0, 0.0, 0.0, 12, 12, 100, None), Paper(0.0), SAME)
    assert (found.low, found.high) == pytest.approx((0.0, 1.96 * 100 * math.sqrt(0.05 / 12)), abs=1e-2)
    assert _mark(found) == "≈"
    # no design effect recorded: each item's rows are taken to change together (the paper's 6 rows per id)
    found = verdict.compare(Estimate(50.0, None, None, 600, None, 100, None), Paper(50.0, 600, 100), SAME)
    assert found.high == pytest.approx(1.96 * 100 * math.sqrt(0.05 * 6 / 600), abs=1e-2)


def test_a_fresh_sample_counts_the_papers_items_not_its_rows() -> None:
    # ours: 600 rows of 100 ids, every id's six rows alike (design effect 6, intra-cluster correlation 1); the
    # paper's n = 600 is 100 ids too, so it stands for 100 independent rows, not 600
    ours = Estimate(50.0, 2.04, 5.0, 600, 100, 100, 6.0)
    assert verdict.paper_effective_n(ours, Paper(50.0, 600, 100)) == pytest.approx(100.0)
    assert verdict.paper_effective_n(ours, Paper(50.0, 600)) == pytest.approx(600.0)
    clustered = verdict.compare(ours, Paper(50.0, 600, 100), FRESH)
    rows_alone = verdict.compare(ours, Paper(50.0, 600), FRESH)
    assert clustered.high - clustered.low > rows_alone.high - rows_alone.low
    assert _mark(clustered) == "≈"  # an interval of ±19.6 cannot show ±5
    assert _mark(verdict.compare(Estimate(80.0, 1.0, 1.0, 2500, 2500, 100, 1.0), Paper(50.0, 2500), FRESH)) == "✗"
    assert _mark(verdict.compare(Estimate(50.0, 0.5, 0.5, 10000, 10000, 100, 1.0), Paper(50.0, 10000), FRESH)) == "✓"


def test_what_makes_a_cell_not_comparable() -> None:
    for ours, paper, mode, why in (
        (_ours(50.0, 1.0), Paper(50.0, 100), verdict.Mode(verdict.SAME_ITEMS, "", 5.0, "synthetic"), "synthetic"),
        (Estimate(None), Paper(50.0, 100), SAME, "no value"),
        (_ours(50.0, 1.0), Paper(None, 100), SAME, "no published value"),
        (Estimate(50.0), Paper(50.0, 100), SAME, "no bounded scale"),
        (Estimate(50.0, scale=100), Paper(50.0), SAME, "no row count"),
        (Estimate(50.0), Paper(50.0, 100), FRESH, "no standard error"),
        (_ours(50.0, 1.0), Paper(50.0), FRESH, "the paper's sample size is not known"),
    ):
        found = verdict.compare(ours, paper, mode)
        assert found.why == why and _mark(found) == "–" and found.difference_text() == ""


def test_disagreements_are_adjusted_for_the_tables_cells_and_chance_is_counted() -> None:
    p_values = [0.001] + [0.03] * 19
    comparisons = [verdict.Comparison(50.0, 40.0, 10.0, 1.0, 19.0, p) for p in p_values]
    holm, bh = (multipletests(p_values, method=m)[1] for m in ("holm", "fdr_bh"))
    for method, adjusted in (("holm", holm), ("bh", bh)):
        family = Family(method=method)
        cells = [family.add(c) for c in comparisons]
        marks = [c.verdict.mark for c in cells]
        assert marks == ["✗" if p < 0.05 else "≈" for p in adjusted]
        assert [c.verdict.p_adjusted for c in cells] == pytest.approx(list(adjusted))
    assert marks == ["✗"] * 20  # Benjamini-Hochberg: all 20 (0.03 x 20 / 20); Holm: the first only
    tally, _, chance, _ = _tally(comparisons)
    assert tally == "Verdict beside the paper: ✓ agree 0 · ✗ disagree 1 · ≈ inconclusive 19 · – not comparable 0."
    at_least = float(stats.binom.sf(19, 20, 0.05))  # 20 or more of 20 at 5 % each
    assert chance == (
        "Chance: 20 cells tested at 5 % each, so about 1.0 ✗ would come from chance alone where no cell truly "
        f"disagrees; 20 reached 5 % before adjustment (the chance of 20 or more by chance alone: {at_least:.2g}); "
        "the ✗ marks are Holm-adjusted (family-wise 5 %)."
    )
    with adjusted_by("bh"):
        assert Family().method == "bh"
    with pytest.raises(ValueError, match="unknown adjustment 'x'"), adjusted_by("x"):
        pass


def _tally(comparisons: list[verdict.Comparison]) -> list[str]:
    family = Family(method="holm")
    for comparison in comparisons:
        family.add(comparison)
    return family.tally()


def test_the_mode_follows_the_data() -> None:
    sources = _sources(["mmlongbench_vrag_viquae_128k"])
    data = ModelResults(results={"mmlongbench_vrag_viquae_128k": {}}, sources=sources)
    assert verdict.mode_of(mmlongbench.VERDICTS, data.data()).kind == verdict.SAME_ITEMS
    limited = _sources(["mmlongbench_vrag_viquae_128k"], "synthetic")
    mode = verdict.mode_of(
        mmlongbench.VERDICTS, ModelResults(results={"mmlongbench_vrag_viquae_128k": {}}, sources=limited).data()
    )
    assert mode.kind == verdict.SAME_ITEMS and mode.problem and mode.problem.startswith("data not the paper's")


def _mmlongbench_run(kind: str) -> ModelResults:
    paper = mmlongbench_paper()
    published = {c: paper[("Qwen2.5-VL-7B", c, 131072)] for c in ("VRAG", "NIAH", "ICL", "DocVQA")}
    groups = {
        "mmlongbench_vrag_128k": {"score,none": published["VRAG"] + 1, "score_stderr,none": 1.0},
        "mmlongbench_niah_128k": {"score,none": published["NIAH"] + 30, "score_stderr,none": 1.0},
        "mmlongbench_icl_128k": {"score,none": published["ICL"]},  # no standard error recorded
        "mmlongbench_summ_128k": {"score,none": "N/A"},  # no judge
        "mmlongbench_docvqa_128k": {"score,none": published["DocVQA"] - 4, "score_stderr,none": 3.0},
        "mmlongbench_128k": {"score,none": "N/A"},
    }
    results = {"mmlongbench_vrag_infoseek_128k": {"score,none": 20.0, "score_stderr,none": 2.0}}
    return ModelResults(results=results, groups=groups, sources=_sources(list(results), kind))


def test_mmlongbench_says_per_cell_and_counts_per_table(tmp_path) -> None:
    lines = mmlongbench.section("Qwen/Qwen2.5-VL-7B-Instruct", _mmlongbench_run("release"), tmp_path)
    rows = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    paper = mmlongbench_paper()
    vrag = paper[("Qwen2.5-VL-7B", "VRAG", 131072)]
    # the release's official sample: the same items, equivalence within ±5 points
    assert any("**same items** (the release's official sample" in line for line in lines)
    assert rows["VRAG"].startswith(f"| VRAG | {vrag + 1:.1f} ({vrag:.1f}) +1.0 [") and rows["VRAG"].endswith(" ✓ |")
    assert rows["NIAH"].endswith(" ✗ |")
    # no item-sampling error recorded: the run-to-run test needs none (the paper's rows and rows per id stand in)
    assert rows["ICL"].endswith(" ✓ |")
    # reaches across -5: neither shown, and the gap it rules out beside ≈ (the interval's larger end in size)
    assert rows["DocVQA"].endswith(" -4.0 [-6.5, -1.5] ≈ within ±6.5 |")
    assert rows["Summ"] == "| Summ | N/A (39.3) – |"
    # Without the judge: the mean of the other four, named apart, beside the paper's same four averaged.
    four = [paper[("Qwen2.5-VL-7B", c, 131072)] for c in ("VRAG", "NIAH", "ICL", "DocVQA")]
    ours = (four[0] + 1 + four[1] + 30 + four[2] + four[3] - 4) / 4
    assert rows["Avg. (no Summ)"].startswith(f"| Avg. (no Summ) | {ours:.1f} ({sum(four) / 4:.1f}) +6.7 [")
    assert rows["Avg"] == f"| Avg | N/A ({paper[('Qwen2.5-VL-7B', 'Avg', 131072)]:.1f}) – |"
    tallies = [line for line in lines if line.startswith("Verdict beside the paper")]
    assert tallies[0] == (
        "Verdict beside the paper: ✓ agree 2 · ✗ disagree 2 · ≈ inconclusive 1 · – not comparable 2 "
        "(not comparable: no value (2))."
    )
    chance = [line for line in lines if line.startswith("Chance: ")]
    assert chance[0].startswith("Chance: 5 cells tested at 5 % each, so about 0.2 ✗ would come from chance alone")
    assert chance[0].endswith("the ✗ marks are Holm-adjusted (family-wise 5 %).")
    assert mmlongbench.paper_samples("NIAH") == 2250 and mmlongbench.paper_samples("Avg") == 4050
    assert mmlongbench.paper_ids("viquae") == 100 and mmlongbench.paper_ids("infoseek") == 100

    synthetic = mmlongbench.section("Qwen/Qwen2.5-VL-7B-Instruct", _mmlongbench_run("synthetic"), tmp_path)
    tally = next(line for line in synthetic if line.startswith("Verdict beside the paper"))
    assert tally.startswith(
        "Verdict beside the paper: ✓ agree 0 · ✗ disagree 0 · ≈ inconclusive 0 · – not comparable 7 (not comparable: "
        "data not the paper's: synthetic images"
    )
    assert "Chance: no cell could be tested." in synthetic


def test_milebench_table2_gets_a_verdict_row() -> None:
    paper = milebench_paper()["LLaVA-1.5-7B"]
    names = {"Overall Real.": "realistic", "Overall Diag.": "diagnostic"}
    groups = {
        f"milebench_{names.get(c, c.replace('-', '').lower())}": {"score,none": paper[c], "score_stderr,none": 1.0}
        for c in milebench.COLUMNS
    }
    groups["milebench_t1"] = {"score,none": paper["T-1"] + 40, "score_stderr,none": 1.0}
    results = {"milebench_action_localization": {"score,none": 30.0}}
    data = ModelResults(results=results, groups=groups, sources=_sources(list(results)))
    lines = milebench.section("llava-hf/llava-1.5-7b-hf", data, None)
    row = next(line for line in lines if line.startswith("| verdict (test set) |"))
    assert row == "| verdict (test set) | ✗ | " + " | ".join(["✓"] * (len(milebench.COLUMNS) - 1)) + " |"
    assert (
        f"Verdict beside the paper: ✓ agree {len(milebench.COLUMNS) - 1} · ✗ disagree 1 · ≈ inconclusive 0 · "
        "– not comparable 0." in lines
    )
    # Table 6: T-1 is three subsets of 200; the diagnostic ones are the two needles (320 each) and GPR1200 (600).
    assert milebench.paper_samples("T-1") == 600 and milebench.paper_samples("Overall Diag.") == 1240


LOCOVQA = [f"mmstar_cmp_{n}" for n in (1, 4, 9, 16, 25, 36)]


@pytest.fixture(scope="module")
def locovqa_random(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random baseline on a synthetic LoCoVQA MMStar curve of 12 items at the paper's six lengths."""
    return locovqa_random_run(tmp_path_factory, "locovqa_verdict", LOCOVQA, limit=12)


def _as_release(data: ModelResults) -> ModelResults:
    """The run relabelled as one on the paper's own sources (its records say: synthetic images, a capped build)."""
    for run in data.sources.values():
        for task in run["datasets"]:
            run["datasets"][task] = _sources([task])[task]["datasets"][task]
    return data


def test_locovqa_r2_is_described_and_the_decay_judged_by_its_within_item_slope(locovqa_random: Path) -> None:
    data = _as_release(load_results(locovqa_random)["random"])
    bootstrap = curve_intervals(data)[("MMStar", "cmp")]
    assert bootstrap.items == 12 and len(bootstrap.signed_r2) == DEFAULT_ITERS
    again = curve_intervals(data)[("MMStar", "cmp")].signed_r2
    assert np.array_equal(again, bootstrap.signed_r2, equal_nan=True)  # seeded by the series' name
    low, high = bootstrap.r2_bounds() or (math.nan, math.nan)
    lines = locovqa.paper_table({"llava-hf/llava-1.5-7b-hf": data})
    assert any("fresh sample" in line and "item bootstrap" in line for line in lines)
    row = next(line for line in lines if line.startswith("| MMStar |"))
    ours, paper = row.split(" | ")[1:3]
    # r² with its bootstrap interval, a description; the verdict is on the within-item slope's direction
    slope = within_item_slope(curve_points(data)[("MMStar", "cmp")])
    assert slope is not None and slope.items == 12
    assert ours.endswith(f"{interval_text((low, high))}; slope {slope.text('image')}") and paper.startswith(".924*** ")
    # the paper's curve falls (.924***): ✓ where our slope's interval lies below 0, ✗ where ours rises significantly
    if slope.high < 0:
        mark = "✓"
    else:
        mark = "✗" if slope.slope > 0 and slope.p_flat < 0.05 else "≈"  # one cell: Holm leaves its p as it is
    assert paper == f".924*** {mark} |"
    assert any("a description of the curve's shape (not tested" in line for line in lines)
    assert any(line.startswith("Chance: 1 cell tested at 5 % each, so about 0.1 ✗") for line in lines)
    # the same run on its recorded synthetic data: not the paper's items, not comparable
    synthetic = locovqa.paper_table({"llava-hf/llava-1.5-7b-hf": load_results(locovqa_random)["random"]})
    assert next(line for line in synthetic if line.startswith("| MMStar |")).endswith(".924*** – |")


def test_locovqa_without_item_rows_has_no_interval_and_no_verdict() -> None:
    tasks = [f"locovqa_mmstar_cmp_{n}" for n in (1, 4, 9, 16, 25, 36)]
    accuracies = (0.80, 0.52, 0.47, 0.30, 0.29, 0.14)
    results = {t: {"accuracy,none": a} for t, a in zip(tasks, accuracies, strict=True)}
    data = ModelResults(results=results, sources=_sources(tasks))
    lines = locovqa.paper_table({"llava-hf/llava-1.5-7b-hf": data})
    found = locovqa.fit([1, 4, 9, 16, 25, 36], list(accuracies), "exp")
    assert next(line for line in lines if line.startswith("| MMStar |")) == f"| MMStar | {found.label()} | .924*** – |"
    assert any("no interval (no item-level rows) (1)" in line for line in lines)
    assert math.isclose(locovqa.printed_r(".924***"), -math.sqrt(0.924))


def test_mmneedle_beside_the_papers_tables() -> None:
    from tasks.mmneedle import report as mmneedle

    paper = mmneedle.load_paper_results()
    exact, existence = (
        paper[("IDEFICS2-8B", 1, 2, 1, kind, metric)]
        for kind, metric in (("positive", "Exact"), ("negative", "Existence"))
    )
    results = {
        "mmneedle_m1_n2_k1_pos": {"exact_acc,none": exact / 100 + 0.01, "exact_acc_stderr,none": 0.015},
        "mmneedle_m1_n2_k1_neg": {"existence_acc,none": existence / 100 - 0.3, "existence_acc_stderr,none": 0.01},
        "mmneedle_m10_n1_k2_pos": {"exact_acc,none": 0.5, "exact_acc_stderr,none": 0.05},
    }
    data = ModelResults(results=results, sources=_sources(list(results)))
    assert mmneedle.paper_model_for("HuggingFaceM4/idefics2-8b", data) == "IDEFICS2-8B"
    assert mmneedle.paper_model_for("THUDM/cogvlm2-llama3-chat-19B", data) == "CogVLM2-Llama-3"
    lines = mmneedle.beside_paper("HuggingFaceM4/idefics2-8b", data)
    assert lines[0] == "### MMNeedle beside the paper's IDEFICS2-8B (%)"
    k2 = paper[("IDEFICS2-8B", 10, 1, 2, "positive", "Exact")]
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in lines if line.startswith("| M=")}
    positives, negatives = rows["M=1 N=2 K=1"]
    assert positives.startswith(f"{exact + 1:.1f} ({exact:.1f}) +1.0 [") and positives.endswith(" ✓")
    assert negatives.startswith(f"{existence - 30:.1f} ({existence:.1f}) -30.0 [") and negatives.endswith(" ✗ |")
    assert k2 == 0.0 and rows["M=10 N=1 K=2"][0].endswith(" ✗") and rows["M=10 N=1 K=2"][1] == "not run |"
    assert "Verdict beside the paper: ✓ agree 1 · ✗ disagree 2 · ≈ inconclusive 0 · – not comparable 0." in lines
    assert mmneedle.beside_paper("random", data) == []  # not a model the paper evaluated
