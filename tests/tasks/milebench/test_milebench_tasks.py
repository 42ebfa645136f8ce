"""MileBench tasks on a fixture build: the leaves cover the builder's configs, every row scores through its subset's
official scorer, the YAML groups aggregate as Table 2 does (`aggregation.table2_row`, which reproduces the paper's
own rows), and `harness --tasks milebench --model random` runs end to end and reports in Table 2's layout."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from builders.milebench.build import build_milebench
from builders.milebench.subsets import ADV, COMBINED, CONFIGS, LEVELS, SUBSETS, TASK_IDS
from harness.config.task_index import TaskIndex
from harness.outputs.results.model_results import ModelResults
from tasks.milebench import aggregation, report, scoring, utils
from tests.support.clustered_results import assert_clustered_fields
from tests.support.release_rows import release_rows

TEST_CONFIGS = [name for name, cfg in CONFIGS.items() if cfg.mode != COMBINED and cfg.split != ADV]


@pytest.fixture(scope="module")
def milebench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("milebench_data")
    build_milebench(source="fixture", out_dir=root, configs=[*TEST_CONFIGS, "webqa_adv", "webqa_combined"])
    return root


def test_task_leaves_and_groups_cover_exactly_the_builders_configs() -> None:
    index = TaskIndex()
    leaves = {name: cfg for name, cfg in index.tasks.items() if cfg.dataset_path == "milebench"}
    assert set(leaves) == {f"milebench_{name}" for name in CONFIGS}
    assert all(leaves[f"milebench_{n}"].dataset_name == n for n in CONFIGS)
    assert index.groups["milebench_realistic"].task == [f"milebench_{t.replace('-', '').lower()}" for t in TASK_IDS[:9]]
    assert index.groups["milebench_diagnostic"].task == ["milebench_n1", "milebench_n2", "milebench_i1"]
    assert index.groups["milebench_s3"].task == ["milebench_spot_the_diff", "milebench_clevr_change", "milebench_iedit"]
    assert index.groups["milebench_combined_t2"].task[0] == "milebench_object_existence_combined"
    assert index.groups["milebench_adv_few"].aggregate_metric_list == [{"metric": "score_few", "aggregation": "mean"}]
    assert index.groups["milebench"].task == [
        "milebench_realistic",
        "milebench_diagnostic",
        "milebench_few",
        "milebench_medium",
        "milebench_many",
    ]
    alfred = leaves["milebench_alfred"]
    assert [m.metric for m in alfred.metric_list] == ["score", "rouge_l_f", "score_few", "score_medium", "score_many"]
    assert alfred.generation_kwargs == {"max_gen_toks": 512, "temperature": 0.0, "do_sample": False, "until": []}
    assert str(alfred.truncation) == "!function truncation.truncate_left"
    assert "accuracy_empty_is_wrong" in [m.metric for m in leaves["milebench_gpr1200"].metric_list]


def gold_response(row: dict) -> str:
    """What a model answering the gold perfectly would say."""
    if row["metric"] == "multiple_choice" and "\nA. " in row["context"]:
        return f"{scoring.option_key(row['answer_index'])}. {row['answer']}"
    return row["answer"]


@pytest.mark.slow
def test_every_subset_scores_100_for_its_gold_and_0_for_nonsense(milebench_dir: Path) -> None:
    for config in TEST_CONFIGS:
        for row in release_rows(milebench_dir, "milebench", config):
            assert utils.row_scores(row, gold_response(row))["score"] == pytest.approx(100.0), (config, row["id"])
            assert utils.row_scores(row, "zzzz qqqq")["score"] == 0.0, (config, row["id"])


def test_random_answers_have_the_form_each_scorer_reads(milebench_dir: Path) -> None:
    rng = random.Random(0)
    for config in TEST_CONFIGS:
        for row in release_rows(milebench_dir, "milebench", config):
            guess = utils.random_answer(row, rng)
            if row["metric"] == "multiple_choice":
                correct, read_as = scoring.multiple_choice(guess, row["answer"], row["choices"])
                assert read_as in {scoring.option_key(i) for i in range(len(row["choices"]))}, (config, guess)
            elif row["metric"] == "needle":
                assert len(guess) == 7 and guess.isdigit()
            else:
                assert guess.strip() and all(word in row["context"] for word in guess.split())


def test_table2_aggregation_reproduces_the_papers_rows() -> None:
    """Overall Real. is the mean of the nine task columns and Overall Diag. of the last three (within 0.1, the
    published columns being rounded), for every model but the exceptions the paper itself shows (its Random row;
    GPT-4V's and GPT-4o's Overall Diag.)."""
    published = aggregation.load_paper_results()
    assert len(published) == 23 and list(published)[:3] == ["Random", "GPT-4V", "GPT-4o"]
    for model, row in published.items():
        real = sum(row[t] for t in TASK_IDS[:9]) / 9
        diag = sum(row[t] for t in TASK_IDS[9:]) / 3
        if model != "Random":
            assert real == pytest.approx(row[aggregation.OVERALL_REALISTIC], abs=0.1), model
        if model not in ("Random", "GPT-4V", "GPT-4o"):
            assert diag == pytest.approx(row[aggregation.OVERALL_DIAGNOSTIC], abs=0.1), model
    assert (published["GPT-4o"]["N-1"] + published["GPT-4o"]["N-2"]) / 2 == pytest.approx(99.4)
    # The same rule from subset scores: each task the mean of its subsets.
    scores = {s.key: float(i) for i, s in enumerate(SUBSETS)}
    row = aggregation.table2_row(scores)
    assert row["T-1"] == pytest.approx(1.0) and row["S-4"] == pytest.approx((23 + 24) / 2)
    assert aggregation.table2_row({**scores, "iedit": None})["S-3"] is None


def _score(entry: dict, metric: str = "score") -> float | None:
    value = entry.get(f"{metric},none")
    return None if value in (None, "N/A") else float(value)


@pytest.mark.slow
def test_random_run_end_to_end_groups_aggregate_as_table_2(harness, milebench_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = harness("--tasks", "milebench", "--model", "random", "--data_dir", milebench_dir, "--output_path", out)
    assert run.code == 0, run.err
    (results_file,) = (out / "random").glob("results_*.json")
    results = json.loads(results_file.read_text())
    assert set(results["results"]) == {f"milebench_{c}" for c in TEST_CONFIGS}
    for task, counts in results["sample_counts"].items():
        assert counts["n_scored"] == counts["sample_len"] == 3 and "n_truncated" not in counts, task
    by_subset = {s.key: _score(results["results"][f"milebench_{s.key}"]) for s in SUBSETS}
    expected = aggregation.table2_row(by_subset)
    groups = results["groups"]
    for task_id in TASK_IDS:
        assert _score(groups[f"milebench_{task_id.replace('-', '').lower()}"]) == pytest.approx(expected[task_id])
    assert _score(groups["milebench_realistic"]) == pytest.approx(expected[aggregation.OVERALL_REALISTIC])
    assert _score(groups["milebench_diagnostic"]) == pytest.approx(expected[aggregation.OVERALL_DIAGNOSTIC])
    for level in LEVELS:
        metric = f"score_{level.lower()}"
        values = [_score(results["results"][f"milebench_{s.key}"], metric) for s in SUBSETS]
        present = [v for v in values if v is not None]
        assert _score(groups[f"milebench_{level.lower()}"], metric) == pytest.approx(sum(present) / len(present))
    assert _score(results["results"]["milebench_text_needle"], "score_medium") is None  # no Medium row there
    # every task and pooled group with its clustered error (issue 48); a task's own aggregation by the bootstrap
    assert assert_clustered_fields(results) > 100
    assert results["uncertainty"]["milebench_alfred"]["score_few"]["method"] == "bootstrap"
    assert results["uncertainty"]["milebench_t1"]["score"]["method"] == "delta method"

    assert harness("report", out).code == 0
    text = (out / "report.md").read_text()
    assert "### MileBench" in text and "| | T-1 | T-2 | T-3 | T-4 | S-1 |" in text and "| random (test) |" in text
    assert "| ALFRED | S-4 | ROUGE-L |" in text
    # the random baseline stands beside Table 2's Random row, with the verdicts' mode, tally and chance line (issue 48):
    # on this stand-in data every cell is not comparable, and the report says so
    assert "| paper: Random | 25.0 | 31.9 | 25.0 | 31.6 | 25.1 | 24.6 | 0.0 | 25.3 | 0.0 | 0.0 | 0.0 | 11.4 |" in text
    assert "| verdict (test set) | – | – |" in text and "Verdict beside the paper: ✓ agree 0 · ✗ disagree 0" in text
    assert "Chance: no cell could be tested." in text
    assert "| image-count level (mean over subsets) | Few | Medium | Many |" in text


def test_a_papers_model_is_matched_by_its_checkpoint() -> None:
    assert report.paper_model_for("llava-hf/llava-1.5-7b-hf") == "LLaVA-1.5-7B"
    assert report.paper_model_for("Qwen/Qwen-VL-Chat") == "Qwen-VL-Chat"
    assert report.paper_model_for("openai", "gpt-4o-2024-05-13") == "GPT-4o"
    assert report.paper_model_for("gpt-4o-mini") is None and report.paper_model_for("random", "") is None
    assert report.paper_model_for("/models/llava-v1.6-vicuna-13b-hf/") == "LLaVA-1.6-13B"


def test_the_papers_row_and_table_3_sit_beside_a_paper_models_run(tmp_path: Path) -> None:
    groups = {
        f"milebench{s}_{t.replace('-', '').lower()}": {"score,none": 40.0} for s in ("", "_adv") for t in TASK_IDS
    }
    groups.update(
        {
            "milebench_realistic": {"score,none": 42.0},
            "milebench_diagnostic": {"score,none": 10.0},
            "milebench_adv_realistic": {"score,none": 41.0},
            "milebench_adv_diagnostic": {"score,none": "N/A"},
        }
    )
    data = ModelResults(groups=groups)
    lines = report.section("Qwen/Qwen-VL-Chat", data, tmp_path)
    text = "\n".join(lines)
    assert (
        "| paper: Qwen-VL-Chat | 34.7 | 40.0 | 22.3 | 44.6 | 57.3 | 52.3 | 14.3 | 26.7 | 59.5 | 35.3 | 62.8 | 13.5 | "
        "39.1 | 37.2 |" in text
    )
    assert "| Qwen/Qwen-VL-Chat (adversarial) | 40.0 |" in text and "| 41.0 | N/A |" in text
    assert "| Qwen/Qwen-VL-Chat | 42.0 | 41.0 | 1.0 |" in text and "| paper: Qwen-VL-Chat | 39.1 | 38.2 | 0.9 |" in text
    assert not math.isnan(aggregation.load_paper_contamination()["VILA"]["delta"])
