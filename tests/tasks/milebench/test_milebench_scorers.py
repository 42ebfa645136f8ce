"""MileBench's scorers decide as the official `evaluate.py` (MileBench/MileBench @9583e1f) decides.

Every expected value below was produced by running the official `Eval` class (its `process`, `judge_multi_choice`,
the needle and MMCoQA tests of `evaluate_needle`, and `evaluate_rouge`'s call into `rouge` 1.0.1) on the same
inputs; the cases cover each step and fallback of the official option matching and the normalisation quirks.
"""

from __future__ import annotations

import re

import pytest

from tasks.milebench import scoring, utils

ABCD = ["Opened the bag.", "Closed the closet/cabinet.", "Opened the laptop.", "Ate the sandwich."]
TQA = ["$5 per unit", "2*3 = 6", "a|b", "3.5 metres"]  # regex characters that survive normalisation
GPR = [f"image{k}" for k in range(1, 31)]  # more options than letters
NUM = ["1,000 dollars", "2,500 dollars", "(a) three", "four-five"]
EMPTY_OPTION = ["", "red", "blue", "green"]
PERIODS = " ".join(f"word{k}." for k in range(40))

PROCESSED = [
    ("  Hello,\tWorld!\nIt's (fine) - ok?  ", "hello world it's fine  ok"),
    ("1,000 people; (many) [of them]", "1000 people many of them"),  # a digit comma deletes every mark
    ("a-b c_d e/f", "a b c d e f"),
    ("a - b", "a  b"),
    ("Mr. Smith paid 3.50 dollars.", "mr smith paid 3.50 dollars"),
    ("'quoted'", "quoted"),
    ("\"'both'\"", "'both'"),
    (
        PERIODS,
        "word0 word1 word2 word3 word4 word5 word6 word7 word8 word9 word10 word11 word12 word13 word14 word15 "
        "word16 word17 word18 word19 word20 word21 word22 word23 word24 word25 word26 word27 word28 word29 "
        "word30 word31 word32. word33. word34. word35. word36. word37. word38. word39.",
    ),  # 32 periods at most
    ("x" + "." * 40, "x........"),
    ("<=1.5 a.b", "1.5 ab"),
]

# (answer, gold, options, official score, the option key(s) the answer was read as)
MULTIPLE_CHOICE = [
    ("", ABCD[2], ABCD, 1, "C"),  # empty -> C
    ("", ABCD[0], ABCD, 0, "C"),
    ("!!", ABCD[2], ABCD, 1, "C"),  # normalises to empty -> C
    ("B. Closed the closet/cabinet.", ABCD[1], ABCD, 1, "B"),  # step 1: key and option
    ("The answer is B. Closed the closet/cabinet.", ABCD[1], ABCD, 1, "B"),
    ("I think D. Ate the sandwich, not B. Closed the closet/cabinet.", ABCD[1], ABCD, 0, "D"),  # leftmost wins
    ("closed the closet cabinet", ABCD[1], ABCD, 1, "B"),  # step 2: the option alone
    ("They closedthe closet cabinet!", ABCD[1], ABCD, 1, "B"),  # spaces ignored
    ("b", ABCD[1], ABCD, 1, "B"),  # step 3: a key
    ("B)", ABCD[1], ABCD, 1, "B"),
    ("(B)", ABCD[1], ABCD, 1, "B"),
    ("ab", ABCD[1], ABCD, 0, "AB"),  # step 4: every key letter, concatenated
    ("the answer is d", ABCD[3], ABCD, 0, "AD"),
    ("Option C", ABCD[2], ABCD, 1, "C"),
    ("c.", ABCD[2], ABCD, 1, "C"),
    ("3.5 metres", TQA[3], TQA, 0, ""),  # step 2 compares with the escaped option: no match
    ("D. 3.5 metres", TQA[3], TQA, 1, "D"),
    ("$5 per unit", TQA[0], TQA, 0, ""),
    ("2*3 = 6", TQA[1], TQA, 0, ""),
    ("a|b", TQA[2], TQA, 0, "AB"),
    ("image27", GPR[26], GPR, 0, "B"),  # "image2" matches first
    ("image2", GPR[1], GPR, 1, "B"),
    ("AA", GPR[26], GPR, 1, "AA"),  # a two-letter key
    ("aa image27", GPR[26], GPR, 0, "A"),  # step 1 keeps the match's first character only
    ("1,000 dollars", NUM[0], NUM, 1, "A"),
    ("A three", NUM[2], NUM, 1, "C"),
    ("four five", NUM[3], NUM, 1, "D"),
    ("blue", EMPTY_OPTION[2], EMPTY_OPTION, 0, "A"),  # an empty option matches anything at once
    ("xyz", EMPTY_OPTION[0], EMPTY_OPTION, 1, "A"),
    ("Opened the laptop", ABCD[2], ABCD, 1, "C"),
    ("opened", ABCD[0], ABCD, 0, "D"),
]

NEEDLE = [
    ("The number is 1234567.", "1234567", 1),
    ("password:1234567", "1234567", 0),  # ':' is no mark of the official list: one token
    ("12345678", "1234567", 0),
    ("It is 1,234,567", "1234567", 1),
    ("(1234567)", "1234567", 1),
    ("", "1234567", 0),
]

