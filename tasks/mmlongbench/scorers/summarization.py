"""Summarization's scorers (GovReport, Multi-LexSum): the paper's GPT-4o judge (official
`scripts/eval_gpt4_summ.py`: its settings, its prompts, its JSON parsing and `fluency_f1`) and the no-judge
ROUGE-Lsum fallback."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from tasks.mmlongbench.scorers.common import Parser, flatten_golds, max_over_raw_and_parsed, mean_percent, parse_output

# -------------------------------------------------------------------------------- summarization


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer  # imported late: it pulls in nltk's stemmer

    # Official `r_scorer`: rougeL and rougeLsum with the Porter stemmer; rougeLsum alone gives the
    # same rougeLsum numbers.
    return rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)


def rouge_lsum(prediction: str, references: str | Sequence[Any]) -> float:
    """rougeLsum F-measure (rouge-score package), max over references (official `calculate_metrics`
    "rouge"; a str is one reference, a list of lists is flattened). Sentences are the lines."""
    scorer = _rouge_scorer()
    return max(
        scorer.score(target=ref, prediction=prediction)["rougeLsum"].fmeasure for ref in flatten_golds(references)
    )


def rouge_lsum_f1(generated: str, prefix: str, reference: str | Sequence[Any], parse: Parser = parse_output) -> float:
    """`rougeLsum_f1` of one Summ row, the no-judge fallback: max of `rouge_lsum` over the raw
    prefixed output ("Summary: ...", all lines, prefix word included) and its parsed FIRST line
    (`default_post_process`, metrics="rouge")."""
    return max_over_raw_and_parsed(generated, prefix, lambda text: rouge_lsum(text, reference), parse)


# GPT-4o judge settings of `scripts/eval_gpt4_summ.py` (`get_score`).
JUDGE_MODEL = "gpt-4o-2024-11-20"
JUDGE_TEMPERATURE = 0.1
JUDGE_MAX_TOKENS = 4096
JUDGE_API_RETRIES = 10

_LAST_BRACES = re.compile(r"\{.*?\}", re.DOTALL)
_JSON_FENCE = re.compile(r"(?:```json)(.+)(?:```)", re.DOTALL)


def parse_judge_json(reply: str) -> dict[str, Any] | None:
    """The judge's JSON as official `parse_json`, or None.

    Non-greedy `{...}` spans (DOTALL); the LAST one is parsed. If that fails, the text from the
    first "```json" to the last "```" is parsed instead (never an earlier `{...}`). No "{" at all ->
    None. A nested object defeats the brace search (`{"a": {"b": 1}}` yields the span
    `{"a": {"b": 1}`), so only a fenced copy rescues it.
    Where official RAISES (braces present, neither reading parses: IndexError/JSONDecodeError, which
    aborts its run) this returns None, and also when the fenced JSON is not an object.
    """
    spans = _LAST_BRACES.findall(reply)
    if not spans:
        return None
    try:
        parsed = json.loads(spans[-1])
    except json.JSONDecodeError:
        fenced = _JSON_FENCE.findall(reply)
        if not fenced:
            return None
        try:
            parsed = json.loads(fenced[-1])
        except json.JSONDecodeError:
            return None
    return parsed if isinstance(parsed, dict) else None


def fluency_f1(fluency: dict[str, Any], recall: dict[str, Any], precision: dict[str, Any], n_claims: int) -> float:
    """Official per-example `flu_f1` (`check_metrics`):
    recall = recall["recall"] / n_claims (0 if no claims); precision = precision["precision"] /
    precision["sentence_count"] (0 if the count is 0); f1 = 2PR/(P+R) (0 if P+R = 0);
    result f1 * fluency["fluency"]. Nothing is clipped: a judge claiming more supported claims than
    exist gives recall > 1. A missing key raises KeyError, as official."""
    rec = recall["recall"] / n_claims if n_claims > 0 else 0
    prec = precision["precision"] / precision["sentence_count"] if precision["sentence_count"] > 0 else 0
    f1 = 2 * (rec * prec) / (rec + prec) if rec + prec > 0 else 0
    return float(f1 * fluency["fluency"])


def fluency_f1_from_replies(fluency_reply: str, recall_reply: str, precision_reply: str, n_claims: int) -> float | None:
    """`fluency_f1` from the three raw judge replies; None (row skipped, as official) if any reply
    does not parse."""
    fluency, recall, precision = (parse_judge_json(r) for r in (fluency_reply, recall_reply, precision_reply))
    if fluency is None or recall is None or precision is None:
        return None
    return fluency_f1(fluency, recall, precision, n_claims)


def judged_mean_percent(row_scores: Sequence[float | None]) -> float:
    """The Summ file score: mean x 100 over rows that were judged (None = skipped, as official);
    ValueError when none was (official raises "No scores found")."""
    return mean_percent([s for s in row_scores if s is not None])


def summary_for_judge(generated: str, prefix: str) -> str:
    """The text the judge reads: official strips a leading "Summary:" (8 characters, once) off the
    prefixed output and then whitespace; a summary that repeats "Summary:" keeps its second one."""
    output = prefix + generated
    if output.startswith("Summary:"):
        output = output[len("Summary:") :].strip()
    return output


def numbered_claims(claims: Sequence[str]) -> str:
    """Official rendering of the atomic claims for the recall prompt: "1. claim\\n2. claim"."""
    return "\n".join(f"{i + 1}. {claim}" for i, claim in enumerate(claims))


PROMPTS_DIR = Path(__file__).resolve().parent.parent / "judge_prompts"
# The six judge prompts, verbatim from scripts/eval_gpt4_summ.py at 26197d2, as data files beside the task
# (`judge_prompts/<kind>_<dataset>.txt`, the strings as Python evaluates them: format strings whose JSON braces
# are doubled). Placeholders: {text}, {keypoints}, {summary}, {expert_summary}.
JUDGE_PROMPT_KINDS = ("fluency", "precision", "recall")
JUDGE_DATASETS = ("govreport", "multilexsum")


def _read_prompt(kind: str, dataset: str) -> str:
    # newline="" keeps the file's bytes: the prompts' hashes are pinned to the official strings
    with open(PROMPTS_DIR / f"{kind}_{dataset}.txt", encoding="utf-8", newline="") as handle:
        return handle.read()


JUDGE_PROMPTS: dict[str, dict[str, str]] = {
    dataset: {kind: _read_prompt(kind, dataset) for kind in JUDGE_PROMPT_KINDS} for dataset in JUDGE_DATASETS
}
FLUENCY_PROMPT_GOVREPORT = JUDGE_PROMPTS["govreport"]["fluency"]
FLUENCY_PROMPT_MULTILEXSUM = JUDGE_PROMPTS["multilexsum"]["fluency"]
RECALL_PROMPT_GOVREPORT = JUDGE_PROMPTS["govreport"]["recall"]
RECALL_PROMPT_MULTILEXSUM = JUDGE_PROMPTS["multilexsum"]["recall"]
PRECISION_PROMPT_GOVREPORT = JUDGE_PROMPTS["govreport"]["precision"]
PRECISION_PROMPT_MULTILEXSUM = JUDGE_PROMPTS["multilexsum"]["precision"]


def judge_prompts(
    dataset: Literal["govreport", "multilexsum"], summary: str, reference: str, claims: Sequence[str]
) -> dict[str, str]:
    """The fluency, precision and recall prompts for one summary, filled as official: the summary
    (see `summary_for_judge`) stripped into {text}/{summary}, the reference as is into
    {expert_summary}, `numbered_claims(claims)` into {keypoints}."""
    templates = JUDGE_PROMPTS[dataset]
    summary = summary.strip()
    return {
        "fluency": templates["fluency"].format(text=summary),
        "precision": templates["precision"].format(expert_summary=reference, summary=summary),
        "recall": templates["recall"].format(keypoints=numbered_claims(claims), summary=summary),
    }
