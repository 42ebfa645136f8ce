"""MMLongBench scorers, reproducing the paper-era official code (EdinburghNLP/MMLongBench at commit
26197d2: `utils.py`, `data.py`, `eval.py`, `figure_scripts/utils.py`, `scripts/eval_gpt4_summ.py`)
decision for decision, quirks included. There are no lenient variants here; the only departures
are where official crashes: `parse_judge_json` returns None (official raises and aborts the judge
run) and `sub_em` raises ValueError on an empty gold list (official IndexError).

Every `score_*` function takes what the model generated after the prefilled answer prefix, the prefix
itself (`Answer:`, `label:`, `Summary:`) and the gold, and returns the per-row score in [0, 1]. As
official (`eval.py`: `output = system_template + generated`), the prefix is prepended before parsing.
For SubEM, multiple choice, count, classification and ROUGE the official `default_post_process`
scores both that raw prefixed text and its `parse_output` line and keeps the max; VH scores the raw
text only; DocVQA scores the parsed line only.

Dataset scores are means over rows x 100 (`eval.py` `averaged_metrics`); VH is then folded at 50 and
Summ skips rows whose judge reply did not parse (see `vh_reported_accuracy`, `judged_mean_percent`). The API
models' scores (`eval_api.py`) also leave out each row whose parsed answer is empty: `NONEMPTY_METRIC`, beside the
strict `score` (`parsed_answer_is_empty`).

This module is the index the task hooks, the report and the tests read: the metric of each dataset, and every
scorer under one name. The scorers live by family in `scorers/`: `common.py` (answer line, normalisation, means),
`answers.py` (SubEM, multiple choice, counts, ICL labels), `haystack.py` (Visual Haystack), `docvqa.py` and
`summarization.py` (the GPT-4o judge and the ROUGE fallback); the judge's six prompts are data files in
`judge_prompts/`.
"""

from __future__ import annotations

from tasks.mmlongbench.scorers.answers import (
    choice_index,
    class_label,
    count_list,
    score_count,
    score_icl,
    score_mc,
    score_sub_em,
    sub_em,
)
from tasks.mmlongbench.scorers.common import (
    NONEMPTY_METRIC,
    mean_percent,
    normalize_answer,
    normalize_answer_keep_punctuation,
    parse_output,
    parsed_answer_is_empty,
    with_nonempty,
)
from tasks.mmlongbench.scorers.docvqa import (
    DOCVQA_FORMATS,
    docvqa_clean,
    docvqa_needs_exact_match,
    docvqa_numbers,
    docvqa_score_parsed,
    docvqa_value_type,
    score_docvqa,
    token_f1,
)
from tasks.mmlongbench.scorers.haystack import (
    VH_DEFAULT_CYCLE,
    fold_at_50,
    score_vh,
    score_vh_file,
    vh_default_label,
    vh_label,
    vh_reported_accuracy,
)
from tasks.mmlongbench.scorers.summarization import (
    FLUENCY_PROMPT_GOVREPORT,
    FLUENCY_PROMPT_MULTILEXSUM,
    JUDGE_API_RETRIES,
    JUDGE_MAX_TOKENS,
    JUDGE_MODEL,
    JUDGE_PROMPTS,
    JUDGE_TEMPERATURE,
    PRECISION_PROMPT_GOVREPORT,
    PRECISION_PROMPT_MULTILEXSUM,
    RECALL_PROMPT_GOVREPORT,
    RECALL_PROMPT_MULTILEXSUM,
    fluency_f1,
    fluency_f1_from_replies,
    judge_prompts,
    judged_mean_percent,
    numbered_claims,
    parse_judge_json,
    rouge_lsum,
    rouge_lsum_f1,
    summary_for_judge,
)

OFFICIAL_COMMIT = "26197d2"

# Official metric id per leaf dataset (`figure_scripts/utils.py` `dataset_to_metrics`, renamed).
# The reported id: VH rows score `vh_acc` and the file's mean is folded into `vh_acc_folded`;
# Summ is judged by GPT-4o (`fluency_f1`), `SUMM_FALLBACK_METRIC` is the no-judge ROUGE fallback.
METRIC_OF_DATASET: dict[str, str] = {
    "infoseek": "sub_em",
    "viquae": "sub_em",
    "vh_single": "vh_acc_folded",
    "vh_multi": "vh_acc_folded",
    "mmniah_ret_text": "sub_em",
    "mmniah_ret_image": "mc_acc",
    "mmniah_count_text": "count_acc",
    "mmniah_count_image": "count_acc",
    "mmniah_reason_text": "sub_em",
    "mmniah_reason_image": "mc_acc",
    "stanford_cars": "cls_acc",
    "food101": "cls_acc",
    "sun397": "cls_acc",
    "inat2021": "cls_acc",
    "govreport": "fluency_f1",
    "multilexsum": "fluency_f1",
    "mmlongbench_doc": "docvqa_score",
    "longdocurl": "docvqa_score",
    "slidevqa": "docvqa_score",
    # The ablation sets: each loader's post-process in `data.py` is the main one it derives from.
    "triviaqa": "sub_em",
    "occ_vrag_infoseek": "sub_em",
    "occ_vrag_viquae": "sub_em",
    "text_haystack_ret_image": "mc_acc",
    "text_doc": "docvqa_score",
}
VH_ROW_METRIC = "vh_acc"
SUMM_FALLBACK_METRIC = "rougeLsum_f1"

__all__ = [
    "OFFICIAL_COMMIT",
    "METRIC_OF_DATASET",
    "VH_ROW_METRIC",
    "SUMM_FALLBACK_METRIC",
    "NONEMPTY_METRIC",
    "parsed_answer_is_empty",
    "with_nonempty",
    "mean_percent",
    "normalize_answer",
    "normalize_answer_keep_punctuation",
    "parse_output",
    "choice_index",
    "class_label",
    "count_list",
    "score_count",
    "score_icl",
    "score_mc",
    "score_sub_em",
    "sub_em",
    "VH_DEFAULT_CYCLE",
    "fold_at_50",
    "score_vh",
    "score_vh_file",
    "vh_default_label",
    "vh_label",
    "vh_reported_accuracy",
    "DOCVQA_FORMATS",
    "docvqa_clean",
    "docvqa_needs_exact_match",
    "docvqa_numbers",
    "docvqa_score_parsed",
    "docvqa_value_type",
    "score_docvqa",
    "token_f1",
    "FLUENCY_PROMPT_GOVREPORT",
    "FLUENCY_PROMPT_MULTILEXSUM",
    "JUDGE_API_RETRIES",
    "JUDGE_MAX_TOKENS",
    "JUDGE_MODEL",
    "JUDGE_PROMPTS",
    "JUDGE_TEMPERATURE",
    "PRECISION_PROMPT_GOVREPORT",
    "PRECISION_PROMPT_MULTILEXSUM",
    "RECALL_PROMPT_GOVREPORT",
    "RECALL_PROMPT_MULTILEXSUM",
    "fluency_f1",
    "fluency_f1_from_replies",
    "judge_prompts",
    "judged_mean_percent",
    "numbered_claims",
    "parse_judge_json",
    "rouge_lsum",
    "rouge_lsum_f1",
    "summary_for_judge",
]
