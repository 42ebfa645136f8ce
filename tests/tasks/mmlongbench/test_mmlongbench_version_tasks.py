"""MMLongBench's other versions run end to end on their offline fixtures: V1.1's tasks (`mmlongbench_v1_1_*`, DocVQA by
its judge, Summ by the paper's, each judged by its own model in one run), VLMEvalKit's 256K/512K sets as VLMEvalKit
scores them (no prefill, DocVQA by its judge, rows averaged) and as the paper's harness would (its prefill, its
scorers and groups)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builders.mmlongbench.build import build_mmlongbench
from harness.config.task_index import TaskIndex
from tasks.mmlongbench import scoring
from tasks.mmlongbench.scorers import v1_1
from tests.support.judged_runs import judge_server, judged_run, prompt_of, vlmevalkit_judge_prompt

V1_1_CONFIGS = ["v1_1_128k"]
VLMEVALKIT = ["vlmevalkit_256k", "vlmevalkit_512k"]


@pytest.fixture(scope="module")
def versions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("versions")
    build_mmlongbench(source="fixture", out_dir=root, configs=[*V1_1_CONFIGS, *VLMEVALKIT])
    return root


def judge_reply(body: dict[str, Any]) -> str:
    """DocVQA's judge gives the point where the gold is 3; the summarization judge's replies parse."""
    prompt = prompt_of(body)
    if "<Standard Answer>:" in prompt:
        if "LIST-style" in prompt:
            return '[Rationale]: one.\n[JSON]:\n{"student_answer_count": 2, "covered_count": 1}'
        return "[Score]: 1 point" if "<Standard Answer>: 3\n" in prompt else "[Score]: 0 points"
    if "evaluate the fluency" in prompt:
        return '{"fluency": 1}'
    if "Key points:" in prompt:
        return '{"recall": 1}'
    return '{"precision": 1, "sentence_count": 2}'


def judged_constant_run(
    harness, tasks: str, versions_dir: Path, answer: str, out: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the bodies of the judge calls, the results file) of a run into `out` of `tasks`, the constant model answering
    `answer`, each judge call answered by `judge_reply`; the run succeeds."""
    with judge_server(judge_reply) as server:
        run = harness(*judged_run(server, tasks, versions_dir, answer=answer), "--output_path", out)
        assert run.code == 0, run.err
    (results_file,) = (out / "constant").glob("results_*.json")
    return [r.body for r in server.received], json.loads(results_file.read_text())


def test_each_version_has_its_tasks_and_templates() -> None:
    index = TaskIndex()
    tasks = index.tasks
    assert tasks["mmlongbench_v1_1_docvqa_slidevqa_8k"].dataset_name == "v1_1_docvqa_slidevqa_8k"
    assert tasks["mmlongbench_v1_1_vrag_viquae_8k"].assistant_prefix == "answer_prefix"  # the paper's prefill
    assert tasks["mmlongbench_vlmevalkit_vrag_viquae_256k"].assistant_prefix is None  # VLMEvalKit has none
    assert tasks["mmlongbench_vlmevalkit_as_paper_vrag_viquae_256k"].assistant_prefix == "answer_prefix"
    assert tasks["mmlongbench_vlmevalkit_as_paper_vrag_viquae_256k"].dataset_name == "vlmevalkit_vrag_viquae_256k"
    assert tasks["mmlongbench_vlmevalkit_docvqa_slidevqa_512k"].judge["model"] == "gpt-5.5-2026-04-24"
    assert index.groups["mmlongbench_vlmevalkit_256k"].task == [
        f"mmlongbench_vlmevalkit_{c}_256k" for c in ("vrag", "niah", "icl", "summ", "docvqa")
    ]
    (rule,) = index.groups["mmlongbench_vlmevalkit_niah_256k"].aggregate_metric_list
    assert str(rule["aggregation"]) == "!function utils_vlmevalkit.row_weighted_mean"
    assert index.groups["mmlongbench_v1_1_8k"].aggregate_metric_list[0]["aggregation"] == "strict_mean"
    for name, task in tasks.items():  # every version says which it is
        if name.startswith(("mmlongbench_v1_1_", "mmlongbench_vlmevalkit")):
            assert task.metadata["benchmark_version"] in ("v1.1", "vlmevalkit", "paper scoring on vlmevalkit rows")


