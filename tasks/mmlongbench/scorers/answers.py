"""Short-answer scorers of MMLongBench (official `eval.py` post-processes): SubEM (VRAG, MM-NIAH retrieval and
reasoning in text), multiple choice (MM-NIAH in image), needle counts (MM-NIAH counting) and ICL class labels."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tasks.mmlongbench.scorers.common import (
    Parser,
    flatten_golds,
    max_over_raw_and_parsed,
    normalize_answer,
    normalize_answer_keep_punctuation,
    parse_output,
)

# --------------------------------------------------------------------------------------- SubEM


def sub_em(prediction: str, golds: str | Sequence[Any]) -> float:
    """Substring exact match: 1.0 if any normalized gold is a substring of the normalized prediction.

    Official `substring_exact_match_score` maxed over golds. Edge cases, as official: a gold that
    normalizes to "" (e.g. "The", "!") matches everything; matching is on characters, not words
    ("par" is in "paris"); golds may be a str, a list, or a list of alias lists (flattened).
    """
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(gold) in pred for gold in flatten_golds(golds)))


def score_sub_em(generated: str, prefix: str, golds: str | Sequence[Any], parse: Parser = parse_output) -> float:
    """SubEM of one row (VRAG, MM-NIAH-Ret (T), MM-NIAH-Reason (T)): max over the raw prefixed output
    and its parsed line (`default_post_process`, metrics="sub_em").

    Only the raw text can match a gold on a later line (`" I think\\nParis"`); the prefix's own word
    is part of the raw text ("Answer:" matches the gold "answer")."""
    return max_over_raw_and_parsed(generated, prefix, lambda text: sub_em(text, golds), parse)


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


def score_mc(generated: str, prefix: str, gold: int, parse: Parser = parse_output) -> float:
    """MC accuracy of one row (MM-NIAH-Ret (I), MM-NIAH-Reason (I)): `choice_index == gold`, max over
    raw and parsed (`default_post_process`, metrics="mc_acc").

    The official data holds the gold as the option's 0-based int index (`int(choice == answers)`
    compares it with an int; a letter gold would always score 0, and the paper's MC scores are not
    0). Because of the max, an output whose raw and parsed readings differ scores if either is
    right: "Answer: Based on the images, C" reads B raw (rule 2) and C parsed (rule 3).
    """
    return max_over_raw_and_parsed(generated, prefix, lambda text: choice_index(text) == gold, parse)


# ---------------------------------------------------------------------------------------- count

_INT_LIST = re.compile(r"\[[\d\s,]+\]")
_ANY_BRACKETS = re.compile(r"\[.*?\]", re.DOTALL)


def _int_castable(items: list[Any], dropped: tuple[type[Exception], ...] = (Exception,)) -> list[int]:
    # Official `turn_int_list`: keep what int() accepts, so 2.7 -> 2, "3" -> 3, true -> 1.
    kept = []
    for item in items:
        try:
            kept.append(int(item))
        except dropped:  # official: bare except (None, lists, nan, inf, "x" are dropped)
            continue
    return kept


def count_list(text: str, dropped: tuple[type[Exception], ...] = (Exception,)) -> list[int]:
    """Needle counts as official `extract_cnt_list`, on `normalize_answer_keep_punctuation(text)`.

    1. The last `[d, d, ...]` (digits, spaces, commas only) parsed as JSON; if that is not valid
       JSON ("[1 2]", "[1,]", "[01, 2]") fall through.
    2. The last non-greedy `[...]`, JSON-parsed, keeping the int()-castable items
       ("[1, two, 3]" is not JSON and falls through; "[1.9, \\"2\\"]" -> [1, 2]); invalid JSON falls
       through.
    3. Every run of digits in the text ("3 in total, 2 images" -> [3, 2]); none -> [].
    `dropped`: the errors of int() that drop an item (the paper's bare `except`; VLMEvalKit's port catches only
    TypeError and ValueError, `mmlongbench_metrics.py:160`, so an infinite count raises OverflowError there).
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
            return _int_castable(json.loads(bracketed[-1]), dropped)
        except json.JSONDecodeError:
            pass
    return [int(digits) for digits in re.findall(r"\d+", text)]


def score_count(generated: str, prefix: str, gold_counts: Sequence[int], parse: Parser = parse_output) -> float:
    """Total-count accuracy of one row (MM-NIAH-Count (T)/(I); official metric name `soft_acc`):
    `sum(count_list(text)) == sum(gold_counts)`, max over raw and parsed.

    Only totals are compared, so "[2, 1]" matches the gold [1, 2] and "[3]" does too; no list
    (sum 0) matches an all-zero gold.
    """
    total = sum(gold_counts)
    return max_over_raw_and_parsed(generated, prefix, lambda text: sum(count_list(text)) == total, parse)


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


def score_icl(generated: str, prefix: str, gold_label: int, parse: Parser = parse_output) -> float:
    """Classification accuracy of one row (the four ICL datasets): `class_label == gold_label`, max
    over raw and parsed (`default_post_process`, metrics="cls_acc"). The raw text starts with the
    prefix `label:`, so rule 1 reads the first `label: <digits>` anywhere in the output, while the
    parsed line only sees the first line."""
    return max_over_raw_and_parsed(generated, prefix, lambda text: class_label(text) == gold_label, parse)
