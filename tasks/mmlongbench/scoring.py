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
Summ skips rows whose judge reply did not parse (see `vh_reported_accuracy`, `judged_mean_percent`).
"""

from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

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

# ------------------------------------------------------------------------------ shared parsing


def parse_output(output: str, prefix: str) -> str:
    """The answer line, as paper-era `utils.parse_output` (26197d2; v1.1 made it DOTALL).

    The rest of the line after the first case-insensitive match of `prefix`; with no match, the
    first line of `output`. Stripped, then one more leading `prefix` (case-insensitive) is removed
    and the result stripped again (chat models sometimes repeat the prefix).
    `"Answer: Paris\\nmore"` -> `"Paris"`; `"Answer:\\nParis"` -> `""` (the prefix's own line is
    empty; only the metrics that also score the raw text see "Paris"); `"x\\nAnswer: answer: B"` -> `"B"`;
    `"no prefix here\\nB"` -> `"no prefix here"`.
    As official, the prefix is used as a regex in the first search (the benchmark's prefixes
    `Answer:`, `label:`, `Summary:` are literal). Official returns None only if no line matches,
    which cannot happen (the first-line fallback always matches), so this returns a str.
    """
    after_prefix = re.search(f"(?:{prefix})(.*)(?:\n|$)", output, flags=re.IGNORECASE)
    line = after_prefix[1] if after_prefix is not None else output.split("\n", 1)[0]
    line = re.sub(f"^{re.escape(prefix)}", "", line.strip(), flags=re.IGNORECASE)
    return line.strip()


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def _drop_articles_and_squeeze(text: str) -> str:
    # Articles become a space and whitespace runs collapse, so "the cat" -> "cat".
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_answer(s: str) -> str:
    """Official `normalize_answer` (DensePhrases/SQuAD): lowercase, drop ASCII punctuation, drop the
    words a/an/the, collapse whitespace. Punctuation goes first, so "the-end" -> "theend" keeps its
    "the", while "Paris, the city." -> "paris city". Non-ASCII punctuation (e.g. "’") stays."""
    lowered = s.lower()
    return _drop_articles_and_squeeze("".join(ch for ch in lowered if ch not in _PUNCTUATION))


def normalize_answer_keep_punctuation(s: str) -> str:
    """Official `normalize_answer_with_punc`: `normalize_answer` without the punctuation step (VH and
    count extraction read "[1, 2]" or "yes." through it)."""
    return _drop_articles_and_squeeze(s.lower())


def _flatten_golds(golds: str | Sequence[Any]) -> list[str]:
    # Official `drqa_metric_max_over_ground_truths`: a str is one gold; if the first gold is a list,
    # every gold is iterated as a list of aliases.
    if isinstance(golds, str):
        return [golds]
    if len(golds) == 0:
        raise ValueError("no gold answers (official indexes golds[0] and raises IndexError)")
    if isinstance(golds[0], list):
        return [alias for group in golds for alias in group]
    return list(golds)


def _max_over_raw_and_parsed(generated: str, prefix: str, score_text: Callable[[str], float | bool]) -> float:
    # Official `default_post_process`: the metric on the prefixed output and on its parsed line, max.
    output = prefix + generated
    return float(max(score_text(output), score_text(parse_output(output, prefix))))


# --------------------------------------------------------------------------------------- SubEM


def sub_em(prediction: str, golds: str | Sequence[Any]) -> float:
    """Substring exact match: 1.0 if any normalized gold is a substring of the normalized prediction.

    Official `substring_exact_match_score` maxed over golds. Edge cases, as official: a gold that
    normalizes to "" (e.g. "The", "!") matches everything; matching is on characters, not words
    ("par" is in "paris"); golds may be a str, a list, or a list of alias lists (flattened).
    """
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(gold) in pred for gold in _flatten_golds(golds)))


def score_sub_em(generated: str, prefix: str, golds: str | Sequence[Any]) -> float:
    """SubEM of one row (VRAG, MM-NIAH-Ret (T), MM-NIAH-Reason (T)): max over the raw prefixed output
    and its parsed line (`default_post_process`, metrics="sub_em").

    Only the raw text can match a gold on a later line (`" I think\\nParis"`); the prefix's own word
    is part of the raw text ("Answer:" matches the gold "answer")."""
    return _max_over_raw_and_parsed(generated, prefix, lambda text: sub_em(text, golds))


# ------------------------------------------------------------------------------ multiple choice

_ANSWER_IS = re.compile(r"answer is \(?([A-J])\)?")
_ANSWER_COLON = re.compile(r"[aA]nswer:\s*([A-J])")
_LAST_STANDALONE_LETTER = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)


def choice_index(text: str) -> int:
    """Option index (A -> 0 ... J -> 9) as official `extract_choice_letter`, or -1.

    On the whitespace-collapsed text (case kept), the first rule that matches wins:
    1. `answer is \\(?([A-J])\\)?` (lower-case "answer is"; "The answer is (C)" -> 2);
    2. `[aA]nswer:\\s*([A-J])`, with NO word boundary after the letter: "Answer: Based on ..." -> 1
       (the B of "Based"), "Answer: I think" -> 8;
    3. the last stand-alone capital A-J anywhere ("I" counts: "C, I guess" -> 8).
    """
    text = " ".join(text.split())
    for rule in (_ANSWER_IS, _ANSWER_COLON):
        found = rule.search(text)
        if found is not None:
            return ord(found[1]) - ord("A")
    found = _LAST_STANDALONE_LETTER.search(text)
    return ord(found[0]) - ord("A") if found is not None else -1


def score_mc(generated: str, prefix: str, gold: int) -> float:
    """MC accuracy of one row (MM-NIAH-Ret (I), MM-NIAH-Reason (I)): `choice_index == gold`, max over
    raw and parsed (`default_post_process`, metrics="mc_acc").

    The official data holds the gold as the option's 0-based int index (`int(choice == answers)`
    compares it with an int; a letter gold would always score 0, and the paper's MC scores are not
    0). Because of the max, an output whose raw and parsed readings differ scores if either is
    right: "Answer: Based on the images, C" reads B raw (rule 2) and C parsed (rule 3).
    """
    return _max_over_raw_and_parsed(generated, prefix, lambda text: choice_index(text) == gold)


# ---------------------------------------------------------------------------------------- count

_INT_LIST = re.compile(r"\[[\d\s,]+\]")
_ANY_BRACKETS = re.compile(r"\[.*?\]", re.DOTALL)


def _int_castable(items: list[Any]) -> list[int]:
    # Official `turn_int_list`: keep what int() accepts, so 2.7 -> 2, "3" -> 3, true -> 1.
    kept = []
    for item in items:
        try:
            kept.append(int(item))
        except Exception:  # official: bare except (None, lists, nan, inf, "x" are dropped)
            continue
    return kept


def count_list(text: str) -> list[int]:
    """Needle counts as official `extract_cnt_list`, on `normalize_answer_keep_punctuation(text)`.

    1. The last `[d, d, ...]` (digits, spaces, commas only) parsed as JSON; if that is not valid
       JSON ("[1 2]", "[1,]", "[01, 2]") fall through.
    2. The last non-greedy `[...]`, JSON-parsed, keeping the int()-castable items
       ("[1, two, 3]" is not JSON and falls through; "[1.9, \\"2\\"]" -> [1, 2]); invalid JSON falls
       through.
    3. Every run of digits in the text ("3 in total, 2 images" -> [3, 2]); none -> [].
    """
    text = normalize_answer_keep_punctuation(text)
    lists = _INT_LIST.findall(text)
    if lists:
        try:
            return json.loads(lists[-1])
        except json.JSONDecodeError:
            pass
    bracketed = _ANY_BRACKETS.findall(text)
    if bracketed:
        try:
            return _int_castable(json.loads(bracketed[-1]))
        except json.JSONDecodeError:
            pass
    return [int(digits) for digits in re.findall(r"\d+", text)]


def score_count(generated: str, prefix: str, gold_counts: Sequence[int]) -> float:
    """Total-count accuracy of one row (MM-NIAH-Count (T)/(I); official metric name `soft_acc`):
    `sum(count_list(text)) == sum(gold_counts)`, max over raw and parsed.

    Only totals are compared, so "[2, 1]" matches the gold [1, 2] and "[3]" does too; no list
    (sum 0) matches an all-zero gold.
    """
    total = sum(gold_counts)
    return _max_over_raw_and_parsed(generated, prefix, lambda text: sum(count_list(text)) == total)


# -------------------------------------------------------------------------------- ICL labels

_LABEL_FIELD = re.compile(r"label:\s*(\d+)", re.IGNORECASE)
_LAST_STANDALONE_INT = re.compile(r"\b(\d+)\b(?!.*\b\d+\b)")


def class_label(text: str) -> int:
    """Class id as official `extract_class_num`, on the whitespace-collapsed text, or -1.

    1. The first `label:\\s*(\\d+)` (any case: "Label: 7" -> 7);
    2. else the last stand-alone integer ("class 3 or 12" -> 12);
    3. else the first digit run even inside a word ("id42x" -> 42).
    """
    text = " ".join(text.split())
    for rule in (_LABEL_FIELD, _LAST_STANDALONE_INT):
        found = rule.search(text)
        if found is not None:
            return int(found[1])
    digits = re.findall(r"\d+", text)
    return int(digits[0]) if digits else -1


def score_icl(generated: str, prefix: str, gold_label: int) -> float:
    """Classification accuracy of one row (the four ICL datasets): `class_label == gold_label`, max
    over raw and parsed (`default_post_process`, metrics="cls_acc"). The raw text starts with the
    prefix `label:`, so rule 1 reads the first `label: <digits>` anywhere in the output, while the
    parsed line only sees the first line."""
    return _max_over_raw_and_parsed(generated, prefix, lambda text: class_label(text) == gold_label)


# ------------------------------------------------------------------------------ Visual Haystack

_LAST_YES_NO = re.compile(r"\b(?:yes|no)\b(?!.*\b(?:yes|no)\b)", re.IGNORECASE | re.DOTALL)
# Official `DefaultAnswerGenerator.default_answer_list`.
VH_DEFAULT_CYCLE: tuple[int, ...] = (0, 1, 1, 0)


def vh_label(text: str) -> int:
    """Yes -> 1, No -> 0, as official `extract_binary_label`; -1 when unparseable.

    On `normalize_answer_keep_punctuation(text)`: the LAST whole word yes/no wins ("No, wait: yes."
    -> 1; "not"/"know"/"yesterday" do not count). Else, if the whole stripped text is a digit
    string, its int ("1" -> 1, "2" -> 2). The digit fallback can only fire on golds: model outputs
    are read with the "Answer:" prefix in front.
    """
    text = normalize_answer_keep_punctuation(text)
    found = _LAST_YES_NO.search(text)
    if found is not None:
        return 1 if found[0] == "yes" else 0
    stripped = text.strip()
    return int(stripped) if stripped.isdigit() else -1


def vh_default_label(row_index: int) -> int:
    """The label official substitutes for an unparseable output on the row at `row_index`.

    `data.py` `vh_post_process` draws `DefaultAnswerGenerator.get_default_answer()` for EVERY row it
    scores, parseable or not, from a generator made once per evaluated file; so the default is
    indexed by the row's 0-based position in the file's evaluation order, not by a count of
    unparseable rows: 0, 1, 1, 0, 0, 1, 1, 0, ...
    """
    return VH_DEFAULT_CYCLE[row_index % len(VH_DEFAULT_CYCLE)]


def score_vh(generated: str, prefix: str, gold: str, row_index: int) -> float:
    """VH accuracy of one row (VH-Single, VH-Multi), official `vh_post_process` + `binary_acc`.

    The raw prefixed output only (no `parse_output`, no max); -1 is replaced by
    `vh_default_label(row_index)`; the gold ("Yes"/"No") is read by `vh_label` too. A row the
    official loop skipped (model returned None) did not advance the cycle; the builder's row index
    assumes every row produced an output.
    """
    label = vh_label(prefix + generated)
    if label == -1:
        label = vh_default_label(row_index)
    return float(label == vh_label(gold))


def score_vh_file(generations: Sequence[str], prefix: str, golds: Sequence[str]) -> list[float]:
    """`score_vh` over one (dataset, length) file's rows given in official evaluation order."""
    if len(generations) != len(golds):
        raise ValueError(f"{len(generations)} generations for {len(golds)} golds")
    return [score_vh(g, prefix, gold, i) for i, (g, gold) in enumerate(zip(generations, golds, strict=True))]


