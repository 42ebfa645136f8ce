"""Task hooks of VLMEvalKit's MMLongBench sets (`vlmevalkit_*` configs: the TSVs as published), two ways:

- `mmlongbench_vlmevalkit_*`: as VLMEvalKit requests and scores them (open-compass/VLMEvalKit at e8e78f05,
  `vlmeval/dataset/mmlongbench.py`): no `Answer:` prefill, `scorers.vlmevalkit`'s row scores, DocVQA by the judge
  alone (V1.1's prompts, `max_tokens=1024`, `:360`), rows averaged per task and overall (`row_weighted_mean`);
- `mmlongbench_vlmevalkit_as_paper_*`: the paper's harness on the same rows (its prefill, its scorers and
  aggregation: the paper's hooks, `utils.py`), with the paper's Summ judge where the build found the release's
  claims (`paper_judge_score`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from harness.config.group_rules import MemberScore
from tasks.mmlongbench import utils
from tasks.mmlongbench.scorers.common import Doc
from tasks.mmlongbench.scorers.v1_1 import (
    JudgeVerdict,
    docvqa_final_score,
    docvqa_judge_prompt,
    parse_docvqa_judge,
    parse_output_v1_1,
)
from tasks.mmlongbench.scorers.vlmevalkit import gold_of, judge_value, prefix_for, score_row

JUDGE_STAGE = "judge"
DOCVQA = "documentQA"


def process_results(doc: Doc, results: list[str]) -> dict[str, float]:
    """VLMEvalKit's score of one row (0-100), under its metric's name and as `score`; a DocVQA row's only score is
    its judge's (`_score_one` `:286-309`), so it has none here."""
    if doc["task"] == DOCVQA:
        return {}
    key, value = score_row(doc["task"], doc["source_dataset"], results[0], gold_of(doc["answer"]), int(doc["tsv_row"]))
    return {key: 100.0 * value, "score": 100.0 * value}


def docvqa_judge_prompts(doc: Doc, response: str) -> dict[str, str]:
    """The judge's prompt (`:290-300`): the row's `extra_info` question, its typed gold, and V1.1's parse of the reply
    as written (no prefix put in front: a reply without "Answer:" is judged whole); a row without an answer format
    is judged as a String."""
    parsed = parse_output_v1_1(response, prefix_for(DOCVQA))
    answer_format = doc["answer_format"] or "String"
    return {JUDGE_STAGE: docvqa_judge_prompt(doc["question"], gold_of(doc["answer"]), parsed, answer_format)}


def docvqa_judge_parse(reply: str) -> JudgeVerdict:
    return parse_docvqa_judge(reply)


def docvqa_judge_score(doc: Doc, response: str, verdicts: Mapping[str, JudgeVerdict]) -> dict[str, float]:
    """`doc_qa_llm` (0-100) and `score`: `float(final_score)`, where any error scores 0 (`:299-307`)."""
    try:
        final = docvqa_final_score(verdicts[JUDGE_STAGE], gold_of(doc["answer"]), doc["answer_format"] or "String")
    except Exception:  # official: `except Exception` -> doc_qa_llm 0.0
        final = 0.0
    value = 100.0 * judge_value(final)
    return {"doc_qa_llm": value, "score": value}


def paper_judge_score(doc: Doc, response: str, verdicts: Doc) -> dict[str, float]:
    """The paper's Fluency-F1 (`utils.judge_score`) of a VLMEvalKit Summ row: it needs the reference's atomic claims,
    which the TSVs do not hold; a build finds them in the release's claims files where the release is beside the
    TSVs. A row without them is left unjudged (ValueError), never scored as if the reference had no claims."""
    if not doc.get("claims"):
        raise ValueError(
            f"row {doc.get('id')!r}: no atomic claims for the paper's judge (build from a folder holding the release "
            "beside VLMEvalKit's TSVs, whose summ/*_claims.jsonl the build reads)"
        )
    return utils.judge_score(doc, response, verdicts)


def row_weighted_mean(scores: Sequence[MemberScore]) -> tuple[float, float]:
    """VLMEvalKit's aggregate (`evaluate`, `:382-401`): the mean over every scored row of the members, so each member
    weighs its rows; N/A when a member is missing or N/A (VLMEvalKit refuses to evaluate DocVQA without its judge,
    `:355-362`). Standard error: sqrt(sum((n_i se_i)^2)) / sum(n_i), unknown where a member's is."""
    if not scores or any(s.missing for s in scores):
        return math.nan, math.nan
    total = sum(s.n for s in scores)
    if not total:
        return math.nan, math.nan
    value = sum(s.value * s.n for s in scores) / total
    if any(math.isnan(s.stderr) for s in scores):
        return value, math.nan
    return value, math.sqrt(sum((s.n * s.stderr) ** 2 for s in scores)) / total
