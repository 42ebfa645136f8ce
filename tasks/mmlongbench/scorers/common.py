"""What the MMLongBench scorers share (official `utils.py` / `eval.py` at 26197d2): the answer line after the
prefilled prefix, SQuAD-style normalisation, gold lists, the max over the raw and the parsed output, and a
dataset's score as a mean x 100."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Sequence
from typing import Any


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


def flatten_golds(golds: str | Sequence[Any]) -> list[str]:
    # Official `drqa_metric_max_over_ground_truths`: a str is one gold; if the first gold is a list,
    # every gold is iterated as a list of aliases.
    if isinstance(golds, str):
        return [golds]
    if len(golds) == 0:
        raise ValueError("no gold answers (official indexes golds[0] and raises IndexError)")
    if isinstance(golds[0], list):
        return [alias for group in golds for alias in group]
    return list(golds)


Doc = dict[str, Any]  # a row as a task hook gets it: the data contract's columns and MMLongBench's
Parser = Callable[[str, str], str]  # (output, prefix) -> the parsed answer: the paper's `parse_output` or V1.1's


def max_over_raw_and_parsed(
    generated: str, prefix: str, score_text: Callable[[str], float | bool], parse: Parser = parse_output
) -> float:
    # Official `default_post_process`: the metric on the prefixed output and on its parsed answer, max.
    output = prefix + generated
    return float(max(score_text(output), score_text(parse(output, prefix))))


def mean_percent(row_scores: Sequence[float]) -> float:
    """A file's score: mean of its rows x 100 (`eval.py` `averaged_metrics`). Empty -> ValueError."""
    if len(row_scores) == 0:
        raise ValueError("no scored rows")
    return math.fsum(row_scores) / len(row_scores) * 100