def mean_percent(row_scores: Sequence[float]) -> float:
    """A file's score: mean of its rows x 100 (`eval.py` `averaged_metrics`). Empty -> ValueError."""
    if len(row_scores) == 0:
        raise ValueError("no scored rows")
    return math.fsum(row_scores) / len(row_scores) * 100


def fold_at_50(accuracy_percent: float) -> float:
    """Official reporting fold of VH accuracy (`figure_scripts/utils.py` "flip the binnary acc"):
    a file accuracy below 50 becomes 100 - acc; 50 itself and above stay. 30.0 -> 70.0."""
    return 100.0 - accuracy_percent if accuracy_percent < 50 else accuracy_percent


def vh_reported_accuracy(row_scores: Sequence[float]) -> float:
    """The reported VH number of one file (`vh_acc_folded`): `fold_at_50(mean_percent(rows))`."""
    return fold_at_50(mean_percent(row_scores))


# --------------------------------------------------------------------------------------- DocVQA

# Official `get_docqa_clean_string` suffix order: each is removed once, in turn, if the string ends
# with it, so "12 mm" -> "12" but also "item" -> "ite" ("m").
_DOCVQA_SUFFIXES = ("kg", "meters", "acres", "minutes", "miles", "mile", "feet",
                    "million", "thousand", "billion", "mm", "m")
_NUMBER = re.compile(r"(-?\d+(\.\d*)?|-?\.\d+)")
_EXACT_MATCH_GOLD = tuple(re.compile(p) for p in (
    r"https://",
    r".*\.(py|ipynb)$",
    r"^page",
    r"^\d+(-\d+|\s\d+)?$",
    r"(a\.m\.|p\.m\.)",
    r"^\d{4}[-/\s]\d{1,2}[-/\s]\d{1,2}$",
    r"^\d{1,2}[-/\s]\d{1,2}[-/\s]\d{2,4}$",
    r"^\d{4}[-/\s]\d{1,2}$",
    r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
))
DOCVQA_FORMATS = ("Integer", "Float", "String", "None", "List")


