"""MMLongBench-Doc's official scorer (`eval/eval_score.py`, mayubo2333/MMLongBench-Doc @d73f0dc), line by line, quirks
kept:

- `get_clean_string` strips nothing of "mile", "miles" or "million" (its `rstrip` results are dropped);
- Int: `int(gt), int(float(pred))` in one tuple, so a gold that is not an integer leaves `gt` a string and the
  score False, and an empty gold matches any prediction that fails to parse (`"" == ""`);
- Float: within 1% (`isclose(rel_tol=0.01)`) or equal after rounding to the shorter of the two precisions (at least
  2), against gold/100, gold and gold*100; a gold that does not parse as a number raises (`is_float_equal`'s first
  line is outside its try);
- Str and None: ANLS (threshold 0.5, the distance on the cleaned strings, the length on their upper-cased forms)
  unless the gold looks like a URL, a file name, "page...", a phone number, a time, a date or an e-mail, which need
  exact equality;
- List: both sides read as lists where they start with "[", unequal lengths score 0; sorted cleaned items joined by
  "-" compared exactly if the first gold item is a number or an exact-match kind, else the least item ANLS; an
  empty gold list raises (`gt[0]`).

One fix, named apart: the official code reads a list with `eval`, which would run a model's reply as Python; here
`ast.literal_eval` reads it, which agrees wherever the reply is a literal and raises (as `eval` does on a malformed
one) where it is not. A score that raises is 0, as `run_lvlm.py` records it (`except: score = 0.0`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from math import isclose
from typing import Any

NOT_ANSWERABLE = "Not answerable"
FAILED_TO_EXTRACT = "Failed to extract"


def levenshtein_distance(s1: str, s2: str) -> int:
    if len(s1) > len(s2):
        s1, s2 = s2, s1
    distances = list(range(len(s1) + 1))
    for i2, c2 in enumerate(s2):
        distances_ = [i2 + 1]
        for i1, c1 in enumerate(s1):
            if c1 == c2:
                distances_.append(distances[i1])
            else:
                distances_.append(1 + min((distances[i1], distances[i1 + 1], distances_[-1])))
        distances = distances_
    return distances[-1]


def anls_compute(groundtruth: str, prediction: str, threshold: float = 0.5) -> float:
    dist = levenshtein_distance(groundtruth, prediction)
    length = max(len(groundtruth.upper()), len(prediction.upper()))
    value = 0.0 if length == 0 else float(dist) / float(length)
    anls = 1.0 - value
    if anls <= threshold:
        anls = 0.0
    return anls


def _precision(value: float) -> int:
    text = str(value)
    return len(text.split(".")[-1]) if "." in text else 3


def is_float_equal(reference: Any, prediction: Any, include_percentage: bool = False, is_close: bool = False) -> bool:
    reference = float(str(reference).strip().rstrip("%").strip())  # outside the try, as official: may raise
    try:
        prediction = float(str(prediction).strip().rstrip("%").strip())
    except ValueError:
        return False
    gt_result = [reference / 100, reference, reference * 100] if include_percentage else [reference]
    for item in gt_result:
        try:
            if is_close and isclose(item, prediction, rel_tol=0.01):
                return True
            precision = max(min(_precision(prediction), _precision(item)), 2)
            if round(prediction, precision) == round(item, precision):
                return True
        except (OverflowError, ValueError):  # round() of inf or nan
            continue
    return False


def get_clean_string(s: Any) -> str:
    s = str(s).lower().strip()
    # (official: `s.rstrip("mile")`, "miles" and "million" here, their results dropped: nothing is stripped)
    s = re.sub(r"\s*\([^)]*\)", "", s).strip()  # parentheses
    s = re.sub(r"^['\"]|['\"]$", "", s).strip()  # quotes
    s = s.strip().lstrip("$").strip()
    s = s.strip().rstrip("%").strip()
    return s


def is_exact_match(s: str) -> bool:
    return bool(
        "https://" in s
        or s.endswith(".py")
        or s.endswith("ipynb")
        or s.startswith("page")
        or re.fullmatch(r"\b\d+(-\d+|\s\d+)?\b", s)  # telephone number
        or "a.m." in s
        or "p.m." in s
        or re.fullmatch(r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b", s)  # YYYY-MM-DD
        or re.fullmatch(r"\b\d{4}[-\s]\d{2}\b", s)  # YYYY-MM
        or re.fullmatch(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", s)  # e-mail
    )


def isfloat(num: str) -> bool:
    try:
        float(num)
        return True
    except ValueError:
        return False


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str) and value.startswith("["):
        value = ast.literal_eval(value)  # official: eval (the named fix)
    return value if isinstance(value, list) else [value]


def eval_score(gt: Any, pred: Any, answer_type: str) -> float:
    """The official score of one extracted answer; raises where the official function raises."""
    if answer_type == "Int":
        try:
            gt, pred = int(gt), int(float(pred))
        except (ValueError, TypeError, OverflowError):
            pred = ""
        return float(gt == pred)
    if answer_type == "Float":
        try:
            gt = float(get_clean_string(str(gt)))
            pred = float(get_clean_string(str(pred)))
        except ValueError:
            pred = ""
        return float(is_float_equal(gt, pred, include_percentage=True, is_close=True))
    if answer_type in ("Str", "None"):
        gt, pred = get_clean_string(gt), get_clean_string(pred)
        return float(gt == pred) if is_exact_match(gt) else float(anls_compute(gt, pred))
    gts, preds = _as_list(gt), _as_list(pred)
    if len(gts) != len(preds):
        return 0.0
    gts = sorted(get_clean_string(a) for a in gts)
    preds = sorted(get_clean_string(a) for a in preds)
    if isfloat(gts[0]) or is_exact_match(gts[0]):
        return float("-".join(gts) == "-".join(preds))
    return float(min(anls_compute(g, p) for g, p in zip(gts, preds, strict=False)))


def safe_score(gt: Any, pred: Any, answer_type: str) -> float:
    """`eval_score`, 0 where it raises (`run_lvlm.py`'s `except: score = 0.0`)."""
    return scored(gt, pred, answer_type)[0]


def scored(gt: Any, pred: str, answer_type: str) -> tuple[float, str]:
    """The row's score and prediction as `run_lvlm.py` records them: its `try` parses and scores, and its bare
    `except` sets both `pred = "Failed to extract"` and `score = 0.0`, whether the parse failed (no "Extracted
    answer:", `parse_extraction`'s `FAILED_TO_EXTRACT`: never scored) or `eval_score` raised. Named departure: an
    extractor whose answer is the very words "Failed to extract" is taken for a failed parse (the official run would
    score those words)."""
    if pred == FAILED_TO_EXTRACT:
        return 0.0, FAILED_TO_EXTRACT
    try:
        return eval_score(gt, pred, answer_type), pred
    except Exception:  # noqa: BLE001 - the official bare except
        return 0.0, FAILED_TO_EXTRACT


def parse_extraction(reply: str) -> str:
    """The prediction in the extractor's reply (`run_lvlm.py`): between "Extracted answer:" and "Answer format:",
    stripped; "Failed to extract" where the reply has no "Extracted answer:"."""
    try:
        return reply.split("Answer format:")[0].split("Extracted answer:")[1].strip()
    except IndexError:
        return FAILED_TO_EXTRACT


def eval_acc_and_f1(samples: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """The official accuracy and generalized F1 over samples with `score`, `answer` and `pred`: recall over the
    answerable questions, precision over the questions whose prediction is not "Not answerable"."""
    evaluated = [s for s in samples if "score" in s]
    if not evaluated:
        return 0.0, 0.0
    acc = sum(s["score"] for s in evaluated) / len(evaluated)
    answerable = [s for s in evaluated if s["answer"] != NOT_ANSWERABLE]
    predicted = [s for s in evaluated if s["pred"] != NOT_ANSWERABLE]
    if not answerable or not predicted:
        return acc, 0.0
    recall = sum(s["score"] for s in answerable) / len(answerable)
    precision = sum(s["score"] for s in answerable) / len(predicted)
    f1 = 2 * recall * precision / (recall + precision) if (recall + precision) > 0.0 else 0.0
    return acc, f1
