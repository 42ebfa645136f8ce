"""MMLongBench-Doc's task end to end on the fixture build: the random baseline without a judge, and the three
official stages with an extractor served locally (the paper's GPT-4o stands behind the same prompts)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from builders.mmlongbench_doc.fixture import SAMPLES
from harness.outputs.results.model_results import load_results
from tasks.mmlongbench_doc import report, utils
from tests.support.judged_runs import judge_server, judged_run


def results_of(out: Path, model: str) -> dict[str, Any]:
    (path,) = (out / model).glob("results_*.json")
    return json.loads(path.read_text())["results"]["mmlongbench_doc"]


@pytest.mark.slow  # harness runs end to end
def test_random_runs_and_reports_the_unextracted_scores(doc_dir: Path, tmp_path: Path, harness) -> None:
    out = tmp_path / "r"
    run = harness("--tasks", "mmlongbench_doc", "--model", "random", "--data_dir", doc_dir, "--output_path", out)
    assert run.code == 0, run.err
    assert "without --judge_model their judge metrics (acc, f1," in run.err
    results = results_of(out, "random")
    assert "acc,none" not in results and 0.0 <= results["unextracted_acc,none"] <= 1.0
    report = harness("report", out)
    assert report.code == 0, report.err
    text = (out / "report.md").read_text()
    assert "### MMLongBench-Doc (random)" in text and "no extractor ran" in text


def extractor(body: dict[str, Any]) -> str:
    """Extracts the gold for every question but the first, whose reply it cannot read."""
    _, analysis = body["messages"]
    question = re.fullmatch(r"\n\nQuestion:(.*)\nAnalysis:42\n", analysis["content"])
    assert question is not None
    (gold,) = [s[2] for s in SAMPLES if s[1] == question.group(1)]
    return (
        "I cannot tell." if question.group(1) == SAMPLES[0][1] else f"Extracted answer: {gold}\nAnswer format: String"
    )


@pytest.mark.slow
def test_the_extractor_is_asked_with_the_official_prompt_and_its_answers_scored(
    doc_dir: Path, tmp_path: Path, harness
) -> None:
    out = tmp_path / "j"
    with judge_server(extractor) as server:
        run = harness(*judged_run(server, "mmlongbench_doc", doc_dir, answer="42"), "--output_path", out)
        assert run.code == 0, run.err
        bodies = [r.body for r in server.received]
    # eval/extract_answer.py's settings and messages: its prompt as the user's, the question and the reply as an
    # assistant turn after it.
    assert {(b["model"], b["temperature"], b["max_tokens"]) for b in bodies} == {("gpt-4o-2024-05-13", 0.0, 256)}
    prompt = utils.extraction_prompt()
    for body in bodies:
        user, assistant = body["messages"]
        assert user == {"role": "user", "content": [{"type": "text", "text": prompt}]}
        assert assistant["role"] == "assistant" and assistant["content"].startswith("\n\nQuestion:")
    assert len(bodies) == len(SAMPLES)
    results = results_of(out, "constant")
    # Every row scores 1 but the first ("Failed to extract": 0, counted, as run_lvlm.py counts it).
    n = len(SAMPLES)
    assert results["acc,none"] == pytest.approx((n - 1) / n)
    answerable = [s for s in SAMPLES if s[2] != "Not answerable"]
    recall = (len(answerable) - 1) / len(answerable)
    precision = (len(answerable) - 1) / (n - 2)  # the unanswerable rows' predictions are "Not answerable"
    assert results["f1,none"] == pytest.approx(2 * recall * precision / (recall + precision))
    assert results["acc_unanswerable,none"] == 1.0
    # A paper model's run is set beside Table 3's row; the fixture is not the paper's data, so no cell is judged.
    data = load_results(out)["constant"]
    beside = report.beside_paper("gpt-4o-2024-05-13", data)
    assert beside[0] == "### MMLongBench-Doc beside the paper's GPT-4o (%)"
    (cells,) = [line for line in beside if line.startswith("| ") and "(42.8)" in line]
    assert cells.count("–") == len(report.PAPER_COLUMNS)
    assert report.beside_paper("constant", data) == []
