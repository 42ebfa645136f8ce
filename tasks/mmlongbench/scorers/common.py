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


# The paper's score of the API models: `eval_api.py:97-104` (26197d2; `eval_api_batch.py:115-121` the same) adds a row's
# metrics to the file's average only where its `parsed_output` is not "" (an empty answer, an API call that failed
# after its retries, a blocked answer: `openai_model.py:160-167` and `gemini.py:160-161` give "" for each). The
# strict `score` counts every scored row; this one only the rows eval_api.py kept.
NONEMPTY_METRIC = "score_nonempty"
# Visual Haystack's `vh_post_process` (data.py:181-189) records the prefixed raw output itself as `parsed_output`:
# "Answer:" + "" is never "", so eval_api.py keeps every VH row.
UNPARSED_DATASETS = frozenset({"vh_single", "vh_multi"})


def parsed_answer_is_empty(dataset: str, generated: str, prefix: str, parse: Parser = parse_output) -> bool:
    """Whether eval_api.py left the row out of its averages: its `parsed_output`, the official parse of the prefixed
    output (`eval_api.py:91-95`: `system_template + output`, then `post_process`), is "". With the paper's line parse
    that is the rest of the prefix's line being blank, so `""`, `"  "`, `"Answer:"` and `"\\nParis"` (the answer
    on the next line) are all left out; `"Paris"` and `" Answer: Paris"` are kept. VH rows never are."""
    return dataset not in UNPARSED_DATASETS and parse(prefix + generated, prefix) == ""


def with_nonempty(
    scores: dict[str, float], dataset: str, generated: str, prefix: str, parse: Parser = parse_output
) -> dict[str, float]:
    """`scores` with `NONEMPTY_METRIC` beside `score`, where the row has a score eval_api.py would have kept."""
    if "score" in scores and not parsed_answer_is_empty(dataset, generated, prefix, parse):
        return {**scores, NONEMPTY_METRIC: scores["score"]}
    return scores
