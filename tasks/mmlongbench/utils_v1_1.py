"""MMLongBench V1.1's task hooks (EdinburghNLP/MMLongBench at 22b9f27): each row scored as V1.1 scores it, and
DocVQA's LLM judge.

What V1.1 changed in scoring, against the paper's hooks (`utils.py`):
- every scorer reads V1.1's parse of the prefixed output (`scorers.v1_1.parse_output_v1_1`: all the text after
  the prefix, not its line), still maxed with the raw output where the paper maxes (`data.py:21-33`); VH reads
  the raw output only, as before (`:191-199`);
- DocVQA is scored by the judge (`load_doc_qa_with_llm_judge`, `data.py:501-553`, on by default:
  `arguments.py:29`): `doc_qa_llm`, which is also the task's `score`; the rule score of `--docqa_llm_judge False`
  (`load_doc_qa`, `:434-479`) is kept beside it as `docvqa_score`, on V1.1's parse. Without `--judge_model` a DocVQA
  task has no `score`, so its groups are N/A, as Summ's are without the Fluency-F1 judge;
- Summ is still judged by `scripts/eval_gpt4_summ.py` (unchanged since the paper): its hooks are the paper's, but
  for the parse that decides which rows its API models' averages leave out (`summ_judge_score`).

`eval_api.py:97-104` is unchanged at 22b9f27: `score_nonempty` leaves out the rows whose V1.1 parse is empty.
"""

from __future__ import annotations

from collections.abc import Mapping

from tasks.mmlongbench import scoring, utils
from tasks.mmlongbench.scorers import v1_1
from tasks.mmlongbench.scorers.common import Doc
from tasks.mmlongbench.scorers.v1_1 import docvqa_judge_prompt, parse_docvqa_judge, parse_output_v1_1
from tasks.mmlongbench.utils import _gold

QUESTION_MARK = "\n\nQuestion: "  # the user template's last field: `...{context}\n\nQuestion: {question}`
JUDGE_STAGE = "judge"


def row_scores(doc: Doc, generated: str) -> dict[str, float]:
    """V1.1's score(s) of one row on the 0-100 scale, by the row's dataset (DocVQA's judged score comes later)."""
    dataset, prefix, gold = doc["dataset"], doc["answer_prefix"], _gold(doc)
    metric = scoring.METRIC_OF_DATASET.get(dataset)
    parse = parse_output_v1_1
    if metric == "sub_em":
        value = scoring.score_sub_em(generated, prefix, gold, parse)
    elif metric == "mc_acc":
        value = scoring.score_mc(generated, prefix, int(gold), parse)
    elif metric == "count_acc":
        value = scoring.score_count(generated, prefix, gold, parse)
    elif metric == "cls_acc":
        value = scoring.score_icl(generated, prefix, int(gold), parse)
    elif metric == "docvqa_score":  # the rule score of `--docqa_llm_judge False`; `score` is the judge's
        return {metric: 100.0 * scoring.score_docvqa(generated, prefix, gold, doc["answer_format"], parse)}
    elif metric == "vh_acc_folded":  # the raw output only: V1.1 changed nothing here
        value = scoring.score_vh(generated, prefix, gold, int(doc["eval_index"]))
        return {scoring.VH_ROW_METRIC: 100.0 * value, metric: 100.0 * value, "score": 100.0 * value}
    elif metric == "fluency_f1":
        return {scoring.SUMM_FALLBACK_METRIC: 100.0 * scoring.rouge_lsum_f1(generated, prefix, gold, parse)}
    else:
        raise ValueError(f"row {doc.get('id')!r}: no V1.1 scorer for MMLongBench dataset {dataset!r}")
    return {metric: 100.0 * float(value), "score": 100.0 * float(value)}


def process_results(doc: Doc, results: list[str]) -> dict[str, float]:
    return _with_nonempty(doc, results[0], row_scores(doc, results[0]))


def _with_nonempty(doc: Doc, response: str, scores: dict[str, float]) -> dict[str, float]:
    return scoring.with_nonempty(scores, doc["dataset"], response, doc["answer_prefix"], parse_output_v1_1)


def summ_judge_score(doc: Doc, response: str, verdicts: dict[str, dict[str, object]]) -> dict[str, float]:
    """The paper's Fluency-F1 (`utils.judge_score`), `score_nonempty` on V1.1's parse."""
    scores = utils.judge_score(doc, response, verdicts)
    return _with_nonempty(doc, response, {k: v for k, v in scores.items() if k != scoring.NONEMPTY_METRIC})


def asked_question(doc: Doc) -> str:
    """The question as the judge is shown it, V1.1's `example["question"]` (`data.py:521-522, 540`): the user text's
    last field, "Based on Document {doc_id:.15}, answer the following question. " and the original question."""
    parts = doc["prompt"].split(QUESTION_MARK, 1)
    if len(parts) != 2:
        raise ValueError(f"row {doc.get('id')!r}: the prompt has no {QUESTION_MARK.strip()!r} field")
    return parts[1]


def docvqa_judge_prompts(doc: Doc, response: str) -> dict[str, str]:
    """The judge's one prompt for a DocVQA answer (`utils.py:438-477`): the question, the gold and V1.1's parse of the
    prefixed answer (`data.py:538-541`; never None, so never the raw output)."""
    prefix = doc["answer_prefix"]
    parsed = parse_output_v1_1(prefix + response, prefix)
    return {JUDGE_STAGE: docvqa_judge_prompt(asked_question(doc), _gold(doc), parsed, doc["answer_format"])}


def docvqa_judge_parse(reply: str) -> v1_1.JudgeVerdict:
    """Both readings of the reply (its `[Score]` line, its JSON); official gives every reply a score, so this never
    returns None."""
    return parse_docvqa_judge(reply)


def docvqa_judge_score(doc: Doc, response: str, verdicts: Mapping[str, v1_1.JudgeVerdict]) -> dict[str, float]:
    """`doc_qa_llm` (0-100), also the task's `score`; where official raises (a list count of 0, a score that is not
    a number), so does this, and the harness leaves the row unjudged."""
    value = 100.0 * v1_1.docvqa_judge_score(verdicts[JUDGE_STAGE], _gold(doc), doc["answer_format"])
    return _with_nonempty(doc, response, {"doc_qa_llm": value, "score": value})
