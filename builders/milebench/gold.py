"""MileBench's official normalisation of answers, golds and options (`Eval.process` of `evaluate.py`,
MileBench/MileBench @9583e1f) and the gold option it finds: the builder keeps only the multiple-choice records whose
gold the official scorer can find, and the scorer (`tasks/milebench/scoring.py`, whose docstring spells the rules
out) decides with the same functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_PUNCTUATION = (
    ";",
    "/",
    "[",
    "]",
    '"',
    "{",
    "}",
    "(",
    ")",
    "=",
    "+",
    "\\",
    "_",
    "-",
    ">",
    "<",
    "@",
    "`",
    ",",
    "?",
    "!",
)
_COMMA_BETWEEN_DIGITS = re.compile(r"(\d)(\,)(\d)")
_PERIOD = re.compile(r"(?!<=\d)(\.)(?!\d)")
PERIODS_REMOVED_AT_MOST = int(re.UNICODE)  # the flag's value, 32, is what the official call passes as `count`


def punctuation(text: str) -> str:
    """The official `processPunctuation`."""
    out = text
    digits_comma = _COMMA_BETWEEN_DIGITS.search(text) is not None
    for mark in _PUNCTUATION:
        if digits_comma or mark + " " in text or " " + mark in text:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD.sub("", out, count=PERIODS_REMOVED_AT_MOST)


def process(text: str) -> str:
    """The official normalisation of answers, golds and options (`Eval.process`)."""
    text = text.replace("\n", " ").replace("\t", " ").strip()
    text = punctuation(text)
    return text.strip("'").strip('"').strip().lower()


def gold_index(answer: str, choices: Sequence[str]) -> int | None:
    """The gold's option as the official scorer finds it (the first processed option equal to the processed
    gold), or None when there is none (where the official scorer's assertion fails)."""
    processed = [process(str(c)) for c in choices]
    gold = process(str(answer))
    return processed.index(gold) if gold in processed else None