def docvqa_clean(value: Any) -> str:
    """Official `get_docqa_clean_string`: `str(value)`, lowercase, strip, drop every comma, remove
    each suffix of `_DOCVQA_SUFFIXES` once in order (stripping after each), drop one leading and
    one trailing quote, then strip `$`, `£` and `%` runs from both ends (in that order).
    `"1,200 kg"` -> `"1200"`; `"$5.5 million"` -> `"5.5"`; `"'45%'"` -> `"45"`."""
    text = str(value).lower().strip().replace(",", "")
    for suffix in _DOCVQA_SUFFIXES:
        text = re.sub(re.escape(suffix) + "$", "", text).strip()
    text = re.sub(r"^['\"]|['\"]$", "", text).strip()
    for symbol in "$£%":
        text = text.strip().strip(symbol).strip()
    return text


def docvqa_numbers(text: str) -> list[float]:
    """Official `extract_number_list`: commas removed, then every `-?\\d+(\\.\\d*)?|-?\\.\\d+` as a
    float, dropping non-finite ones (a 400-digit run overflows to inf). A hyphen is a sign:
    "pages 3-5" -> [3.0, -5.0]; "1.5.2" -> [1.5, 0.2]."""
    numbers = []
    for whole, _ in _NUMBER.findall(text.replace(",", "")):
        value = float(whole)
        if math.isfinite(value):
            numbers.append(value)
    return numbers


def docvqa_needs_exact_match(gold: str) -> bool:
    """Official `need_exact_match_check`: URLs (`https://`), .py/.ipynb names, strings starting with
    "page", `digits[-digits| digits]`, a.m./p.m. times, YYYY-MM-DD, DD-MM-YYYY, YYYY-MM (separators
    `-`, `/` or whitespace) and e-mail addresses. Case-sensitive ("Page 3" does not match `^page`)."""
    return any(pattern.search(gold) for pattern in _EXACT_MATCH_GOLD)


def docvqa_value_type(value: str) -> str:
    """Official `get_str_type`: "Integer" if `docvqa_clean(value)` parses as a whole float and the
    ORIGINAL string has no "%", "Float" if it parses otherwise, else "String". Python's float()
    decides: "1e3", "1_000" and "5m" are Integer; "12%" and "2.5" are Float; "nan"/"inf" are String
    (int() of them raises)."""
    try:
        number = float(docvqa_clean(value))
        return "Integer" if number == int(number) and "%" not in value else "Float"
    except Exception:  # official: bare except
        return "String"


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 on `normalize_answer` tokens (official `f1_score(...)[0]`); 0.0 when nothing
    is shared, including when either side normalizes to nothing."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    shared = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(pred_tokens)
    recall = shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _percent_tolerant_close(gold: float, predicted: float) -> bool:
    # Official `is_float_equal(include_percentage=True)`: 1% relative tolerance against gold/100,
    # gold and gold*100, so 0.25 matches "25" and 25 matches "0.25".
    return any(math.isclose(target, predicted, rel_tol=0.01) for target in (gold / 100, gold, gold * 100))


def docvqa_score_parsed(gold: Any, prediction: str, answer_format: str) -> float:
    """Official `eval_docqa_score(gt, pred, answer_type)` on an already parsed prediction.

    - Integer: gold -> int(float(clean(gold))) (AssertionError if not whole); 1 if any whole number
      in `docvqa_numbers(clean(prediction))` equals it.
    - Float: 1 if any number in `docvqa_numbers(clean(prediction))` is within 1% of gold, gold/100
      or gold*100.
    - String / None (unanswerable, gold "Not answerable"): if `docvqa_needs_exact_match(gold)`,
      1 iff gold is a case-sensitive substring of the raw prediction; else `token_f1`.
    - List: gold is a JSON list. Items that are str, typed "String" and need no exact match are
      joined with spaces into ONE item placed first (if the join is non-empty); every item is then
      scored against the whole prediction with its own type (int -> Integer, float -> Float, str ->
      `docvqa_value_type`); the mean is returned. An empty list raises ZeroDivisionError, as
      official; a nested list raises AssertionError.
    Any other format raises KeyError.
    """
    if answer_format == "Integer":
        whole = float(docvqa_clean(str(gold)))
        assert int(whole) == whole, f"Integer gold {gold!r} is not whole"
        predicted = [int(n) for n in docvqa_numbers(docvqa_clean(str(prediction))) if int(n) == n]
        return float(int(whole) in predicted)
    if answer_format == "Float":
        target = float(docvqa_clean(str(gold)))
        predicted = docvqa_numbers(docvqa_clean(str(prediction)))
        return float(any(_percent_tolerant_close(target, n) for n in predicted))
    if answer_format in ("String", "None"):
        if docvqa_needs_exact_match(gold):
            return float(gold in prediction)
        return token_f1(prediction, gold)
    if answer_format == "List":
        return _docvqa_list_score(json.loads(gold), prediction)
    raise KeyError(f"Wrong answer type: {answer_format!r}")


def _docvqa_list_score(items: list[Any], prediction: str) -> float:
    mergeable = [isinstance(item, str) and docvqa_value_type(item) == "String"
                 and not docvqa_needs_exact_match(item) for item in items]
    merged = " ".join(item for item, merge in zip(items, mergeable, strict=True) if merge).strip()
    if merged:
        # Plain strings are scored as one text so that token F1 is not crushed by low precision.
        items = [merged] + [item for item, merge in zip(items, mergeable, strict=True) if not merge]
    scores = []
    for item in items:
        assert not isinstance(item, list), "nested list gold"
        if isinstance(item, int):
            item_format = "Integer"
        elif isinstance(item, float):
            item_format = "Float"
        else:
            item_format = docvqa_value_type(item)
        scores.append(docvqa_score_parsed(item, prediction, item_format))
    return sum(scores) / len(items)


def score_docvqa(generated: str, prefix: str, gold_answer: str, answer_format: str) -> float:
    """DocVQA score of one row (MMLongBench-Doc, LongDocURL, SlideVQA), official `dcoqa_post_process`:
    `docvqa_score_parsed` on the PARSED line only (no max with the raw text). Official falls back to
    the raw output when parsing returns None, which never happens, so only the prefix's own line
    counts: "Answer:\\n42" scores against "".
    """
    return docvqa_score_parsed(gold_answer, parse_output(prefix + generated, prefix), answer_format)


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
    return max(scorer.score(target=ref, prediction=prediction)["rougeLsum"].fmeasure
               for ref in _flatten_golds(references))


def rouge_lsum_f1(generated: str, prefix: str, reference: str | Sequence[Any]) -> float:
    """`rougeLsum_f1` of one Summ row, the no-judge fallback: max of `rouge_lsum` over the raw
    prefixed output ("Summary: ...", all lines, prefix word included) and its parsed FIRST line
    (`default_post_process`, metrics="rouge")."""
    return _max_over_raw_and_parsed(generated, prefix, lambda text: rouge_lsum(text, reference))


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


def fluency_f1_from_replies(fluency_reply: str, recall_reply: str, precision_reply: str,
                            n_claims: int) -> float | None:
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
        output = output[len("Summary:"):].strip()
    return output


def numbered_claims(claims: Sequence[str]) -> str:
    """Official rendering of the atomic claims for the recall prompt: "1. claim\\n2. claim"."""
    return "\n".join(f"{i + 1}. {claim}" for i, claim in enumerate(claims))


