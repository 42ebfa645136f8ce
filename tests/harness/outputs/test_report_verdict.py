"""The verdict beside a paper's number: ours agrees when the difference is within sampling error (our standard error
and the paper's sample size), and each table counts agree / disagree / not comparable. Runs are relabelled as a
model the paper evaluated (by checkpoint name), on data recorded as the paper's own, then as synthetic."""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.outputs import verdict
from harness.outputs.model_results import ModelResults
from tasks.locovqa import report as locovqa
from tasks.milebench import report as milebench
from tasks.milebench.aggregation import load_paper_results as milebench_paper
from tasks.mmlongbench import report as mmlongbench
from tasks.mmlongbench.aggregation import load_paper_results as mmlongbench_paper


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


def test_the_rule() -> None:
    # 0-100 scale: paper 50 over 100 samples has standard error 5; ours ± 3: agree within 1.96 * sqrt(34) = 11.4.
    assert verdict.compare(61.0, 3.0, 50.0, 100, 100).kind == verdict.AGREE
    assert verdict.compare(62.0, 3.0, 50.0, 100, 100).kind == verdict.DISAGREE
    assert verdict.compare(0.61, 0.03, 0.5, 100).kind == verdict.AGREE  # proportions, the same numbers
    for args, why in (
        ((None, 1.0, 50.0, 100, 100), "no value"),
        ((50.0, 1.0, None, 100, 100), "no published value"),
        ((50.0, None, 50.0, 100, 100), "no standard error"),
        ((50.0, 1.0, 50.0, None, 100), "the paper's sample size is not known"),
    ):
        assert verdict.compare(*args) == verdict.Verdict(verdict.NOT_COMPARABLE, why)
    assert verdict.compare(50.0, 1.0, 50.0, 100, 100, "synthetic").why == "synthetic"
    # Correlations on Fisher's z over 6 points each: r = -0.96 and -0.90 agree, -0.96 and +0.95 do not.
    assert verdict.compare_correlation(-0.96, 6, -0.90, 6).kind == verdict.AGREE
    assert verdict.compare_correlation(-0.96, 6, 0.95, 6).kind == verdict.DISAGREE
    assert verdict.compare_correlation(-0.96, 3, -0.9, 6).why == "too few points for a standard error"
    assert verdict.tally([verdict.Verdict(verdict.AGREE), verdict.Verdict(verdict.NOT_COMPARABLE, "x")]) == (
        "Verdict beside the paper: ✓ agree 1 · ✗ disagree 0 · – not comparable 1 (not comparable: x (1))."
    )


def _mmlongbench_run(kind: str) -> ModelResults:
    paper = mmlongbench_paper()
    published = {c: paper[("Qwen2.5-VL-7B", c, 131072)] for c in ("VRAG", "NIAH", "ICL", "DocVQA")}
    groups = {
        "mmlongbench_vrag_128k": {"score,none": published["VRAG"] + 1, "score_stderr,none": 2.0},
        "mmlongbench_niah_128k": {"score,none": published["NIAH"] + 30, "score_stderr,none": 1.0},
        "mmlongbench_icl_128k": {"score,none": published["ICL"]},  # no standard error recorded
        "mmlongbench_summ_128k": {"score,none": "N/A"},  # no judge
        "mmlongbench_docvqa_128k": {"score,none": published["DocVQA"], "score_stderr,none": 3.0},
        "mmlongbench_128k": {"score,none": "N/A"},
    }
    results = {"mmlongbench_vrag_infoseek_128k": {"score,none": 20.0, "score_stderr,none": 2.0}}
    return ModelResults(results=results, groups=groups, sources=_sources(list(results), kind))


