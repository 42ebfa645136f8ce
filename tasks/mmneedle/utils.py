"""MMNeedle scoring, reproducing the official `evaluate.py` (K = 1) and `evaluate_multi.py` (K > 1)
of Wang-ML-Lab/multimodal-needle-in-a-haystack exactly, quirks included, plus separately named
lenient variants and diagnostics.

Ground truth is the dataset's `answer` column: `"5, 2, 2"`, `"1, 2, 8; 10, 3, 5"`, `"-1"`,
`"-1; -1"`. The official response files store a negative as `"0, 0, 0"` (per needle); where that
matters (the index field of a negative) it is reproduced below.

Refusals and provider errors never reach these functions: the harness excludes them from the
denominators and counts them, as the paper does. An empty string is an answer (a wrong one).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

NEGATIVE = "-1"

# --------------------------------------------------------------------------- official parsing


def official_normalize(response: str) -> str:
    """`pred.replace('\\n', '').strip().strip('.').strip()`: the official clean-up.

    Newlines are deleted (not turned into spaces), then surrounding whitespace and periods go.
    `"1, 2, 3."` -> `"1, 2, 3"`; `"1,\\n 2, 3"` -> `"1, 2, 3"`; `" .-1. "` -> `"-1"`.
    """
    return response.replace("\n", "").strip().strip(".").strip()


def official_single(response: str, answer: str) -> dict[str, bool]:
    """K = 1, as `evaluate.py`: existence, index and exact correctness of one answer.

    - exact: whole-string equality after `official_normalize` (`"1,2,3"` and `"(1, 2, 3)"` fail).
    - index: the text before the first `", "` equals the gold index (`"1,2,3"` fails: its first
      field is the whole string). On a negative the official gold index is `"0"`.
    - existence: on a negative only exactly `"-1"` is right (`"-1, -1, -1"` is not); on a
      positive anything but `"-1"` is right, including the empty string and gibberish.
    """
    pred = official_normalize(response)
    negative = answer == NEGATIVE
    gt_index = "0" if negative else answer.split(", ")[0]
    pred_index = pred.split(", ")[0]
    return {
        "existence": (pred == NEGATIVE) if negative else (pred != NEGATIVE),
        "index": gt_index == pred_index,
        "exact": answer == pred,
    }


def negative_strings(k: int) -> frozenset[str]:
    """The five answers `evaluate_multi.py` accepts as "no needle" for K needles.

    K = 2: `-1`, `-1; -1`, `-1, -1`, `-1, -1, -1; -1, -1, -1`, `-1-1`.
    """
    return frozenset(
        {
            NEGATIVE,
            NEGATIVE + "; -1" * (k - 1),
            NEGATIVE + ", -1" * (k - 1),
            "-1, -1, -1" + "; -1, -1, -1" * (k - 1),
            NEGATIVE * k,
        }
    )


def official_multi(response: str, answer: str, k: int) -> dict[str, Any]:
    """K > 1, as `evaluate_multi.py`.

    The answer is split on `"; "` exactly (`"1, 2, 3;4, 5, 6"` is ONE part), each part stripped
    and the parts re-joined with `"; "`, so `"1, 2, 3 ;  4, 5, 6"` becomes `"1, 2, 3; 4, 5, 6"`.
    - exact: the re-joined answer equals the gold string (all needles, in caption order).
    - index: the list of per-part first fields equals the gold list (same length and order).
    - existence: on a negative the answer must be one of `negative_strings(k)`; on a positive it
      must not be.
    - individual: over the first min(K, #parts) positions, how many index fields / whole parts
      match, and that count of compared positions (the official denominator: a truncated
      answer shrinks it instead of counting missing needles wrong).
    - first: the first part's index field / the whole first part against the first needle's
      (`first_index_match`, `first_exact_match`); the answer always has a first part, so every
      sample counts, and `"1, 2, 3;4, 5, 6"` (one part) is first-index right against `"1, 2, 3; ..."`.
    """
    pred = official_normalize(response)
    negative = answer == "; ".join([NEGATIVE] * k) or answer == NEGATIVE
    gt_split = ["0, 0, 0"] * k if negative else answer.split("; ")
    gt_index = [g.split(", ")[0] for g in gt_split]
    gt = NEGATIVE if negative else answer
    pred_split = [p.strip() for p in pred.split("; ")]
    pred = "; ".join(pred_split)
    pred_index = [p.split(", ")[0] for p in pred_split]
    compared = min(len(gt_index), len(pred_index))
    negatives = negative_strings(len(gt_index))
    return {
        "existence": (pred in negatives) if gt == NEGATIVE else (pred not in negatives),
        "index": gt_index == pred_index,
        "exact": gt == pred,
        "individual_index": sum(gt_index[i] == pred_index[i] for i in range(compared)),
        "individual_exact": sum(gt_split[i] == pred_split[i] for i in range(compared)),
        "compared": compared,
        "first_index": gt_index[0] == pred_index[0],
        "first_exact": gt_split[0] == pred_split[0],
        "parts": pred_split,
    }


def format_valid(response: str, k: int) -> bool:
    """Whether the normalized answer has the requested shape: K = 1 `"m, r, c"` or `"-1"`;
    K > 1 one of the accepted all-negative strings, or exactly K `"; "`-joined parts each
    `"m, r, c"` or `"-1"`."""
    pred = official_normalize(response)
    item = r"(?:\d+, \d+, \d+|-1)"
    if k == 1:
        return re.fullmatch(item, pred) is not None
    pred = "; ".join(p.strip() for p in pred.split("; "))
    return pred in negative_strings(k) or re.fullmatch(item + (r"; " + item) * (k - 1), pred) is not None


# ---------------------------------------------------------------------------- lenient parsing

_LENIENT = re.compile(
    r"(?<![\d-])(\d+)\s*(?:,\s*|\s+)(\d+)\s*(?:,\s*|\s+)(\d+)(?!\d)"  # a triple: commas and/or spaces
    r"|(?<![\d-])-1(?:\s*,\s*-1\s*,\s*-1)?(?!\d)"  # "-1" (or "-1, -1, -1") for one needle
)


def lenient_parse(response: str) -> list[tuple[int, int, int] | None]:
    """Lenient (non-official) reading: every integer triple `m, r, c` (commas or spaces; inside
    brackets, after "Answer:", across lines) and every stand-alone `-1`, in order of appearance.
    A triple is a location; `None` stands for a "-1" (needle absent).

    `"Answer: (1,2,3)"` -> `[(1, 2, 3)]`; `"1 2 3\\n-1"` -> `[(1, 2, 3), None]`; `"no idea"` -> `[]`.
    """
    out: list[tuple[int, int, int] | None] = []
    for match in _LENIENT.finditer(response):
        if match.group(1) is not None:
            out.append((int(match.group(1)), int(match.group(2)), int(match.group(3))))
        else:
            out.append(None)
    return out


def _gold_triples(doc: dict[str, Any]) -> list[tuple[int, int, int]]:
    return list(zip(doc["needle_index"], doc["needle_row"], doc["needle_col"], strict=True))


def lenient_scores(response: str, doc: dict[str, Any]) -> dict[str, float]:
    """Lenient existence / index / exact (all needles) and individual exact (denominator K).

    Existence: the answer names at least one location iff the needles are present. Index and
    exact compare the first K parsed items with the K gold needles in order; a missing item is
    wrong.
    """
    k = int(doc["K"])
    parsed = lenient_parse(response)
    claims_location = any(item is not None for item in parsed)
    scores = {"existence": float(claims_location == bool(doc["is_positive"]))}
    if doc["is_positive"]:
        gold = _gold_triples(doc)
        first = parsed[:k] + [None] * (k - len(parsed[:k]))
        scores["index"] = float(all(p is not None and p[0] == g[0] for p, g in zip(first, gold, strict=True)))
        scores["exact"] = float(all(p == g for p, g in zip(first, gold, strict=True)))
        scores["individual_exact"] = sum(p == g for p, g in zip(first, gold, strict=True)) / k
    return scores


# ------------------------------------------------------------------------------- task hooks


def doc_to_text(doc: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    """The official code's prompt (`prompt`), or the paper's wording with `prompt_style: paper`."""
    style = (metadata or {}).get("prompt_style", "official")
    if style not in ("official", "paper"):
        raise ValueError(f"metadata prompt_style must be 'official' or 'paper', got {style!r}")
    return doc["prompt_paper"] if style == "paper" else doc["prompt"]


# Provenance columns no prompt or scorer reads. Dropping them keeps document reads from paging in,
# e.g., the 640 sub-image names per row of m10_n8 (the harness's memory would grow with samples).
UNUSED_COLUMNS = ("haystack_subimages", "haystack_ids", "needle_files", "all_locations")


def _select(rows: pa.Table, positive: bool, metadata: Mapping[str, object] | None) -> pa.Table:
    subset = (metadata or {}).get("subset", "paper")
    if subset not in ("paper", "full"):
        raise ValueError(f"metadata subset must be 'paper' or 'full', got {subset!r}")
    # A mask of Arrow's own (a row whose flag is null is left out), not `take(indices)`: pyarrow imports pandas to
    # convert Python values, which a run needs nowhere else.
    keep = rows.column("is_positive") if positive else pc.invert(rows.column("is_positive"))
    if subset == "paper":
        keep = pc.and_(keep, rows.column("in_paper_subset"))
    kept = rows.filter(keep).drop_columns([c for c in UNUSED_COLUMNS if c in rows.column_names])
    if positive:
        _check_needles(kept)
    return kept


# The columns that place a positive row's K needles, one value per needle each (the scorers pair them).
NEEDLE_COLUMNS = ("needle_index", "needle_row", "needle_col")


def _check_needles(rows: pa.Table) -> None:
    """A ValueError naming the row and the column where a positive row's needle columns do not hold K values each."""
    for name in (n for n in NEEDLE_COLUMNS if n in rows.column_names):
        lengths = pc.list_value_length(rows.column(name))
        wrong = pc.not_equal(lengths, pc.cast(rows.column("K"), lengths.type))
        bad = pc.indices_nonzero(pc.or_kleene(wrong, pc.is_null(wrong)))  # a null list or K counts as wrong
        if len(bad):
            at = bad[0].as_py()
            row, k, held = rows.column("id")[at].as_py(), rows.column("K")[at].as_py(), lengths[at].as_py()
            raise ValueError(f"row {row!r}: column {name!r} holds {held} values, where its K is {k} (one per needle)")


# The two hooks take and return the rows as a pyarrow Table (their annotations say so), so that a run of MMNeedle
# imports no `datasets` (`harness.running.task.process_docs`); their journals are those of when they took a Dataset.
def positives(dataset: pa.Table, metadata: dict[str, Any] | None = None) -> pa.Table:
    """Positive rows of the paper's evaluated subset (`--metadata '{"subset": "full"}'`: all)."""
    return _select(dataset, True, metadata)


def negatives(dataset: pa.Table, metadata: dict[str, Any] | None = None) -> pa.Table:
    """Negative rows of the paper's evaluated subset (`--metadata '{"subset": "full"}'`: all)."""
    return _select(dataset, False, metadata)


@lru_cache(maxsize=64)
def _locations(m: int, n: int) -> tuple[str, ...]:
    return tuple(f"{i}, {r}, {c}" for i in range(1, m + 1) for r in range(1, n + 1) for c in range(1, n + 1)) + (
        NEGATIVE,
    )


def answer_space(doc: dict[str, Any]) -> dict[str, Any]:
    """What the random baseline guesses from: every "m, r, c" plus "-1", independently per needle."""
    return {"choices": _locations(int(doc["M"]), int(doc["N"])), "slots": int(doc["K"]), "separator": "; "}


def random_answer(doc: dict[str, Any], rng: random.Random) -> str:
    """A uniform guess from `answer_space`, one location (or "-1") per needle, joined by "; "."""
    space = answer_space(doc)
    return space["separator"].join(rng.choice(space["choices"]) for _ in range(space["slots"]))


def _official(response: str, doc: dict[str, Any]) -> dict[str, Any]:
    k = int(doc["K"])
    return official_single(response, doc["answer"]) if k == 1 else official_multi(response, doc["answer"], k)


def process_results_pos(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Metrics of one positive sample; K > 1 adds the individual accuracies (ratio of sums) and the
    first needle's index and exact accuracy (means), as `evaluate_multi.py` computes them."""
    response = results[0]
    k = int(doc["K"])
    official = _official(response, doc)
    lenient = lenient_scores(response, doc)
    gold = _gold_triples(doc)
    if k == 1:
        per_needle = [float(official["exact"])]
    else:  # a needle the answer did not reach counts as wrong in the breakdowns
        parts = official["parts"]
        gold_parts = doc["answer"].split("; ")
        per_needle = [float(i < len(parts) and parts[i] == gold_parts[i]) for i in range(k)]
    out: dict[str, Any] = {
        "existence_acc": float(official["existence"]),
        "index_acc": float(official["index"]),
        "exact_acc": float(official["exact"]),
        "lenient_existence_acc": lenient["existence"],
        "lenient_index_acc": lenient["index"],
        "lenient_exact_acc": lenient["exact"],
        "format_valid_rate": float(format_valid(response, k)),
        "exact_acc_by_cell": [[f"{r},{c}", v] for (_, r, c), v in zip(gold, per_needle, strict=True)],
        "exact_acc_by_depth": [[str(m), v] for (m, _, _), v in zip(gold, per_needle, strict=True)],
    }
    if k > 1:
        out["individual_index_acc"] = [official["individual_index"], official["compared"]]
        out["individual_exact_acc"] = [official["individual_exact"], official["compared"]]
        out["first_index_acc"] = float(official["first_index"])
        out["first_exact_acc"] = float(official["first_exact"])
        out["lenient_individual_exact_acc"] = lenient["individual_exact"]
    return out


def process_results_neg(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Metrics of one negative sample: existence (answers "no needle") and its complement."""
    response = results[0]
    existence = float(_official(response, doc)["existence"])
    return {
        "existence_acc": existence,
        "hallucination_rate": 1.0 - existence,
        "lenient_existence_acc": lenient_scores(response, doc)["existence"],
        "format_valid_rate": float(format_valid(response, int(doc["K"]))),
    }