# The six judge prompts, verbatim from scripts/eval_gpt4_summ.py at 26197d2 (format strings: JSON
# braces are doubled). Placeholders: {text}, {keypoints}, {summary}, {expert_summary}.
FLUENCY_PROMPT_GOVREPORT = """Please act as an impartial judge and evaluate the fluency of the provided text. The text should be coherent, non-repetitive, fluent, and grammatically correct.

Below is your grading rubric:
- Score 0 (incoherent, repetitive, or incomplete): Incoherent sentences, repetitive sentences (even if not by exact words), incomplete answers, or gibberish. Note that even if the answer is coherent, if it is repetitive or incomplete, it should be given a score of 0.
  - Examples:
    - Incomplete: "Summary:"
    - Incoherent: "Summary:U.S. agencies engaged export and controls controls controls controls diversion prevent items U.S. activities compliance allies transshipment risk misuse exported misuse misuse illicit illicit against interests or."
    - Repetitive: "Summary:The audit focused on determining the cost and schedule performance of selected programs. The audit focused on determining the cost and schedule performance of selected programs. The audit focused on determining the cost and schedule performance of selected programs. The audit focused on determining the cost and schedule performance of selected programs."

- Score 1 (coherent, non-repetitive answer): Coherent, non-repetitive, fluent, grammatically correct answers. If the text is coherent, non-repetitive, and fluent, but the last sentence is truncated, it should still be given a score of 1.
  - Examples:
    - "Why GAO Did This Study:\nTobacco use is the leading cause of preventable death and disease in the United States. In 2009, the Family Smoking Prevention and Tobacco Control Act (Tobacco Control Act) granted FDA, an agency within the Department of Health and Human Services (HHS), authority to regulate tobacco products, including marketing and distribution to youth. The act established CTP, which implements the act by educating the public on the dangers of tobacco use; developing the science needed for tobacco regulation; and developing and enforcing regulations on the manufacture, marketing, and distribution of tobacco products. The act authorized FDA to assess and collect user fees from tobacco manufacturers and importers.\nThe Tobacco Control Act mandated that GAO review the authority and resources provided to FDA for regulating the manufacture, marketing, and distribution of tobacco products. This report examines (1) how FDA spent tobacco user fees for key activities using its authorities granted in the act, and (2) any challenges FDA encountered in using its authorities. GAO analyzed data on tobacco user fees collected and spent on key activities by FDA as of March 31, 2014; reviewed documents related to FDA's key activities, as well as relevant laws, regulations, and guidance; and interviewed CTP, public health, and tobacco industry officials.\nHHS reviewed a draft of this report and agreed with GAO's reiteration of its previous recommendation that performance measures for all tobacco product reviews are needed.\n\nWhat GAO Found:\nAs of March 31, 2014, the Food and Drug Administration (FDA) spent about $1.48 billion (79 percent) of the $1.88 billion in total tobacco user fees it collected since fiscal year 2009. FDA spent the majority of tobacco user fees on key activities led by the agency's Center for Tobacco Products (CTP), which is funded solely by tobacco user fees. These included activities related to public education (including public education campaigns and communicating CTP activities); regulatory science (including research, product review, and developing the science to support regulations and guidance); and compliance and enforcement (including tobacco retailer inspections; manufacturer and import inspections and enforcement; promotion, advertising, and labeling surveillance; and outreach and small business assistance).\nWhile FDA has taken steps to address some of the challenges it has faced, including challenges related to starting up a new center, it continues to face challenges, including setting and monitoring review time frames. Until recently, CTP has not had performance measures for making final decisions on new tobacco product submissions by which to assess its progress, as GAO previously recommended. FDA has announced performance measures for two of its new tobacco product review processes (to take effect in October 2014), but not for the type of new tobacco product submission that comprises the bulk of FDA's review backlog. The agency has indicated that it intends to establish such performance measures, but until it does so, the agency's ability to assess its efforts will be limited. This will be particularly pressing as FDA moves forward with plans to deem additional types of tobacco products to be subject to"

Now, read the provided text, and evaluate the fluency using the rubric. Then output your score in the following json format: {{"fluency": 1}}.

Text: "{text}"
"""

FLUENCY_PROMPT_MULTILEXSUM = """Please act as an impartial judge and evaluate the fluency of the provided text. The text should be coherent, non-repetitive, fluent, and grammatically correct.

Below is your grading rubric:
- Score 0 (incoherent, repetitive, or incomplete): Incoherent sentences, repetitive sentences (even if not by exact words), incomplete answers, or gibberish. Note that even if the answer is coherent, if it is repetitive or incomplete, it should be given a score of 0.
  - Examples:
    - Incomplete: "Summary:"
    - Incoherent: "Summary: The plaintiff the the the the able the the the the the the the the the the able the the the the the Ã�\n"
    - Repetitive: "Summary: The U.S. government brought a criminal case against four defendants. Summary: The U.S. government brought a criminal case against four defendants. Summary: The U.S. government brought a criminal case against four defendants. Summary: The U.S. government brought a criminal case against four defendants."

- Score 1 (coherent, non-repetitive answer): Coherent, non-repetitive, fluent, grammatically correct answers. If the text is coherent, non-repetitive, and fluent, but the last sentence is truncated, it should still be given a score of 1.
  - Examples:
    - "This case is about an apprenticeship test that had a disparate impact on Black apprenticeship applicants. The Equal Employment Opportunity Commission (EEOC) filed this lawsuit on December 27, 2004, in U.S. District Court for the Southern District of Ohio."
    - "The plaintiffs sought declaratory and injunctive relief, as well as attorneys' fees and costs, under the Americans with Disabilities Act, the Rehabilitation Act of 1973, the Social Security Act, and the Nursing Home Reform Act. The case was certified as a class action on behalf of all Medicaid-eligible adults with disabilities in Cook County, Illinois, who are being, or may in the future be, unnecessarily confined to nursing facilities and with appropriate supports and services may be able to live in a community setting. The defendants denied the allegations and argued that the plaintiffs' claims were not typical of the class and that the class definition was too broad. The case is ongoing, with discovery and expert testimony scheduled for the fall of"

Now, read the provided text, and evaluate the fluency using the rubric. Then output your score in the following json format: {{"fluency": 1}}.

Text: "{text}"
"""

