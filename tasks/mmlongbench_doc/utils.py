"""MMLongBench-Doc's task hooks: the random guess, the rule score without an extractor, and the official three-stage
scoring (the reply, GPT-4o's extracted answer, the rule score per answer format) through the harness's judge.

The official extractor (`eval/extract_answer.py`) sends two messages: the user's (the extraction prompt,
`prompt_for_answer_extraction.md`) and an assistant turn holding "\\n\\nQuestion:{question}\\nAnalysis:{reply}\\n";
`judge_prompts` gives the judge the same two, roles and all.

Generalized F1 needs three figures of a row: its score, whether its gold is answerable, whether its prediction is.
A row's `f1` holds them as three fields, `[score, answerable, predicted]` (`F1_FIELDS`; the two flags 0 or 1), never
folded into one number, so the one value a page shows as a row's score is its score (`acc`), and `harness view` names
the fields (`view_hooks.py`) while `harness compare` correlates no `f1` row (it is no score). `generalized_f1` reads
the fields back and aggregates them as `eval_acc_and_f1` does: the same samples, the same sums, the same F1.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from tasks.mmlongbench_doc.scorer import NOT_ANSWERABLE, eval_acc_and_f1, parse_extraction, scored

Doc = Mapping[str, Any]
EXTRACT = "extract"
# `show_results`' cells: the release's evidence sources and document types (its own strings) -> metric suffixes.
EVIDENCE_SOURCES = {
    "Pure-text (Plain-text)": "text",
    "Generalized-text (Layout)": "layout",
    "Table": "table",
    "Chart": "chart",
    "Figure": "figure",
}
PAGE_CELLS = ("single_page", "cross_page", "unanswerable")
DOC_TYPES = {
    "Research report / Introduction": "research_report",
    "Tutorial/Workshop": "tutorial",
    "Academic paper": "academic_paper",
    "Guidebook": "guidebook",
    "Brochure": "brochure",
    "Administration/Industry file": "admin_industry",
    "Financial report": "financial_report",
}
CELLS = (*EVIDENCE_SOURCES.values(), *PAGE_CELLS, *DOC_TYPES.values())


@cache
def extraction_prompt() -> str:
    return (Path(__file__).with_name("prompt_for_answer_extraction.md")).read_text()


# ------------------------------------------------------------------------------------------ random baseline


def random_answer(doc: Doc, rng: random.Random) -> str:
    """A guess in the shape an extracted answer of the row's format takes: "Not answerable" one time in five (the
    release's share of unanswerable questions), else a number or one of the question's words."""
    if rng.random() < 0.2:
        return NOT_ANSWERABLE
    words = [w.strip("?,.") for w in str(doc["question"]).split() if w.strip("?,.")]
    kind = doc["answer_format"]
    if kind == "Int":
        return str(rng.randint(0, 20))
    if kind == "Float":
        return f"{rng.uniform(0, 100):.1f}"
    if kind == "List":
        return repr(rng.sample(words, min(len(words), rng.randint(1, 3))))
    return rng.choice(words) if words else NOT_ANSWERABLE


# ------------------------------------------------------------------------------------------- row metrics


F1_FIELDS = ("score", "answerable", "predicted")  # a row's `f1`, field by field (module doc)


def f1_item(score: float, answer: str, pred: str) -> list[float]:
    """One row's part of generalized F1: `[score, answerable, predicted]` (module doc)."""
    return [score, float(answer != NOT_ANSWERABLE), float(pred != NOT_ANSWERABLE)]


def _f1_sample(item: Sequence[float] | float) -> dict[str, object]:
    """A row's `f1` as the sample `eval_acc_and_f1` reads (its gold and prediction stand for what they were: answerable
    or not). A single number is the code journals before the fields held (score + 2 * answerable + 4 * predicted)."""
    if isinstance(item, int | float):
        guessed = float(item >= 4.0)
        asked = float(item - 4.0 * guessed >= 2.0)
        item = [item - 4.0 * guessed - 2.0 * asked, asked, guessed]
    score, answerable, predicted = item
    return {"score": score, "answer": "" if answerable else NOT_ANSWERABLE, "pred": "" if predicted else NOT_ANSWERABLE}


def generalized_f1(items: Sequence[Sequence[float] | float]) -> float:
    """`eval_acc_and_f1`'s F1 over the rows' `f1_item`s."""
    return eval_acc_and_f1([_f1_sample(item) for item in items])[1]


def row_metrics(doc: Doc, pred: str, prefix: str) -> dict[str, float | list[float]]:
    """The row's score, its F1 item and its cells (evidence source, single/cross-page/unanswerable)."""
    score, pred = scored(doc["answer"], pred, doc["answer_format"])  # a failure's pred is "Failed to extract"
    out: dict[str, float | list[float]] = {f"{prefix}acc": score, f"{prefix}f1": f1_item(score, doc["answer"], pred)}
    for cell in cells(doc):
        out[f"{prefix}acc_{cell}"] = score
    return out


def cells(doc: Doc) -> list[str]:
    """The breakdowns of `show_results` the row falls in: its evidence sources, single-page, cross-page or
    unanswerable (a question with one evidence page is single-page even if unanswerable, as official), and its
    document type."""
    out = [EVIDENCE_SOURCES[s] for s in doc["evidence_sources"] if s in EVIDENCE_SOURCES]
    pages = list(doc["evidence_pages"])
    if len(pages) == 1:
        out.append("single_page")
    if len(pages) != 1 and doc["answer"] != NOT_ANSWERABLE:
        out.append("cross_page")
    if doc["answer"] == NOT_ANSWERABLE:
        out.append("unanswerable")
    if doc["doc_type"] in DOC_TYPES:
        out.append(DOC_TYPES[doc["doc_type"]])
    return out


def process_results(doc: Doc, results: list[str]) -> dict[str, float | list[float]]:
    """Without an extractor (no `--judge_model`: the random baseline): the reply itself, stripped, scored as if it
    were the extracted answer (`*_unextracted`, not the paper's figures)."""
    return row_metrics(doc, results[0].strip(), "unextracted_")


# ------------------------------------------------------------------------------------------- the extractor


def judge_prompts(doc: Doc, response: str) -> dict[str, list[dict[str, str]]]:
    """The extractor's two messages: the prompt as the user's, the question and reply as the assistant's."""
    analysis = "\n\nQuestion:{}\nAnalysis:{}\n".format(doc["question"], response)
    return {EXTRACT: [{"role": "user", "content": extraction_prompt()}, {"role": "assistant", "content": analysis}]}


def judge_parse(reply: str) -> str:
    """The prediction; "Failed to extract" (scored 0, counted) where the reply has none, as `run_lvlm.py`."""
    return parse_extraction(reply)


def judge_score(doc: Doc, response: str, verdicts: Mapping[str, str]) -> dict[str, float | list[float]]:
    return row_metrics(doc, verdicts[EXTRACT], "")