SUBSTRING = [
    ("The director was Steven Spielberg, I believe.", "Steven Spielberg", 1),
    ("spielberg", "Steven Spielberg", 0),
    ("", "x", 0),
]

ROUGE = [
    ("There are 2 people on the left image.", "There are 2 people on the left image.", 0.999999995),
    ("the car moved to the left", "a red car moved left", 0.5999999950000001),
    ("", "a red car moved left", 0),
    ("...", "a red car moved left", 0),
    (PERIODS, "word1 word2 word3", 0.13953488242293133),  # 8 periods survive and split sentences
    (
        "Place tissue box on back of toilet. Then stop. Done.",
        "Place tissue box on back of toilet, in front of candle stick.",
        0.6666666616780046,
    ),
    ("x " + "." * 40, "x y", 0.6666666622222223),
]


@pytest.mark.parametrize(("text", "expected"), PROCESSED)
def test_normalisation_is_the_official_process(text: str, expected: str) -> None:
    assert scoring.process(text) == expected


@pytest.mark.parametrize(("answer", "gold", "options", "correct", "read_as"), MULTIPLE_CHOICE)
def test_option_matching_decides_as_the_official_code(
    answer: str, gold: str, options: list[str], correct: int, read_as: str
) -> None:
    assert scoring.multiple_choice(answer, gold, options) == (correct, read_as)


@pytest.mark.parametrize(("answer", "gold", "correct"), NEEDLE)
def test_needles_match_a_whitespace_token(answer: str, gold: str, correct: int) -> None:
    assert scoring.needle(answer, gold) == correct


@pytest.mark.parametrize(("answer", "gold", "correct"), SUBSTRING)
def test_mmcoqa_matches_a_substring(answer: str, gold: str, correct: int) -> None:
    assert scoring.substring(answer, gold) == correct


@pytest.mark.parametrize(("answer", "gold", "expected"), ROUGE)
def test_rouge_l_is_the_rouge_packages_on_processed_texts(answer: str, gold: str, expected: float) -> None:
    assert scoring.rouge_l_f(answer, gold) == pytest.approx(expected, abs=1e-12)


def test_the_32_period_limit_changes_a_rouge_score() -> None:
    """32 periods are removed, the last two stay and split "b. a." into sentences: ROUGE-L's union LCS then finds
    both reference words (official: 0.111...); with every period removed it is one sentence and finds one."""
    from rouge import Rouge

    answer = " ".join(f"w{k}." for k in range(32)) + " b. a."
    assert scoring.rouge_l_f(answer, "a b") == pytest.approx(0.11111111006172841, abs=1e-12)
    every_period_removed = re.sub(r"\.(?!\d)", "", answer).lower()
    unlimited = Rouge().get_scores(every_period_removed, "a b")[0]["rouge-l"]["f"]
    assert unlimited == pytest.approx(1 / 18, abs=1e-6)


def test_an_answer_of_periods_scores_zero_where_the_official_run_stops() -> None:
    """Official: `rouge` raises "Hypothesis is empty." (40 periods normalise to 8) and the evaluation ends."""
    from rouge import Rouge

    with pytest.raises(ValueError, match="Hypothesis is empty"):
        Rouge().get_scores(scoring.process("." * 40), scoring.process("x y"))
    assert scoring.rouge_l_f("." * 40, "x y") == 0.0


def test_the_corrected_variant_differs_only_for_empty_answers() -> None:
    assert scoring.multiple_choice("", ABCD[2], ABCD)[0] == 1
    assert scoring.multiple_choice_empty_is_wrong("", ABCD[2], ABCD) == 0
    assert scoring.multiple_choice_empty_is_wrong("?!", ABCD[2], ABCD) == 0
    for answer, gold, options, correct, _ in MULTIPLE_CHOICE:
        if scoring.process(answer):
            assert scoring.multiple_choice_empty_is_wrong(answer, gold, options) == correct, answer


def test_option_keys_and_gold_lookup_are_the_officials() -> None:
    assert [scoring.option_key(i) for i in (0, 25, 26, 51, 52, 53)] == ["A", "Z", "AA", "AZ", "BA", "BB"]
    assert scoring.gold_index("opened the LAPTOP", ABCD) == 2  # found after normalisation
    assert scoring.gold_index("a chair", ABCD) is None


def test_row_scores_name_the_official_metric_and_the_level() -> None:
    doc = {
        "id": "x/0",
        "metric": "multiple_choice",
        "answer": ABCD[1],
        "choices": ABCD,
        "image_quantity_level": "Medium",
    }
    assert utils.row_scores(doc, "") == {
        "accuracy": 0.0,
        "accuracy_empty_is_wrong": 0.0,
        "score": 0.0,
        "score_few": None,
        "score_medium": 0.0,
        "score_many": None,
    }
    assert utils.row_scores(doc, "B")["score_medium"] == 100.0
    rouge = utils.row_scores(
        {"metric": "rouge_l", "answer": "a red car moved left", "image_quantity_level": "Few"},
        "the car moved to the left",
    )
    assert (
        rouge["score"] == rouge["rouge_l_f"] == pytest.approx(59.99999950000001)
        and rouge["score_few"] == rouge["score"]
    )
    with pytest.raises(ValueError, match="not among the options"):
        utils.row_scores({**doc, "answer": "a chair"}, "B")
