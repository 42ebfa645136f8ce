"""MileBench's scorers, deciding exactly as the official `evaluate.py` (MileBench/MileBench @9583e1f, class
`Eval`) decides, quirks included; the one fix is named apart (`accuracy_empty_is_wrong`).

Every answer and gold goes through the official normalisation `process` first:

- newlines and tabs become spaces, then the text is stripped;
- punctuation: each of ``; / [ ] " { } ( ) = + \\ _ - > < @ ` , ? !`` is deleted when it stands next to a space
  anywhere in the (unprocessed) text, or when the text has a comma between two digits anywhere, and becomes a
  space otherwise;
- periods: the official pattern `(?!<=\\d)(\\.)(?!\\d)` removes a period unless a digit follows it (its
  "look-behind" is a look-ahead for the literal `<=digit`, so it never holds), and because `re.UNICODE` is
  passed where `sub` takes its `count`, at most **32** periods are removed (the 33rd on stays, which changes
  ROUGE-L: the `rouge` package splits sentences at periods);
- `'` then `"` stripped from both ends, stripped again, lower-cased.

Decisions, by subset family (the official dispatch: needle and MMCoQA by name, then the question type):

- **multiple choice** (`match_choice` on the processed answer, options keyed A..Z, AA..AZ, BA..): an empty
  answer is option **C**; else the first regex match of "key option" (lower-cased) anywhere in the answer gives
  the match's first character upper-cased; else the first match of an option without spaces in the answer
  without spaces gives that option's key (compared with the *escaped* option, so an option with a regex
  character never matches here); else a 1-2 character answer that is a key; else every character of the
  answer that is a key, upper-cased and concatenated ("bad" -> "BAD", wrong). A pattern that does not
  compile returns the answer itself. Correct iff the result equals the gold's key.
- **needle** (text and image needle): the processed gold is one of the processed answer's whitespace tokens.
- **substring** (MMCoQA): the processed gold occurs anywhere in the processed answer.
- **ROUGE-L** (Spot-the-Diff, CLEVR-Change, IEdit, ALFRED): the `rouge` package (1.0.1, as the official
  requirements pin; not `rouge-score`) `Rouge().get_scores(answer, gold)[0]["rouge-l"]["f"]` on the processed
  texts; an empty processed answer scores 0. Where the package raises "Hypothesis is empty." (an answer of
  periods only) the official evaluation stops with that error; here the sample scores 0.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence

from builders.milebench.gold import gold_index, process

OFFICIAL_COMMIT = "9583e1f"

_REGEX_SPECIALS = ("\\", ".", "^", "$", "*", "+", "?", "{", "}", "[", "]", "|", "(", ")")
EMPTY_ANSWER_OPTION = "C"


def option_key(index: int) -> str:
    """The official `char`: A..Z, then AA..AZ, then BA.. (the third range repeats from BA for index >= 52)."""
    if index < 26:
        return chr(65 + index)
    if index < 52:
        return "A" + chr(65 + index - 26)
    return "B" + chr(65 + index - 52)


def _escaped(option: str) -> str:
    """An option normalised and escaped as the official `preprocess_option_string` escapes it."""
    text = process(option)
    for char in _REGEX_SPECIALS:
        if char in text:
            text = text.replace(char, "\\" + char)
    return text


def match_choice(text: str, options: Mapping[str, str]) -> str:
    """The official `match_choice`: the option key(s) a processed answer is read as (see the module doc)."""
    if text == "":
        return EMPTY_ANSWER_OPTION
    try:
        with_keys = "|".join(_escaped(f"{key} {value}") for key, value in options.items())
        found = re.search(f"({with_keys})", text, re.S)
        if found:
            return found.group(0)[0].upper()
        without_spaces = {key: _escaped(value).replace(" ", "") for key, value in options.items()}
        found = re.search(f"({'|'.join(without_spaces.values())})", text.replace(" ", ""), re.S)
        if found:
            for key, value in without_spaces.items():
                if found[0].strip() == value:
                    return key.upper()
        if len(text) in (1, 2) and text.upper() in options:
            return text.upper()
    except Exception:  # official: any exception (a pattern that does not compile) returns the answer itself
        return text
    return "".join(char.upper() for char in text if char.upper() in options)


def multiple_choice(response: str, answer: str, choices: Sequence[str]) -> tuple[int, str]:
    """(1 or 0, the key(s) the answer was read as), as `judge_multi_choice` decides."""
    index = gold_index(answer, choices)
    if index is None:
        raise ValueError(f"the gold {answer!r} is not among the options {list(choices)!r}")
    options = {option_key(i): process(str(c)) for i, c in enumerate(choices)}
    extracted = match_choice(process(response), options)
    return int(extracted == option_key(index)), extracted


def multiple_choice_empty_is_wrong(response: str, answer: str, choices: Sequence[str]) -> int:
    """The corrected reading: an answer that normalises to nothing is wrong, not option C."""
    if process(response) == "":
        return 0
    return multiple_choice(response, answer, choices)[0]


def needle(response: str, answer: str) -> int:
    """Text and image needle: the processed gold is a whitespace token of the processed answer."""
    return int(process(answer) in process(response).split())


def substring(response: str, answer: str) -> int:
    """MMCoQA: the processed gold occurs in the processed answer."""
    return int(process(answer) in process(response))


def rouge_l_f(response: str, answer: str) -> float:
    """ROUGE-L F of the processed answer against the processed gold, by the `rouge` package (1.0.1)."""
    from rouge import Rouge

    gold = process(answer)
    if gold == "":
        raise ValueError(f"the gold {answer!r} normalises to nothing (the official scorer asserts it does not)")
    hypothesis = process(response)
    if hypothesis == "":
        return 0.0
    # The package's LCS backtracking recurses once per word of both texts; a long answer would exceed Python's
    # default limit where the official run (shorter answers) did not.
    depth = len(hypothesis.split()) + len(gold.split()) + 200
    limit = sys.getrecursionlimit()
    if depth > limit:
        sys.setrecursionlimit(depth)
    try:
        return float(Rouge().get_scores(hypothesis, gold)[0]["rouge-l"]["f"])
    except ValueError as err:
        if "Hypothesis is empty" in str(err):
            return 0.0
        raise
    finally:
        sys.setrecursionlimit(limit)
