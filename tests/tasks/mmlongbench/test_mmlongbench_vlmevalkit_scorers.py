"""VLMEvalKit's scoring of its MMLongBench sets against the decisions of its own code (open-compass/VLMEvalKit at
e8e78f05: `MMLongBench._score_one`, and the DocVQA judge with a stand-in client) on held-out replies
(`official_vlmevalkit_decisions.json`, `official_v1_1_decisions.json`'s judge cases); VLMEvalKit's row-weighted
aggregation; and where it scores as V1.1 does."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.config.group_rules import MemberScore
from tasks.mmlongbench import utils_v1_1, utils_vlmevalkit
from tasks.mmlongbench.scorers import vlmevalkit
from tests.support.judged_runs import vlmevalkit_judge_prompt

HERE = Path(__file__).parent
DECISIONS = json.loads((HERE / "official_vlmevalkit_decisions.json").read_text(encoding="utf-8"))
JUDGED = json.loads((HERE / "official_v1_1_decisions.json").read_text(encoding="utf-8"))["judge"]


def _doc(case: dict) -> dict:
    row = case["row"]
    extra = json.loads(row["extra_info"])
    return {
        "task": row["task"],
        "source_dataset": row["source_dataset"],
        "answer": json.dumps(extra["answer"]),
        "tsv_row": case["row_id"],
    }


def test_every_row_scores_as_vlmevalkit_scores_it() -> None:
    assert len(DECISIONS["rows"]) == 728
    wrong = []
    for case in DECISIONS["rows"]:
        scores = utils_vlmevalkit.process_results(_doc(case), [case["row"]["prediction"]])
        key = vlmevalkit.SCORE_KEY.get(case["metric"], case["metric"])
        if set(scores) != {key, "score"} or scores["score"] != pytest.approx(100 * case["score"]):
            wrong.append((case["row"]["source_dataset"], case["row"]["prediction"], case["score"], scores))
    assert not wrong, wrong[:3]


def test_the_vh_default_follows_the_rows_place_in_the_whole_file() -> None:
    doc = {"task": "NIAH", "source_dataset": "vh_single", "answer": json.dumps("No")}
    scores = [utils_vlmevalkit.process_results({**doc, "tsv_row": row}, ["maybe"])["acc"] for row in range(6)]
    assert scores == [100.0, 0.0, 0.0, 100.0, 100.0, 0.0]  # [0, 1, 1, 0][row % 4] against the gold No (0)
    # with no prefix in front, a reply of digits is read as that label (the paper's prefixed replies never are)
    assert utils_vlmevalkit.process_results({**doc, "tsv_row": 1}, ["0"])["acc"] == 100.0


def test_vlmevalkit_scores_every_non_docvqa_reply_as_v1_1_does_once_v1_1_prefixes_it() -> None:
    # The measurement, on these held-out replies: V1.1 scores "Answer:" + reply; VLMEvalKit the reply alone.
    apart = []
    for case in DECISIONS["rows"]:
        doc, reply = _doc(case), case["row"]["prediction"]
        if doc["task"] == "NIAH" and doc["source_dataset"].startswith("vh_"):
            continue  # VH's defaults are indexed by another place
        prefix = vlmevalkit.prefix_for(doc["task"])
        v1_1_doc = {
            "dataset": _DATASET[doc["source_dataset"]],
            "answer_prefix": prefix,
            "answer": doc["answer"],
            "answer_format": "",
            "eval_index": 0,
        }
        ours = utils_vlmevalkit.process_results(doc, [reply])
        theirs = utils_v1_1.process_results(v1_1_doc, [" " + reply if reply else reply])
        key = "rougeLsum_f1" if doc["task"] == "summ" else "score"
        if ours[key] != pytest.approx(theirs[key], abs=1e-9):
            apart.append((doc["source_dataset"], reply))
    # 621 of 624 agree; V1.1's prefix moves the first "Answer:"/"label:" of these three to its own, in front
    assert apart == [
        ("retrieval-image", "I think the answer is B.\nAnswer: C"),
        ("cars196", "3\nlabel: 4"),
        ("inat2021", "12.5"),
    ]


_DATASET = {
    "infoseek": "infoseek",
    "viquae": "viquae",
    "retrieval-text": "mmniah_ret_text",
    "counting-text": "mmniah_count_text",
    "counting-image": "mmniah_count_image",
    "reasoning-text": "mmniah_reason_text",
    "retrieval-image": "mmniah_ret_image",
    "reasoning-image": "mmniah_reason_image",
    "cars196": "stanford_cars",
    "inat2021": "inat2021",
    "gov": "govreport",
    "lexsum": "multilexsum",
}


def test_the_judged_docvqa_score_is_vlmevalkits_float_with_errors_at_zero() -> None:
    for case in JUDGED:
        doc = {"answer": json.dumps(case["gold"]), "answer_format": case["answer_format"]}
        verdict = utils_vlmevalkit.docvqa_judge_parse(case["reply"])
        scores = utils_vlmevalkit.docvqa_judge_score(doc, "", {"judge": verdict})
        official = case["vlmevalkit"]
        expected = 0.0 if "raises" in official else 100 * official["score"]  # _score_one: an error scores 0
        assert scores == {"doc_qa_llm": pytest.approx(expected), "score": pytest.approx(expected)}, case["reply"]


def test_the_judge_reads_the_reply_as_written_and_the_rows_own_question() -> None:
    question = "Based on Document report-0005, answer the following question. Which two?"
    reply = "The answer is harbour.\nAnswer: harbour; 2019"
    prompt = vlmevalkit_judge_prompt('["harbour", "2019"]', "List", question, reply)
    assert prompt.startswith(
        "Now your role is a grading teacher. Your task is to review and score student answers for LIST"
    )
    assert prompt.endswith(
        "<Question>: Based on Document report-0005, answer the following question. Which two?\n"
        '<Standard Answer>: ["harbour", "2019"]\n<Student Answer>: harbour; 2019\n\n'
    )
    whole = vlmevalkit_judge_prompt('["harbour", "2019"]', "", question, "harbour\n2019")
    assert whole.startswith(
        "Now your role is a grading teacher. Your task is to review and score student answers based"
    )
    assert "<Student Answer>: harbour\n2019\n" in whole  # no "Answer:" in the reply: judged whole, as a String


def test_row_weighted_mean_weighs_rows_and_is_na_when_a_member_is() -> None:
    scores = [MemberScore("a", 50.0, 5.0, 100), MemberScore("b", 100.0, 0.0, 300)]
    value, se = utils_vlmevalkit.row_weighted_mean(scores)
    assert value == pytest.approx(87.5) and se == pytest.approx(100 * 5.0 / 400)
    assert math.isnan(utils_vlmevalkit.row_weighted_mean([*scores, MemberScore("c", math.nan, math.nan, 0)])[0])
    assert math.isnan(utils_vlmevalkit.row_weighted_mean([MemberScore("a", 50.0, math.nan, 4)])[1])


def test_the_metric_of_each_vlmevalkit_dataset() -> None:
    assert vlmevalkit.metric_for("NIAH", "counting-image") == "soft_acc"
    assert vlmevalkit.metric_for("NIAH", "retrieval-text") == "sub_em"
    assert vlmevalkit.metric_for("NIAH", "reasoning-image") == "mc_acc"
    assert vlmevalkit.metric_for("summ", "gov") == "rouge"
    with pytest.raises(KeyError):
        vlmevalkit.metric_for("NIAH", "other")
