"""MMLongBench task hooks: each row scored by the official scorer of its dataset (`scoring.py`), the random
baseline's guess, and the VH fold.

Every metric is on the paper's 0-100 scale (a row scores 0 or 100, DocVQA and ROUGE in between), so a
task's `score` is directly the number of the paper's per-dataset tables and the groups' `score` the
category and length averages (`aggregation.py` holds the same rules for the published numbers).

`score` is the paper's metric of the row's dataset (`scoring.METRIC_OF_DATASET`), also written under its
official name; the groups aggregate `score`. `score_nonempty` is the same value on the rows whose parsed answer is
not empty only: the average `eval_api.py:97-104` took for the paper's API models, left out of it the rows it left out
(`scoring.parsed_answer_is_empty`); the groups aggregate it alike. Summarization rows give only `rougeLsum_f1` (the no-judge
fallback, never reported as Fluency-F1): without the judge a Summ task has no `score`, so its category,
length and overall groups are N/A, as the paper's aggregation makes any group with a missing member.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from typing import Any

from tasks.mmlongbench import scoring


def _gold(doc: dict[str, Any]) -> Any:
    try:
        return json.loads(doc["answer"])
    except (TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"row {doc.get('id')!r}: the answer column is not JSON ({err})") from None


def row_scores(doc: dict[str, Any], generated: str) -> dict[str, float]:
    """The official score(s) of one row on the 0-100 scale, by the row's dataset."""
    dataset = doc["dataset"]
    prefix = doc["answer_prefix"]
    gold = _gold(doc)
    metric = scoring.METRIC_OF_DATASET.get(dataset)
    if metric is None:
        raise ValueError(f"row {doc.get('id')!r}: unknown MMLongBench dataset {dataset!r}")
    if metric == "sub_em":
        value = scoring.score_sub_em(generated, prefix, gold)
    elif metric == "mc_acc":
        value = scoring.score_mc(generated, prefix, int(gold))
    elif metric == "count_acc":
        value = scoring.score_count(generated, prefix, gold)
    elif metric == "cls_acc":
        value = scoring.score_icl(generated, prefix, int(gold))
    elif metric == "docvqa_score":
        value = scoring.score_docvqa(generated, prefix, gold, doc["answer_format"])
    elif metric == "vh_acc_folded":
        # The row's own VH accuracy; the fold at 50 is applied to the task's mean (`vh_folded`).
        value = scoring.score_vh(generated, prefix, gold, int(doc["eval_index"]))
        return {scoring.VH_ROW_METRIC: 100.0 * value, metric: 100.0 * value, "score": 100.0 * value}
    elif metric == "fluency_f1":
        return {scoring.SUMM_FALLBACK_METRIC: 100.0 * scoring.rouge_lsum_f1(generated, prefix, gold)}
    else:  # pragma: no cover - METRIC_OF_DATASET and this dispatch are written together
        raise AssertionError(metric)
    return {metric: 100.0 * float(value), "score": 100.0 * float(value)}


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    return scoring.with_nonempty(row_scores(doc, results[0]), doc["dataset"], results[0], doc["answer_prefix"])


def vh_folded(values: Sequence[float]) -> float:
    """The reported VH number of a task: its mean accuracy (0-100) folded at 50 (`scoring.fold_at_50`); N/A (NaN)
    when no row was scored (every one over the model's length, say), as the harness's own `mean` gives."""
    if not values:
        return math.nan
    return scoring.vh_reported_accuracy([v / 100.0 for v in values])


# ------------------------------------------------------------------------------ random baseline

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_ICL_LABEL = re.compile(r"label:\s*(\d+)")
_OPTION = re.compile(r"^([A-J])\. <image>$", re.MULTILINE)


def random_answer(doc: dict[str, Any], rng: random.Random) -> str:
    """A guess drawn from what the row shows, in the form its scorer reads.

    Multiple choice: one of the options' letters; count: as many counts (0-3) as the gold has; ICL:
    one of the labels of the exemplars; VH: yes or no; free-form answers (SubEM, DocVQA, summaries):
    a few words of the prompt's text.
    """
    metric = scoring.METRIC_OF_DATASET.get(doc["dataset"], "")
    prompt = doc["prompt"]
    if metric == "mc_acc":
        letters = _OPTION.findall(prompt) or ["A"]
        return f" {rng.choice(letters)}"
    if metric == "count_acc":
        slots = len(_gold(doc)) or 1
        return " " + json.dumps([rng.randint(0, 3) for _ in range(slots)])
    if metric == "cls_acc":
        labels = sorted(set(_ICL_LABEL.findall(prompt))) or ["0"]
        return f" {rng.choice(labels)}"
    if metric == "vh_acc_folded":
        return f" {rng.choice(('Yes', 'No'))}"
    words = _WORD.findall(prompt.replace("<image>", " ")) or ["unknown"]
    count = 60 if metric == "fluency_f1" else 3
    return " " + " ".join(rng.choice(words) for _ in range(count))


# ------------------------------------------------------------------------- summarization judge
# The official `scripts/eval_gpt4_summ.py` asks fluency, then recall, then precision, and skips a row at the
# first reply without JSON; the harness asks in the same order and stops the same way (`harness.running.task.judge`).


def judge_prompts(doc: dict[str, Any], response: str) -> dict[str, str]:
    """The three judge prompts of one summary, in the official order."""
    summary = scoring.summary_for_judge(response, doc["answer_prefix"])
    prompts = scoring.judge_prompts(doc["dataset"], summary, _gold(doc), doc["claims"] or [])
    return {stage: prompts[stage] for stage in ("fluency", "recall", "precision")}


def judge_parse(reply: str) -> dict[str, Any] | None:
    return scoring.parse_judge_json(reply)


def judge_score(doc: dict[str, Any], response: str, verdicts: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Fluency-F1 (0-100) from the three verdicts; a verdict without its field raises KeyError (the official
    script stops there; the harness records the sample as unjudged)."""
    value = 100.0 * scoring.fluency_f1(
        verdicts["fluency"], verdicts["recall"], verdicts["precision"], len(doc["claims"] or [])
    )
    # eval_gpt4_summ.py judges only the rows eval_api.py kept (its `results["data"]`, eval_api.py:156).
    return scoring.with_nonempty({"fluency_f1": value, "score": value}, doc["dataset"], response, doc["answer_prefix"])
