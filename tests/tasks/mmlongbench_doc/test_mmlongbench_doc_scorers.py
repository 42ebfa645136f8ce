"""MMLongBench-Doc's scorer against the official code's own decisions on held-out cases (`official_decisions.json`,
its `note` says how they were made), and the named fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.mmlongbench_doc import scorer, utils

DECISIONS = json.loads((Path(__file__).with_name("official_decisions.json")).read_text())


def test_the_decisions_cover_every_answer_format_and_the_raising_cases() -> None:
    cases = DECISIONS["cases"]
    assert {c["answer_format"] for c in cases} == {"Int", "Float", "Str", "None", "List"}
    assert len(cases) >= 500 and any(str(c["official"]).startswith("error") for c in cases)
    assert {c["official"] for c in cases if isinstance(c["official"], float)} > {0.0, 1.0}  # ANLS in between


def test_the_project_scores_every_held_out_case_as_the_official_eval_score() -> None:
    disagree: list[tuple[dict, object]] = []
    for case in DECISIONS["cases"]:
        official = case["official"]
        if isinstance(official, float):
            mine = scorer.eval_score(case["gt"], case["pred"], case["answer_format"])
            if mine != pytest.approx(official, abs=1e-12):
                disagree.append((case, mine))
        else:  # the official function raised: so does the port, and the row scores 0 (run_lvlm.py)
            with pytest.raises(Exception):  # noqa: B017, PT011 - whatever the official raised
                scorer.eval_score(case["gt"], case["pred"], case["answer_format"])
            if scorer.safe_score(case["gt"], case["pred"], case["answer_format"]) != 0.0:
                disagree.append((case, "not 0"))
    assert not disagree, disagree[:5]


def test_accuracy_and_generalized_f1_are_the_officials_on_every_group() -> None:
    for group in DECISIONS["groups"]:
        samples = group["samples"]
        acc, f1 = scorer.eval_acc_and_f1(samples)
        assert (acc, f1) == pytest.approx((group["acc"], group["f1"]))
        # The harness's path: each row's fields, read back by the aggregation: the port's F1 to the last bit.
        items = [utils.f1_item(s["score"], s["answer"], s["pred"]) for s in samples]
        assert utils.generalized_f1(items) == f1
        # A journal written before the fields held one code per row (score + 2 answerable + 4 predicted) still reads,
        # to the rounding the code put on an ANLS score (6.8333... - 6 is not 0.8333... to the last bit).
        codes = [score + 2 * answerable + 4 * predicted for score, answerable, predicted in items]
        assert utils.generalized_f1(codes) == pytest.approx(f1, abs=1e-12)


def test_a_rows_f1_holds_its_score_and_the_two_flags_as_fields_never_one_code() -> None:
    """What a page shows of a row is its score: `f1` keeps the answerable and predicted flags beside the score, not
    folded into it (the code score + 2·answerable + 4·predicted read 6 on a row scored 0) (issue 76, item 2)."""
    doc = {"answer": "5", "answer_format": "Int", "evidence_sources": [], "evidence_pages": [1], "doc_type": ""}
    row = utils.process_results(doc, ["7"])
    assert row["unextracted_acc"] == 0.0
    assert row["unextracted_f1"] == [0.0, 1.0, 1.0]
    assert dict(zip(utils.F1_FIELDS, row["unextracted_f1"], strict=True)) == {
        "score": 0.0,
        "answerable": 1.0,
        "predicted": 1.0,
    }
    right = utils.judge_score(
        {**doc, "answer": "Not answerable", "answer_format": "Str"}, "r", {"extract": "Not answerable"}
    )
    assert right["acc"] == 1.0 and right["f1"] == [1.0, 0.0, 0.0]


def test_a_list_reply_is_read_as_a_literal_never_run() -> None:
    # Official: eval(pred), which would run the reply; here literal_eval, equal on literals, raising on code.
    assert scorer.eval_score("['a', 'b']", "['b', 'a']", "List") == 1.0
    with pytest.raises(ValueError):
        scorer.eval_score("['2']", "[1 + 1]", "List")
    assert scorer.safe_score("['2']", "[__import__('os').getpid()]", "List") == 0.0


def test_the_extractor_reply_is_parsed_as_run_lvlm_parses_it() -> None:
    reply = "Extracted answer: ['a', 'b']\nAnswer format: List"
    assert utils.judge_parse(reply) == "['a', 'b']"
    assert utils.judge_parse("I cannot help.") == scorer.FAILED_TO_EXTRACT
    user, assistant = utils.judge_prompts({"question": "Q?"}, "The reply.")["extract"]
    assert user["role"] == "user" and user["content"].startswith("Given the question and analysis")
    assert assistant == {"role": "assistant", "content": "\n\nQuestion:Q?\nAnalysis:The reply.\n"}


def test_a_failed_extraction_or_score_is_recorded_as_run_lvlm_records_it() -> None:
    """`run_lvlm.py`'s bare `except` sets the prediction to "Failed to extract" and the score to 0, whether the reply
    had no "Extracted answer:" (never scored: scoring those words against an empty Int gold would give 1.0) or
    `eval_score` raised (the prediction then counts as answered in F1) (issue 76, item 2)."""
    doc = {"answer": "", "answer_format": "Int", "evidence_sources": [], "evidence_pages": [1], "doc_type": ""}
    assert scorer.eval_score("", scorer.FAILED_TO_EXTRACT, "Int") == 1.0  # what scoring the words would give
    unparsed = utils.judge_score(doc, "reply", {"extract": utils.judge_parse("I cannot help.")})
    assert unparsed["acc"] == 0.0 and unparsed["f1"] == utils.f1_item(0.0, "", scorer.FAILED_TO_EXTRACT)
    raising = {**doc, "answer": "['2']", "answer_format": "List"}
    with pytest.raises(ValueError):
        scorer.eval_score("['2']", "[1 + 1]", "List")
    failed = utils.judge_score(raising, "reply", {"extract": "[1 + 1]"})
    assert failed["acc"] == 0.0 and failed["f1"] == utils.f1_item(0.0, "['2']", scorer.FAILED_TO_EXTRACT)


def test_the_yaml_is_what_make_yaml_writes() -> None:
    from tasks.mmlongbench_doc import _make_yaml

    assert _make_yaml.YAML.read_text() == _make_yaml.render(), "run python -m tasks.mmlongbench_doc._make_yaml"


def test_each_row_falls_in_show_results_cells() -> None:
    doc = {
        "evidence_sources": ["Table", "Chart"],
        "evidence_pages": [3],
        "answer": "5",
        "doc_type": "Guidebook",
    }
    assert utils.cells(doc) == ["table", "chart", "single_page", "guidebook"]
    unanswerable = {**doc, "evidence_sources": [], "evidence_pages": [], "answer": "Not answerable"}
    assert utils.cells(unanswerable) == ["unanswerable", "guidebook"]
    cross = {**doc, "evidence_pages": [2, 3]}
    assert "cross_page" in utils.cells(cross)


def test_the_report_sets_mmlongbench_docvqa_rows_beside_the_whole_documents(tmp_path: Path) -> None:
    from harness.outputs.results.model_results import ModelResults
    from tasks.mmlongbench_doc import report

    ours = {"mmlongbench_doc": {"acc,none": 0.25, "f1,none": 0.2}}
    theirs = {
        "mmlongbench_docvqa_mmlongbench_doc_128k": {"score,none": 31.0},
        "mmlongbench_docvqa_mmlongbench_doc_8k": {"score,none": 40.0},
        "mmlongbench_v1_1_docvqa_mmlongbench_doc_8k": {"score,none": 50.0},
        "mmlongbench_docvqa_slidevqa_8k": {"score,none": 99.0},  # another dataset: not set beside
    }
    runs = [("a.json", {"results": {**ours, **theirs}})]
    data = ModelResults(results=ours, runs=runs)  # type: ignore[arg-type]
    text = "\n".join(report.section("m", data, tmp_path))
    assert "| MMLongBench-Doc | whole document, up to 120 pages | 25.0 (accuracy) |" in text
    rows = [line for line in text.splitlines() if "fitted to" in line]
    assert rows == [
        "| MMLongBench (paper) | fitted to 8K tokens | 40.0 (`score`) |",
        "| MMLongBench (paper) | fitted to 128K tokens | 31.0 (`score`) |",
        "| MMLongBench V1.1 | fitted to 8K tokens | 50.0 (`score`) |",
    ]
