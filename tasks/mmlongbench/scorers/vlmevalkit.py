"""VLMEvalKit's scoring of its MMLongBench sets (open-compass/VLMEvalKit at e8e78f05, `vlmeval/dataset/mmlongbench.py`
`_score_one` `:277-333`, `evaluate` `:347-407`; the metrics of `utils/mmlongbench_metrics.py`), row by row.

The reply is scored as the model wrote it: no `Answer:` was prefilled, and none is put in front (V1.1's `eval.py`
prepends the prefill; VLMEvalKit has none to prepend).

- The metric by `task` and `source_dataset` (`_metric_for`, `:247-267`): `sub_em` (VRAG, MM-NIAH text retrieval and
  reasoning), `binary_acc` (VH), `soft_acc` (counting, the total of the counts), `mc_acc` (image retrieval and
  reasoning), `cls_acc` (ICL), `rouge` (Summ: `rougeLsum_f1`), `doc_qa_llm` (DocVQA: the judge alone, `:286-309`).
- VH (`:313-320`): the raw reply only; an unreadable one takes `[0, 1, 1, 0][row_id % 4]`, `row_id` the row's place in
  the whole evaluated file (`:365`): `tsv_row`. With no prefix in front, a reply that is only digits ("1") is read as
  that number (`extract_binary_label`'s fallback, which the paper's prefixed replies never reach).
- The others (`:322-333`): the metric on the raw reply and on V1.1's parse of it (`parse_output`, DOTALL; with no
  prefix in the reply, the whole reply), the max of each metric.
- Every error while scoring scores 0 (`:318-319, 330-331`); the count parser drops only what int() refuses with
  TypeError or ValueError (`:154-162`), so an infinite count errors, and scores 0.
- Scores are VLMEvalKit's 0-1, here x 100 like every MMLongBench number of the harness; `evaluate` averages rows,
  per task and overall (`:382-401`): `utils_vlmevalkit.row_weighted_mean`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tasks.mmlongbench.scorers.answers import choice_index, class_label, count_list, sub_em
from tasks.mmlongbench.scorers.haystack import VH_DEFAULT_CYCLE, vh_label
from tasks.mmlongbench.scorers.summarization import rouge_lsum
from tasks.mmlongbench.scorers.v1_1 import parse_output_v1_1

Gold = Any  # the TSV's typed gold, whatever `extra_info` holds: a gold a metric cannot read scores 0, as official
# VLMEvalKit's metric -> the name its score is kept under (`_score_key_for`, `:339-345`)
SCORE_KEY = {"rouge": "rougeLsum_f1", "binary_acc": "acc"}
PREFIX_OF_TASK = {"summ": "Summary:", "ICL": "label:"}  # `_prefix_for`, `:269-275`; the rest "Answer:"


def metric_for(task: str, source: str) -> str:
    """`_metric_for` (`:247-267`); an unknown pair raises KeyError, as official."""
    if task == "vrag":
        return "sub_em"
    if task == "NIAH":
        if source.startswith("vh_"):
            return "binary_acc"
        if "counting" in source:
            return "soft_acc"
        if "retrieval" in source or "reasoning" in source:
            return "mc_acc" if "image" in source else "sub_em"
    if task == "ICL":
        return "cls_acc"
    if task == "summ":
        return "rouge"
    if task == "documentQA":
        return "doc_qa_llm"
    raise KeyError(f"Cannot infer MMLongBench metric for task={task}, source_dataset={source}")


def prefix_for(task: str) -> str:
    return PREFIX_OF_TASK.get(task, "Answer:")


def _metric(metric: str, gold: Gold) -> Callable[[str], float]:
    if metric == "sub_em":
        return lambda text: sub_em(text, gold)
    if metric == "soft_acc":
        return lambda text: float(sum(count_list(text, (TypeError, ValueError))) == sum(gold))
    if metric == "mc_acc":
        return lambda text: float(choice_index(text) == gold)
    if metric == "cls_acc":
        return lambda text: float(class_label(text) == gold)
    if metric == "rouge":
        return lambda text: rouge_lsum(text, gold)
    raise KeyError(metric)


def score_row(task: str, source: str, prediction: str, gold: Gold, row_id: int) -> tuple[str, float]:
    """(the name VLMEvalKit keeps the score under, the score 0-1) of one non-DocVQA row; errors score 0."""
    metric = metric_for(task, source)
    key = SCORE_KEY.get(metric, metric)
    if metric == "binary_acc":
        try:
            label = vh_label(prediction)
            if label == -1:
                label = VH_DEFAULT_CYCLE[row_id % len(VH_DEFAULT_CYCLE)]
            return key, float(label == vh_label(gold))
        except Exception:  # official: `except Exception` -> acc 0
            return key, 0.0
    try:
        score = _metric(metric, gold)
        value = max(score(prediction), score(parse_output_v1_1(prediction, prefix_for(task))))
    except Exception:  # official: `except Exception` -> the metric 0
        return key, 0.0
    return key, float(value)


def judge_value(final_score: object) -> float:
    """`float(final_score)` (`:303`): the judge's score as a number; what float() refuses scores 0 (`:306-307`)."""
    if not isinstance(final_score, int | float | str):  # None, a list, an object: float() raises TypeError
        return 0.0
    try:
        return float(final_score)
    except ValueError:
        return 0.0


def gold_of(answer_json: str) -> Gold:
    return json.loads(answer_json)