RECALL_PROMPT_GOVREPORT = """Please act as an impartial judge and evaluate the quality of the provided summary of a government report from U.S. Government Accountability Office (GAO). The summary should discuss one or more of the following: why GAO did this study, what GAO found, and what GAO recommends. The text should contain all the major points in the expert-written summary, which are given to you.

Below is your grading rubric:
Recall:
- Evaluate the provided summary by deciding if each of the key points is present in the provided summary. A key point is considered present if its factual information is mostly-supported by the provided summary. If a key point contains multiple facts, it's still considered supported if most of the facts are present.
- Score: the number of key points mostly-supported by the provided summary.
- Examples: use the following examples to guide your evaluation.

Example 1:

Key points:
1. The Future Combat System (FCS) program is the centerpiece of the Army's effort to transition to a lighter combat force.
2. The FCS program is the centerpiece of the Army's effort to transition to a more agile combat force.
3. The FCS program is the centerpiece of the Army's effort to transition to a more capable combat force.
4. By law, GAO is to report annually on the FCS program.
5. Law requires the Department of Defense (DOD) to hold a milestone review of the FCS program.
6. This milestone review is now planned for 2009.
7. This report addresses (1) what knowledge will likely be available in key areas for the review.
8. This report addresses (2) the challenges that lie ahead following the review.
9. To meet these objectives, GAO reviewed key documents and performed analysis.
10. GAO attended demonstrations and design reviews to meet these objectives.
11. GAO interviewed DOD officials to meet these objectives.
12. The Army will be challenged to demonstrate the knowledge needed to warrant an unqualified commitment to the FCS program.
13. This challenge will occur at the 2009 milestone review.
14. The Army has made progress.
15. Knowledge deficiencies remain in key areas.
16. Specifically, all critical technologies are not currently at a minimum acceptable level of maturity.
17. It has not been demonstrated that emerging FCS system designs can meet specific requirements.
18. It has not been demonstrated that emerging FCS system designs can mitigate associated technical risks.
19. Actual demonstrations of FCS hardware and software—versus modeling and simulation results—have been limited.
20. Only small-scale warfighting concepts and limited prototypes have been demonstrated.
21. Network performance is also largely unproven.
22. These deficiencies do not necessarily represent problems that could have been avoided.
23. Rather, these deficiencies reflect the actual immaturity of the program.
24. Finally, there is an existing tension between program costs and available funds that seems only likely to worsen.
25. FCS costs are likely to increase at the same time as competition for funds intensifies between near- and far-term needs in DOD.
26. Competition for funds will also intensify between DOD and other federal agencies.
27. DOD could have at least three programmatic directions to consider for shaping investments in future capabilities.
28. Each of these programmatic directions presents challenges.
29. First, the current FCS acquisition strategy is unlikely to be executed within the current $159 billion cost estimate.
30. The strategy calls for significant production commitments before designs are demonstrated.
31. To date, FCS has spent about 60 percent of its development funds.
32. The most expensive activities remain to be done before the production decision.
33. In February 2010, Congress will be asked to begin advancing procurement funds for FCS core systems.
34. This request will happen before most prototype deliveries have taken place.
35. This request will happen before critical design review has taken place.
36. This request will happen before key system tests have taken place.
37. By the 2013 production decision, Congress will have been asked for over $50 billion in funding for FCS.
38. The program to spin out early FCS capabilities to current forces operates on an aggressive schedule centered on a 2009 demonstration.
39. The 2009 demonstration will employ some surrogate systems and preliminary designs instead of fully developed items.
40. There will be little time for evaluation of results.
41. Third, the Army is currently considering an incremental FCS strategy.
42. This strategy is to develop and field capabilities in stages versus in one step.
43. Such an approach is generally preferable.
44. This approach would present decision makers with a third major change in FCS strategy to consider anew.
45. While details are yet unavailable, it is important that each increment be justified by itself.
46. Each increment should not be dependent on future increments.

Summary: <start of summary>Why GAO Did This Study:
The Future Combat System (FCS) program is the centerpiece of the Army's effort to transition to a lighter combat force. By law, GAO is to report annually on the FCS program. This report addresses (1) what knowledge will likely be available in key areas for the review, and (2) the challenges that lie ahead following the review. To meet these objectives, GAO reviewed key documents and interviewed DOD officials.

What GAO Found:
The Army will be challenged to demonstrate the knowledge needed to warrant an unqualified commitment to the FCS program. While the Army has made progress, knowledge deficiencies remain in key areas. Specifically, all critical technologies are not currently at a minimum acceptable level of maturity. Actual demonstrations of FCS hardware and software have been limited. Network performance is also largely unproven. DOD could have at least three programmatic directions to consider for shaping investments in future capabilities. First, the current FCS acquisition strategy is unlikely to be executed within the current $159 billion cost estimate. To date, FCS has spent about 60 percent of its development funds. In February 2010, Congress will be asked to begin advancing procurement funds for FCS core systems before most prototype deliveries and key system tests have taken place. Second, the program to spin out early FCS capabilities to current forces operates on an aggressive schedule centered on a 2009 demonstration. Third, the Army is currently considering an incremental FCS strategy to develop and field capabilities in stages versus in one step. Such an approach is generally preferable.<end of summary>

Reasoning: The summary covers: FCS as Army's transition centerpiece (point 1), GAO's reporting requirement (point 4), report objectives (points 7, 8), GAO's methods (points 9, 11), Army's challenges (point 12), progress and deficiencies (points 14, 15), technology issues (points 16, 19, 21), three programmatic directions (points 27, 29, 31, 33, 34, 36, 38, 41-43). It omits: "more agile/capable" (points 2, 3), 2009 milestone review (points 5, 6, 13), demonstrations attendance (point 10), design requirements issues (points 17, 18), small-scale concepts (point 20), program immaturity explanation (points 22, 23), funding competition (points 24-26), challenges after review (point 28), production before design demonstration (points 30, 32), technology testing issues (point 35), $50 billion funding (point 37), surrogate systems (points 39, 40), and increment justification (points 44-46). The summary supports 22 key points.

Output: {{"supported_key_points": [1, 4, 7, 8, 9, 11, 12, 14, 15, 16, 19, 21, 27, 29, 31, 33, 34, 36, 38, 41, 42, 43], "recall": 22}}

Now, read the provided summary and key points, and evaluate the summary using the rubric. First, think step-by-step and provide your reasoning and assessment on the answer. Please keep your response concise and limited to a single paragraph. Then output your score in the following json format: {{"supported_key_points": [1, 4, 7, 8, 9, 11, 12, 14, 15, 16, 19, 21, 27, 29, 31, 33, 34, 36, 38, 41, 42, 43], "recall": 22}}, where "supported_key_points" contains the key points that are present in the summary and "recall" is the total number of key points present in the summary.

Key points:
{keypoints}

Summary: <start of summary>{summary}<end of summary>
"""