def test_mmlongbench_says_per_cell_and_counts_per_table(tmp_path) -> None:
    lines = mmlongbench.section("Qwen/Qwen2.5-VL-7B-Instruct", _mmlongbench_run("release"), tmp_path)
    rows = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    assert rows["VRAG"].endswith(" ✓ |") and rows["NIAH"].endswith(" ✗ |") and rows["ICL"].endswith(" – |")
    assert rows["DocVQA"].endswith(" ✓ |") and rows["Summ"] == "| Summ | N/A (39.3) – |"
    # Without the judge: the mean of the other four, named apart, beside the paper's same four averaged.
    paper = mmlongbench_paper()
    four = [paper[("Qwen2.5-VL-7B", c, 131072)] for c in ("VRAG", "NIAH", "ICL", "DocVQA")]
    ours = (four[0] + 1 + four[1] + 30 + four[2] + four[3]) / 4
    assert rows["Avg. (no Summ)"] == f"| Avg. (no Summ) | {ours:.1f} ({sum(four) / 4:.1f}) – |"  # ICL: no stderr
    assert rows["Avg"] == f"| Avg | N/A ({paper[('Qwen2.5-VL-7B', 'Avg', 131072)]:.1f}) – |"
    tallies = [line for line in lines if line.startswith("Verdict beside the paper")]
    assert tallies[0].startswith("Verdict beside the paper: ✓ agree 2 · ✗ disagree 1 · – not comparable 4 ")
    assert "no standard error (2)" in tallies[0] and "no value (2)" in tallies[0]
    assert mmlongbench.paper_samples("NIAH") == 2250 and mmlongbench.paper_samples("Avg") == 4050

    synthetic = mmlongbench.section("Qwen/Qwen2.5-VL-7B-Instruct", _mmlongbench_run("synthetic"), tmp_path)
    tally = next(line for line in synthetic if line.startswith("Verdict beside the paper"))
    assert tally.startswith(
        "Verdict beside the paper: ✓ agree 0 · ✗ disagree 0 · – not comparable 7 (not comparable: "
        "data not the paper's: synthetic images"
    )


def test_milebench_table2_gets_a_verdict_row() -> None:
    paper = milebench_paper()["LLaVA-1.5-7B"]
    names = {"Overall Real.": "realistic", "Overall Diag.": "diagnostic"}
    groups = {
        f"milebench_{names.get(c, c.replace('-', '').lower())}": {"score,none": paper[c], "score_stderr,none": 2.0}
        for c in milebench.COLUMNS
    }
    groups["milebench_t1"] = {"score,none": paper["T-1"] + 40, "score_stderr,none": 2.0}
    results = {"milebench_action_localization": {"score,none": 30.0}}
    data = ModelResults(results=results, groups=groups, sources=_sources(list(results)))
    lines = milebench.section("llava-hf/llava-1.5-7b-hf", data, None)
    row = next(line for line in lines if line.startswith("| verdict (test set) |"))
    assert row == "| verdict (test set) | ✗ | " + " | ".join(["✓"] * (len(milebench.COLUMNS) - 1)) + " |"
    assert (
        f"Verdict beside the paper: ✓ agree {len(milebench.COLUMNS) - 1} · ✗ disagree 1 · – not comparable 0." in lines
    )
    # Table 6: T-1 is three subsets of 200; the diagnostic ones are the two needles (320 each) and GPR1200 (600).
    assert milebench.paper_samples("T-1") == 600 and milebench.paper_samples("Overall Diag.") == 1240


@pytest.mark.parametrize(
    ("accuracies", "mark"), [((0.80, 0.52, 0.47, 0.30, 0.29, 0.14), "✓"), ((0.14, 0.29, 0.30, 0.47, 0.52, 0.80), "✗")]
)
def test_locovqa_r2_beside_the_papers(accuracies: tuple[float, ...], mark: str) -> None:
    tasks = [f"locovqa_mmstar_cmp_{n}" for n in (1, 4, 9, 16, 25, 36)]
    results = {t: {"accuracy,none": a} for t, a in zip(tasks, accuracies, strict=True)}
    data = ModelResults(results=results, sources=_sources(tasks))
    lines = locovqa.paper_table({"llava-hf/llava-1.5-7b-hf": data})
    row = next(line for line in lines if line.startswith("| MMStar |"))
    found = locovqa.fit([1, 4, 9, 16, 25, 36], list(accuracies), "exp")
    assert row == f"| MMStar | {found.label()} | .924*** {mark} |"
    assert (locovqa.fit_r(found) < 0) == (mark == "✓") and math.isclose(locovqa.printed_r(".924***"), -math.sqrt(0.924))
    assert any(
        line.startswith(f"Verdict beside the paper: ✓ agree {int(mark == '✓')} · ✗ disagree {int(mark == '✗')}")
        for line in lines
    )


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
    assert f"| M=1 N=2 K=1 | {exact + 1:.1f} ({exact:.1f}) ✓ | {existence - 30:.1f} ({existence:.1f}) ✗ |" in lines
    assert k2 == 0.0 and "| M=10 N=1 K=2 | 50.0 (0.0) ✗ | not run |" in lines  # 50 ± 5 is not 0 over 100 samples
    assert lines[-2] == "Verdict beside the paper: ✓ agree 1 · ✗ disagree 2 · – not comparable 0."
    assert mmneedle.beside_paper("random", data) == []  # not a model the paper evaluated