@pytest.mark.slow  # harness runs end to end
def test_v1_1_runs_with_its_docvqa_judge_and_the_papers_summ_judge_in_one_command(
    versions_dir: Path, tmp_path: Path, harness
) -> None:
    answer = '" 3\nIt says so on page 2."'
    bodies, results = judged_constant_run(harness, "mmlongbench_v1_1_128k", versions_dir, answer, tmp_path / "out")
    docvqa = [b for b in bodies if "<Standard Answer>:" in prompt_of(b)]
    summ = [b for b in bodies if "<Standard Answer>:" not in prompt_of(b)]
    # Each task's own judge model in one run: V1.1's DocVQA judge, the paper's Summ judge (utils.py:443-448)
    assert {(b["model"], b["max_tokens"], b["temperature"]) for b in docvqa} == {("Doubao-Seed-1.8", 256, 0.0)}
    assert {b["model"] for b in summ} == {scoring.JUDGE_MODEL} and all(len(b["messages"]) == 1 for b in docvqa)
    # What the judge read: V1.1's parse reads to the end of the answer
    assert all("<Student Answer>: 3\nIt says so on page 2.\n" in prompt_of(b) for b in docvqa)
    slide = results["results"]["mmlongbench_v1_1_docvqa_slidevqa_128k"]
    # The fixture's SlideVQA golds: 3 (Integer), 12.5, copper lantern, Not answerable, a List of two (one covered:
    # F1 of P 1/2 and R 1/2); the judge's point is the score, the rule score beside it.
    assert (
        slide["doc_qa_llm,none"] == pytest.approx(100 * (1 + 0.5) / 5)
        and slide["score,none"] == slide["doc_qa_llm,none"]
    )
    assert "docvqa_score,none" in slide
    assert results["groups"]["mmlongbench_v1_1_128k"]["score,none"] != "N/A"  # Summ and DocVQA judged
    judges = results["config"]["judge"]["judges"]
    assert {j["model"]["served_model"]: len(j["tasks"]) for j in judges} == {
        scoring.JUDGE_MODEL: 2,
        "Doubao-Seed-1.8": 3,
    }


@pytest.mark.slow
def test_vlmevalkits_sets_run_as_vlmevalkit_scores_them_rows_weighted(
    versions_dir: Path, tmp_path: Path, harness
) -> None:
    tasks = "mmlongbench_vlmevalkit_256k,mmlongbench_vlmevalkit_512k,mmlongbench_vlmevalkit_as_paper_512k"
    bodies, results = judged_constant_run(harness, tasks, versions_dir, '"Answer: 3"', tmp_path / "out")
    docvqa = [b for b in bodies if "<Standard Answer>:" in prompt_of(b)]
    # VLMEvalKit's judge as its alias sends it, as VLMEvalKit's wrapper sends a gpt-5 model: no temperature, its cap
    # as max_completion_tokens (issue 61)
    assert {(b["model"], b["max_completion_tokens"]) for b in docvqa} == {("gpt-5.5-2026-04-24", 1024)}
    assert not any("temperature" in b or "max_tokens" in b for b in docvqa)
    assert all("<Student Answer>: 3\n" in prompt_of(b) for b in docvqa)
    counts, tasks = results["sample_counts"], results["results"]
    vk = [t for t in tasks if t.startswith("mmlongbench_vlmevalkit_") and t.endswith("_256k") and "as_paper" not in t]
    total = sum(counts[t]["n_scored"] for t in vk)
    overall = sum(tasks[t]["score,none"] * counts[t]["n_scored"] for t in vk) / total
    assert results["groups"]["mmlongbench_vlmevalkit_256k"]["score,none"] == pytest.approx(overall)  # every row once
    # The paper's scorers on the rows: "Answer: 3" after the prefill reads as "Answer: Answer: 3" -> "3"
    assert tasks["mmlongbench_vlmevalkit_as_paper_docvqa_slidevqa_512k"]["docvqa_score,none"] >= 0
    # The paper's Summ judge on VLMEvalKit's rows: their claims come from the release beside the TSVs
    assert counts["mmlongbench_vlmevalkit_as_paper_summ_govreport_512k"]["n_judged"] == 1
    assert results["groups"]["mmlongbench_vlmevalkit_as_paper_512k"]["score,none"] != "N/A"


@pytest.mark.slow
def test_the_paper_prefills_vlmevalkits_rows_and_vlmevalkit_does_not(
    versions_dir: Path, tmp_path: Path, harness
) -> None:
    out = tmp_path / "out"
    tasks = "mmlongbench_vlmevalkit_icl_food101_256k,mmlongbench_vlmevalkit_as_paper_icl_food101_256k"
    run = harness(
        "--tasks", tasks, "--model", "random", "--data_dir", versions_dir, "--output_path", out, "--log_samples"
    )
    assert run.code == 0, run.err
    journal = {task: (out / "random" / f"journal_{task}.jsonl").read_text() for task in tasks.split(",")}
    # with --log_samples each request as sent is journalled, its prefill with it
    assert '"assistant_prefix"' not in journal["mmlongbench_vlmevalkit_icl_food101_256k"]
    as_paper = journal["mmlongbench_vlmevalkit_as_paper_icl_food101_256k"]
    assert as_paper.count('"assistant_prefix": "label:"') == len(as_paper.splitlines()) - 1 > 0


def test_judge_prompt_hook_matches_the_scorers_prompt() -> None:
    question = "Based on Document x, answer the following question. How many?"
    prompt = vlmevalkit_judge_prompt("3", "Integer", question, "Answer: 3")
    assert prompt == v1_1.docvqa_judge_prompt(question, "3", "3", "Integer")