RECALL_PROMPT_MULTILEXSUM = """Please act as an impartial judge and evaluate the quality of the provided summary of a civil lawsuit. The summary is based on a set of legal documents, and it should contain a short description of the background, the parties involved, and the outcomes of the case. The text should contain all the major points in the expert-written summary, which are given to you.

Below is your grading rubric:
Recall:
- Evaluate the provided summary by deciding if each of the key points is present in the provided summary. A key point is considered present if its factual information is well-supported by the provided summary.
- Score: the number of key points present in the provided summary.
- Examples: use the following examples to guide your evaluation.

Example 1:

Key points:
1. The case challenged curfews in Los Angeles and San Bernardino, California.
2. The curfews were issued in response to the nationwide protests following the police killing of George Floyd in Minneapolis.
3. The complaint argued that the curfews violated free speech, free assembly, free movement, and Due Process.
4. The complaint also argued that the San Bernardino curfew violated the Establishment Clause.
5. The complaint sought injunctive and declaratory relief.
6. The plaintiffs voluntarily dismissed the case on July 7, 2020.
7. The dismissal occurred because the city had rescinded the curfews and not attempted to reinstate them.

Summary: "In June 2020, Black Lives Matter - Los Angeles and several individuals filed a lawsuit in the U.S. District Court for the Central District of California against Los Angeles Mayor Eric Garcetti, other city officials, and the City of San Bernardino, challenging the constitutionality of curfew orders imposed during protests against police violence. The plaintiffs, represented by the ACLU of Southern California, argued that the curfews violated their First Amendment rights to free speech and assembly, as well as their freedom of movement, by suppressing political protests and other activities. The lawsuit also claimed that the curfews were not narrowly tailored to address any emergency and lacked sufficient notice. However, the plaintiffs voluntarily dismissed the case in July 2020 after the defendants lifted the curfew orders and did not reinstate them in the following weeks."

Reasoning: The summary states that the plaintiffs challenged the constitutionality of curfew orders against Los Angeles and San Bernadino, so key point 1 is present. The summary does not mention that the curfew orders were issued in response to the nationwide protest that resulted from the police killing of George Floyd in Minneapolis, so key point 2 is missing. The summary does mention that the complaint argued that the curfews violated the First Amendment rights to free speech and assembly, so key point 3 is present. The summary does not mention that the complaint argued that the San Bernardino curfew violated the Establishment Clause, so key point 4 is missing. The summary does not mention that the complaint sought injunctive and declaratory relief, so key point 5 is missing. The summary mentions that the plaintiffs voluntarily dismissed the case in July 2020 after the defendants lifted the curfew orders and did not reinstate them in the following weeks, so key point 6 and 7 are present. Finally, key points 1, 3, 6, and 7 are present in the summary, so the recall score is 4.

Output: {{"recall": 4}}


Example 2:

Key points:
1. Individuals with disabilities brought the case against various Illinois state officials.
2. The plaintiffs sought declaratory and injunctive relief, alleging inappropriate institutionalization when community-based care was possible.
3. In August 2011, a consent decree was entered, requiring the state to transition class members from nursing facilities to community-based settings.
4. The transition plan was updated in April 2018.
5. Monitoring of the transition is ongoing as of November 2018.

Summary: "Five Medicaid-eligible individuals with disabilities, Lenil Colbert, Constance Gray, Ernest Reeves, Kenya Lyles, and Dwight Scott, filed a class action lawsuit in the United States District Court for the Northern District of Illinois against Illinois state officials, including Governor Rod R. Blagojevich, Secretary of the Illinois Department of Human Services Carol L. Adams, Director of the Illinois Department of Healthcare and Family Services Barry S. Maram, and Director of the Illinois Department of Public Health Eric E. Whitaker. The plaintiffs alleged that the defendants' policies and practices effectively compel people with disabilities to enter nursing facilities in order to receive long-term care and assistance, forcing them to forego liberty, privacy, independence, and the opportunity to live in the communities of their choice. The plaintiffs sought declaratory and injunctive relief, as well as attorneys' fees and costs, under the Americans with Disabilities Act, the Rehabilitation Act of 1973, the Social Security Act, and the Nursing Home Reform Act. The case was certified as a class action on behalf of all Medicaid-eligible adults with disabilities in Cook County, Illinois, who are being, or may in the future be, unnecessarily confined to nursing facilities and with appropriate supports and services may be able to live in a community setting. The defendants denied the allegations and argued that the plaintiffs' claims were not typical of the class and that the class definition was too broad. The case is ongoing, with discovery and expert testimony scheduled for the fall of"

Reasoning: The summary states that the plaintiffs brought the case against various Illinois state officials, so key point 1 is present. The summary mentions that "the plaintiffs sought declaratory and injunctive relief" and the practices "compelled people with disabilities to enter nursing facilities... to forego ... the opportunity to live in the communities of their choice", so key point 2 is present. The summary does not mention that a consent decree was entered in August 2011, so key point 3 is missing. The summary does not mention that the transition plan was updated in April 2018, so key point 4 is missing. The summary does not mention that monitoring of the transition is ongoing as of November 2018, so key point 5 is missing. Therefore, key points 1 and 2 are present so the recall score is 2.

Output: {{"recall": 2}}

Now, read the provided summary and key points, and evaluate the summary using the rubric. First, think step-by-step and provide your reasoning and assessment on the answer. Please keep your response concise and limited to a single paragraph. Then output your score in the following json format: {{"recall": 2}}.

Key points:
{keypoints}

Summary: "{summary}"
"""

