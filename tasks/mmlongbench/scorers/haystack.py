"""Visual Haystack's scorer (official `eval.py`, VH-Single and VH-Multi): a yes/no per row, a default answer
where none is found, and the file's accuracy folded at 50."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tasks.mmlongbench.scorers.common import mean_percent, normalize_answer_keep_punctuation

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


def fold_at_50(accuracy_percent: float) -> float:
    """Official reporting fold of VH accuracy (`figure_scripts/utils.py` "flip the binnary acc"):
    a file accuracy below 50 becomes 100 - acc; 50 itself and above stay. 30.0 -> 70.0."""
    return 100.0 - accuracy_percent if accuracy_percent < 50 else accuracy_percent


def vh_reported_accuracy(row_scores: Sequence[float]) -> float:
    """The reported VH number of one file (`vh_acc_folded`): `fold_at_50(mean_percent(rows))`."""
    return fold_at_50(mean_percent(row_scores))
