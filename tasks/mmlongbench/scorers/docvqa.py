"""DocVQA's scorer (MMLongBench-Doc, LongDocURL, SlideVQA: official `eval.py` `docqa` post-process): the
answer line cleaned, compared by the gold's format (integer, float with tolerance, string, list)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

from tasks.mmlongbench.scorers.common import Parser, normalize_answer, parse_output

# --------------------------------------------------------------------------------------- DocVQA

# Official `get_docqa_clean_string` suffix order: each is removed once, in turn, if the string ends
# with it, so "12 mm" -> "12" but also "item" -> "ite" ("m").
_DOCVQA_SUFFIXES = (
    "kg",
    "meters",
    "acres",
    "minutes",
    "miles",
    "mile",
    "feet",
    "million",
    "thousand",
    "billion",
    "mm",
    "m",
)
_NUMBER = re.compile(r"(-?\d+(\.\d*)?|-?\.\d+)")
_EXACT_MATCH_GOLD = tuple(
    re.compile(p)
    for p in (
        r"https://",
        r".*\.(py|ipynb)$",
        r"^page",
        r"^\d+(-\d+|\s\d+)?$",
        r"(a\.m\.|p\.m\.)",
        r"^\d{4}[-/\s]\d{1,2}[-/\s]\d{1,2}$",
        r"^\d{1,2}[-/\s]\d{1,2}[-/\s]\d{2,4}$",
        r"^\d{4}[-/\s]\d{1,2}$",
        r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
    )
)
DOCVQA_FORMATS = ("Integer", "Float", "String", "None", "List")


def docvqa_clean(value: object) -> str:
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
        numbers = docvqa_numbers(docvqa_clean(str(prediction)))
        return float(any(_percent_tolerant_close(target, n) for n in numbers))
    if answer_format in ("String", "None"):
        if docvqa_needs_exact_match(gold):
            return float(gold in prediction)
        return token_f1(prediction, gold)
    if answer_format == "List":
        return _docvqa_list_score(json.loads(gold), prediction)
    raise KeyError(f"Wrong answer type: {answer_format!r}")


def _docvqa_list_score(items: list[Any], prediction: str) -> float:
    mergeable = [
        isinstance(item, str) and docvqa_value_type(item) == "String" and not docvqa_needs_exact_match(item)
        for item in items
    ]
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


def score_docvqa(
    generated: str, prefix: str, gold_answer: str, answer_format: str, parse: Parser = parse_output
) -> float:
    """DocVQA score of one row (MMLongBench-Doc, LongDocURL, SlideVQA), official `dcoqa_post_process`:
    `docvqa_score_parsed` on the PARSED line only (no max with the raw text). Official falls back to
    the raw output when parsing returns None, which never happens, so only the prefix's own line
    counts: "Answer:\\n42" scores against "".
    """
    return docvqa_score_parsed(gold_answer, parse(prefix + generated, prefix), answer_format)