PRECISION_PROMPT_GOVREPORT = """Please act as an impartial judge and evaluate the quality of the provided summary of a government report from U.S. Government Accountability Office (GAO). The summary should discuss one or more of the following: why GAO did this study, what GAO found, and what GAO recommends.

Below is your grading rubric:
Precision:
- Evaluate the provided summary by deciding if each sentence in the provided summary is supported by the information provided in the expert summary. A sentence is considered supported if its major facts align with the information in the expert summary. A sentence is still considered supported even if some of its minor details, such as dates, entity names, or the location, are not explicitly mentioned in the expert summary. A sentence is not supported if its major facts are not mentioned or contradicted in the expert summary. It is also not supported if it introduces new information not present in the expert summary, such as additional analysis or commentary on the story.
- Score: the number of sentences in the provided summary that are supported by the expert summary.
- Examples: use the following examples to guide your evaluation.

Example 1:

Expert summary: <start of summary>Why GAO Did This Study:
The Congressional Budget Office projects that federal deficits will reach $1 trillion in 2020 and average $1.2 trillion per year through 2029, further adding to the more than $16 trillion in current debt held by the public. As a result, Treasury will need to issue a substantial amount of debt to finance government operations and refinance maturing debt. To support its goal to borrow at the lowest cost over time, Treasury must maintain strong demand from a diverse group of investors for Treasury securities.
GAO prepared this report as part of continuing efforts to assist Congress in identifying and addressing debt management challenges. This report (1) identifies factors that affect demand for Treasury securities and (2) examines how Treasury monitors and analyzes information about the Treasury market to inform its debt issuance strategy.
GAO analyzed data on investor holdings of Treasury securities; surveyed a non-generalizable sample of 109 large domestic institutional investors across 10 sectors (67 responded); reviewed Treasury analysis and market research; and interviewed market participants across sectors, experts on foreign investors, and Treasury officials.

What GAO Found:
The large institutional investors GAO surveyed across multiple sectors identified liquidity, depth, and safety as the most important characteristics of Treasury securities. This combination supports reliable demand from different types of investors through changing market conditions. Many investors accept low yields because of these characteristics, keeping the Department of the Treasury's (Treasury) borrowing costs low.
Market participants GAO interviewed and surveyed identified risks that could degrade these key characteristics and reduce future demand:
Debt limit impasses could force Treasury to delay payments on maturing securities and interest, until sufficient funds are available, compromising the safety of Treasury securities.
Unsustainable levels of federal debt could cause investors to demand a risk premium and seek out alternatives to Treasury securities.
A reduced role for the U.S. dollar as the dominant reserve currency could diminish the advantages of holding Treasury securities for foreign investors, particularly foreign government investors who hold large amounts of dollar-denominated assets to assist in managing their exchange rates.
Changes in the Treasury secondary market where securities are traded— including high-frequency trading and a reduced role for broker-dealers who buy and sell for customers—could increase volatility and reduce liquidity.
Treasury regularly makes important issuance decisions—such as what types of securities to issue and in what quantities—to maintain broad-based demand and support its goal of borrowing at the lowest cost over time. Treasury officials said three key inputs support these decisions: market outreach; auction and market metrics (e.g., trading volumes); and analytical models .
However, Treasury has not finalized its policy for systematically conducting bilateral market outreach to ensure a thorough understanding of market demand. Treasury also does not have a policy governing important aspects of its analytical modeling, including following and documenting quality assurance steps to ensure that analytical methods are appropriate and available to future model developers and users. Codifying policies governing key information sources would help ensure that Treasury's decisions are based on the best possible information.

What GAO Recommends:
GAO recommends that Treasury (1) finalize its policy for conducting bilateral market outreach and (2) establish a policy for the documentation and quality assurance of analytical models.
Treasury agreed with these recommendations.<end of summary>

Provided summary: <start of summary>The U.S. Government Accountability Office (GAO) conducted a performance audit from June 2018 to December 2019 to assess the management of federal debt by the Department of the Treasury. The audit aimed to evaluate how Treasury manages its debt to finance the federal deficit and refinances maturing debt while minimizing costs. Treasury issues various types of securities, including Treasury bills, notes, bonds, and inflation-protected securities, with maturities ranging from a few weeks to 30 years, to attract a diverse investor base and maintain a healthy secondary market. The audit found that Treasury's regular and predictable framework for issuing securities supports reliable demand, but changes in market conditions and policies pose risks to the liquidity, depth, and safety of Treasury securities. Treasury uses market outreach, auction and market metrics, and analytical models to inform its debt issuance decisions but lacks policies for bilateral market outreach and quality assurance for analytical models. The report recommends Treasury finalize its market outreach policy and establish a quality assurance policy for analytical models to ensure transparency and appropriate documentation. Treasury agreed with the recommendations and plans to implement them.<end of summary>

Reasoning: Sentence 1 is not supported because the reference doesn't mention specific audit dates or that it was a "performance audit." Sentence 2 is supported as the reference mentions Treasury's "goal to borrow at the lowest cost over time." Sentence 3 is not supported because the reference doesn't list specific security types or maturity ranges. Sentence 4 is supported as the reference identifies liquidity, depth, and safety as important characteristics and mentions risks to them. Sentence 5 is supported as the reference mentions the three key inputs and lack of policies. Sentence 6 is supported as the reference makes the same two recommendations. Sentence 7 is supported as the reference states "Treasury agreed with these recommendations." Therefore, the precision score is 5.

Output: {{"precision": 5, "sentence_count": 7}}


Example 2:

Expert summary: <start of summary>Why GAO Did This Study:
In fiscal year 2011, USAID spent approximately $1.7 billion on food assistance reaching over 46 million people in 48 countries. USAID targets food assistance so that benefits accrue selectively to only a portion of the overall population, typically the most vulnerable. Effective targeting is important to maximize the impact of limited resources, especially as USAID begins to use more nutritious but more costly specialized food products to address hunger and malnutrition among vulnerable groups. GAO was asked to (1) describe in-country factors that USAID and its implementing partners face in targeting vulnerable groups, and (2) examine the extent to which USAID's targeting process supports effective targeting. GAO analyzed program data and documents; interviewed relevant officials; convened a roundtable of food assistance experts and practitioners; and conducted fieldwork in Ethiopia, Guatemala, Sri Lanka, and Zimbabwe.

What GAO Found:
In-country, the U.S. Agency for International Development (USAID) and its implementing partners face a range of factors that, to varying degrees, affect their ability to target food assistance effectively to vulnerable groups. These factors include (1) the quality of data used to identify and reach recipients, (2) host government policies, and (3) sharing of rations among recipients and community members. Targeting effectiveness is reduced when data quality is poor, host government policies cause distortions in program design and implementation, and sharing prevents food rations from being consumed by the intended recipients in the intended amounts. USAID and its implementing partners try to mitigate such challenges by, for example, employing technology to improve data quality, coordinating closely with government officials to foster better relationships, and educating recipients about proper food usage to reduce sharing. In some cases, host governments have facilitated targeting efforts by, for example, establishing national targeting guidelines that set a common standard, or national statistical offices that assist in collecting data. Nevertheless, ensuring that food assistance reaches intended recipients remains difficult.
Weaknesses in the design, monitoring, and evaluation phases of USAID's targeting process hinder targeting effectiveness, although the agency is taking actions to make improvements. In the design phase of the targeting process, USAID does not provide sufficient guidance on whether and how to target specialized food products. Specifically, USAID's guidance on design currently is neither up-to-date nor complete, and does not adequately address key benefits and risks that inform decisions on whether and how to target specialized food products. In USAID's monitoring and evaluation phases, weaknesses limit targeting effectiveness and hinder decision making. USAID currently does not require monitoring of key indicators needed to determine the level of targeting effectiveness. For example, during implementation USAID does not monitor actual recipients in its emergency programs. Furthermore, its evaluations do not systematically address targeting effectiveness. Without adequate guidance, monitoring, and evaluations, USAID cannot ensure targeting effectiveness in its food assistance programs. USAID is taking some steps to improve both guidance and monitoring. For example, USAID is updating guidance and plans to track indicators such as detailed age breakdowns that are key to better understanding targeting effectiveness. However, these steps do not fully address the weaknesses in USAID's targeting process.

What GAO Recommends:
GAO recommends that the Administrator of USAID improve USAID's targeting of specialized food products to vulnerable groups by (1) issuing, as appropriate, improved interim guidance to assist implementing partners in deciding whether and how to target specialized food products; and (2) establishing and reporting program-specific indicators related to targeted vulnerable groups, to assess effectiveness in reaching such groups. USAID agreed with the recommendations and provided examples of recent efforts to address them.<end of summary>

Provided: <start of summary>The report provides an overview of USAID's efforts to improve targeting and effectiveness of food assistance programs, including the use of specialized food products, and the recommendations for improving targeting guidance and evaluation. It highlights the challenges faced in implementing these programs and the need for better guidance and evaluation methods to ensure their success. Meanwhile, the report examines how climate change has significantly impacted food security in recipient countries, creating new challenges for USAID's distribution efforts. It analyzes the cost-effectiveness of different food assistance delivery methods, including direct food provision versus cash transfers and voucher systems. The report discusses the importance of monitoring and evaluating key indicators to assess program effectiveness and identify areas for improvement. The report also recommends establishing a new international coordination body to better align food assistance efforts between USAID and other major global donors.<end of summary>

Reasoning: Sentence 1 is supported as the reference discusses USAID's food assistance targeting and specialized food products. Sentence 2 is supported as the reference mentions challenges like data quality and host government policies affecting implementation. Sentence 3 is not supported because the reference doesn't discuss climate change impacts on food security. Sentence 4 is not supported as the reference doesn't compare cost-effectiveness of different delivery methods like cash transfers versus direct food. Sentence 5 is supported as the reference highlights the importance of monitoring key indicators to assess targeting effectiveness. Sentence 6 is not supported because the reference doesn't recommend establishing any international coordination body. Therefore, the precision score is 3.

Output: {{"precision": 3, "sentence_count": 6}}

Now, read the provided summary and expert summary, and evaluate the summary using the rubric. First, think step-by-step and provide your reasoning and assessment on the answer. Please keep your response concise and limited to a single paragraph. Then output your score in the following json format: {{"precision": 7, "sentence_count": 20}}.

Expert summary: <start of summary>{expert_summary}<end of summary>

Provided summary: <start of summary>{summary}<end of summary>
"""

PRECISION_PROMPT_MULTILEXSUM = """Please act as an impartial judge and evaluate the quality of the provided summary of a civil lawsuit. The summary is based on a set of legal documents, and it should contain a short description of the background, the parties involved, and the outcomes of the case.

Below is your grading rubric:
Precision:
- Evaluate the provided summary by deciding if each sentence in the provided summary is supported by the information provided in the expert summary. A sentence is considered supported if its major facts align with the information in the expert summary. A sentence is still considered supported even if some of its minor details, such as dates, entity names, or the names of laws and previous court cases, are not explicitly mentioned in the expert summary. A sentence is not supported if its major facts are not mentioned or contradicted in the expert summary.
- Score: the number of sentences in the provided summary that are supported by the expert summary.
- Examples: use the following examples to guide your evaluation.

Example 1:

Expert summary: "This lawsuit, brought in the the U.S. District Court for the Central District of California, was filed on June 3, 2020. The plaintiffs were represented by attorneys from the ACLU of Southern California. This lawsuit followed nation-wide protests that occurred in response to the killing of George Floyd by a police officer in Minneapolis. While most protests were peaceful, some ended in violence, property destruction, rioting, and looting. Many cities, including Los Angeles and San Bernardino, issued curfews in an attempt to quell these riots. This action challenged these curfews as violations of free speech and assembly, free movement, due process, and challenged the San Bernardino curfew as a violation of the establishment clause (the San Bernardino curfew included a provision that exempted attendants of religious meetings from the curfew.) The plaintiffs sought injunctive and declaratory relief that would void the curfew and prohibit the cities from enforcing them. The following day, June 4th, 2020, the case was assigned to District Judge Philip S. Gutierre and to Magistrate Judge Pedro V. Castillo. Judge Gutierrez informed the parties that he was part of a mandatory alternative dispute resolution (ADR) program and asked the parties to try to form an agreement before going to trial. On July 7, 2020, the plaintiffs voluntarily dismissed the complaint, citing that fact that the city had rescinded the curfews already and not attempted to reinstate them. The case is now closed."

Provided summary: "In June 2020, Black Lives Matter - Los Angeles and several individuals filed a lawsuit in the U.S. District Court for the Central District of California against Los Angeles Mayor Eric Garcetti, other city officials, and the City of San Bernardino, challenging the constitutionality of curfew orders imposed during protests against police violence. The plaintiffs, represented by the ACLU of Southern California, argued that the curfews violated their First Amendment rights to free speech and assembly, as well as their freedom of movement, by suppressing political protests and other activities. The lawsuit also claimed that the curfews were not narrowly tailored to address any emergency and lacked sufficient notice. However, the plaintiffs voluntarily dismissed the case in July 2020 after the defendants lifted the curfew orders and did not reinstate them in the following weeks."

Reasoning: The first sentence in the provided summary is well supported by the expert summary even though some entity names are not explicitly mentioned. The second sentence is also well supported by the expert summary, as it mentions the ACLU of Southern California and the First Amendment rights. The third sentence is not supported by the expert summary, as it does not mention the lack of narrow tailoring or sufficient notice. The fourth sentence is well supported by the expert summary, as it mentions the voluntary dismissal of the case in July 2020. Therefore, the precision score is 3.

Output: {{"precision": 3, "sentence_count": 4}}


Example 2:

Expert summary: "On August 22, 2007, individuals with disabilities filed a lawsuit under the Americans with Disabilities Act (ADA), the Social Security Act, the Rehabilitation Act, and the Nursing Care Reform Act, against various Illinois state officials in the United States District Court for the Northern District of Illinois.  Plaintiffs, represented by private and public interest counsel, asked the court for declaratory and injunctive relief, claiming that they were institutionalized in a nursing facility even though they were capable of living in a more community-integrated setting with appropriate services.  Plaintiffs claimed that Defendants conditioned receipt of long-term care on remaining in an institutionalized setting, even though it would be less expensive for Plaintiffs to receive appropriate care in the community. The Court (Judge Joan H. Lefkow) certified a class as: \"all Medicaid-eligible adults with disabilities in Cook County, Illinois, who are being, or may in the future be, unnecessarily confined to nursing facilities and who, with appropriate supports and services, may be able to live in a community setting.\"  71 Fed.R.Serv.3d 1089. At a status hearing on January 7, 2011, the parties advised Magistrate Judge Maria Valdez that they could conclude settlement discussions without further assistance from the court. On Aug. 29, 2011, the parties jointly moved for the court to approve the consent decree they had agreed upon.  The court held a fairness hearing on Dec. 20, 2011, and ultimately accepted the decree. The consent decree established benchmarks for moving specific numbers of class members out of nursing facilities and into community-based settings. Over the course of the first two-and-a-half years, the decree compelled the state to move 1,100 class members into the community. It also required the state to provide up to $10 million in housing assistance to support the first group of transitioned adults. The decree also compelled the state to develop services needed to adequately support class members who choose to live in the community. It established a monitor to ensure compliance with the decree, and granted $1.2 million in attorneys' fees. The court approved an updated plan following the parties' cross-motion to enter into a cost-neutral plan and supplement and amend the December 2011 consent decree on November 16, 2016. The plan included the transition of class members into community-based settings, and continued evaluations and service plans for the class members. The court retained jurisdiction to oversee the full implementation of the plan. The court approved an updated plan on April 5, 2018. Monitoring by the court appointed monitor (Gail P. Hutchings) is ongoing as of May 20, 2020."

Provided: "Five Medicaid-eligible individuals with disabilities, Lenil Colbert, Constance Gray, Ernest Reeves, Kenya Lyles, and Dwight Scott, filed a class action lawsuit in the United States District Court for the Northern District of Illinois against Illinois state officials, including Governor Rod R. Blagojevich, Secretary of the Illinois Department of Human Services Carol L. Adams, Director of the Illinois Department of Healthcare and Family Services Barry S. Maram, and Director of the Illinois Department of Public Health Eric E. Whitaker. The plaintiffs alleged that the defendants' policies and practices effectively compel people with disabilities to enter nursing facilities in order to receive long-term care and assistance, forcing them to forego liberty, privacy, independence, and the opportunity to live in the communities of their choice. The plaintiffs sought declaratory and injunctive relief, as well as attorneys' fees and costs, under the Americans with Disabilities Act, the Rehabilitation Act of 1973, the Social Security Act, and the Nursing Home Reform Act. The case was certified as a class action on behalf of all Medicaid-eligible adults with disabilities in Cook County, Illinois, who are being, or may in the future be, unnecessarily confined to nursing facilities and with appropriate supports and services may be able to live in a community setting. The defendants denied the allegations and argued that the plaintiffs' claims were not typical of the class and that the class definition was too broad. The case is ongoing, with discovery and expert testimony scheduled for the fall of"

Reasoning: The first sentence is supported as the expert summary states that "individuals with disabilities filed a lawsuit... against various Illinois state officials", even though some minor details (the name of the people) are not mentioned. The second sentence is not supported as the expert summary does not discuss how the plaintiffs alleged that the defendants' policies forced them to forego their rights. The third sentence is mostly supported as the expert summary mentions that the plaintiffs sought declaratory and injunctive relief, but it does not mention the attorneys' fees and costs, which are minor details. The fourth sentence is supported as the expert summary mentions the class action certification by the court. The fifth sentence is not supported as the expert summary does not mention the defendants' denial of the allegations. The sixth sentence is not supported as the expert summary states that the case was settled through the consent decree, while the provided summary states that the case is ongoing. Therefore, the precision score is 3.

Output: {{"precision": 2, "sentence_count": 6}}

Now, read the provided summary and expert summary, and evaluate the summary using the rubric. First, think step-by-step and provide your reasoning and assessment on the answer. Please keep your response concise and limited to a single paragraph. Then output your score in the following json format: {{"precision": 2, "sentence_count": 6}}.

Expert summary: "{expert_summary}"

Provided summary: "{summary}"
"""

JUDGE_PROMPTS: dict[str, dict[str, str]] = {
    "govreport": {"fluency": FLUENCY_PROMPT_GOVREPORT, "precision": PRECISION_PROMPT_GOVREPORT,
                  "recall": RECALL_PROMPT_GOVREPORT},
    "multilexsum": {"fluency": FLUENCY_PROMPT_MULTILEXSUM, "precision": PRECISION_PROMPT_MULTILEXSUM,
                    "recall": RECALL_PROMPT_MULTILEXSUM},
}


def judge_prompts(dataset: Literal["govreport", "multilexsum"], summary: str, reference: str,
                  claims: Sequence[str]) -> dict[str, str]:
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
