"""LoCoVQA's scorers on the spec's cases (§3): OK-VQA's substring exact match, ROUGE-L and MiniLM "BERTScore"
(the real all-MiniLM-L6-v2 from its wheel), MMStar's extraction cascade step by step in the paper's order, the
MNIST multiset rule, the error counts, and the decay fits."""

from __future__ import annotations

import math

import pytest

from tasks.locovqa import decay, scoring, utils

CHOICES = ["Winnie the Pooh", "Mickey Mouse", "Bugs Bunny", "Elmo"]


def test_exact_match_is_a_gold_answer_inside_the_answer() -> None:
    golds = ["winnie the pooh", "pooh"]
    assert scoring.exact_match("<answer>Pooh Bear</answer>", golds) == 1.0
    assert scoring.exact_match("It is Winnie the Pooh.", golds) == 1.0  # no tags: not penalised (App. D)
    assert scoring.exact_match("<answer>a bear</answer> pooh", golds) == 0.0  # the tag's text is the answer
    assert scoring.exact_match("", golds) == 0.0 and scoring.exact_match("<answer></answer>", golds) == 0.0


def test_rouge_l_is_the_best_over_the_distinct_golds() -> None:
    assert scoring.rouge_l("<answer>winnie the pooh</answer>", ["pooh", "winnie the pooh"]) == pytest.approx(1.0)
    # "the pooh" against "winnie the pooh": LCS 2, P 1, R 2/3 -> F 0.8; against "pooh": P 1/2, R 1 -> 2/3.
    assert scoring.rouge_l("the pooh", ["pooh", "winnie the pooh"]) == pytest.approx(0.8)
    assert scoring.rouge_l("   ", ["pooh"]) == 0.0


@pytest.mark.slow  # MiniLM loaded and run (~6 s)
def test_bertscore_is_the_best_minilm_cosine() -> None:
    same = scoring.bertscore_minilm_cos("<answer>Winnie the Pooh</answer>", ["winnie the pooh", "tigger"])
    near = scoring.bertscore_minilm_cos("Pooh bear", ["winnie the pooh"])
    far = scoring.bertscore_minilm_cos("a traffic light", ["winnie the pooh"])
    assert same == pytest.approx(1.0, abs=1e-4)  # the model is uncased: the same words give cosine 1
    assert far < near < same
    assert scoring.bertscore_minilm_cos("", ["pooh"]) == 0.0


@pytest.mark.parametrize(
    ("response", "letter", "step"),
    [
        # 1. inside the tags, read by steps 3-6
        ("<answer>B</answer>", "B", "tag"),
        ("<answer>(C) Bugs Bunny</answer>", "C", "tag"),
        ("<answer>Elmo</answer>", "D", "tag"),
        ("I think so. <answer>A: Winnie the Pooh</answer>", "A", "tag"),
        # 2. "Answer: X" (the word in any case, the letter upper-case)
        ("The character is a bear. answer: C", "C", "answer_colon"),
        ("Answer:(B)", "B", "answer_colon"),
        # 3. the first letter of the string followed by a colon
        ("D: Elmo is red", "D", "letter_colon"),
        ("(A): the bear", "A", "letter_colon"),
        # 4. the first parenthesised letter
        ("It must be (B), since the ears are round; not (A).", "B", "parenthesised"),
        # 5. the answer's text only
        ("mickey mouse", "B", "option_text"),
        ("The cake shows Bugs Bunny.", "C", "option_text"),
        # 6. a single letter
        ("C", "C", "single_letter"),
        (" D. ", "D", "single_letter"),
        # 7. nothing found: wrong
        ("I cannot tell from the image.", None, "none"),
        ("Both Elmo and Bugs Bunny", None, "none"),  # two options named: no answer
        ("E", None, "none"),  # not one of the row's four options
        ("", None, "none"),
    ],
)
def test_the_choice_cascade_in_the_papers_order(response: str, letter: str | None, step: str) -> None:
    assert scoring.extract_choice(response, CHOICES) == (letter, step)


def test_the_cascade_takes_the_earlier_step_first() -> None:
    # Tags beat "Answer:", which beats a parenthesised letter and the option text.
    assert scoring.extract_choice("Answer: A <answer>D</answer>", CHOICES) == ("D", "tag")
    assert scoring.extract_choice("(C) looks right. Answer: B", CHOICES) == ("B", "answer_colon")
    # A tag without a letter in it falls through to the whole response.
    assert scoring.extract_choice("<answer>not sure</answer> Answer: A", CHOICES) == ("A", "answer_colon")


def test_mnist_is_a_multiset_match_without_partial_credit() -> None:
    gold = [6, 6, 1, 0]
    for answer in ("6, 6, 1, 0", "0, 1, 6, 6", "6 6 1 0", "[6, 6, 1, 0]", "<answer>1,0,6,6</answer>", "6610"):
        assert scoring.transcription_correct(answer, gold) == 1.0, answer
    for answer in ("6, 1, 0", "6, 6, 1, 0, 3", "6, 1, 1, 0", "", "six six one zero"):
        assert scoring.transcription_correct(answer, gold) == 0.0, answer
    assert scoring.transcription_correct("3, 7", [3]) == 0.0  # a needle answered with two digits is wrong


@pytest.mark.slow  # MiniLM loaded and run (~2 s)
def test_rows_report_errors_and_chance() -> None:
    okvqa = utils.process_results({"task": "okvqa", "answers": ["pooh"]}, [""])
    assert okvqa["non_response"] == 1.0 and okvqa["non_template"] == 1.0 and okvqa["exact_match"] == 0.0
    mmstar = utils.process_results(
        {"task": "mmstar", "answer": "B", "choices": CHOICES, "subset": "mmbench"}, ["<answer>B</answer>"]
    )
    assert mmstar == {
        "accuracy": 1.0,
        "accuracy_by_subset": [["mmbench", 1.0]],
        "extraction_step": [["tag", 1.0]],
        "chance": 0.25,
        "non_response": 0.0,
        "non_template": 0.0,
    }
    needle = utils.process_results({"task": "needle", "digits": [3], "content_positions": [5]}, ["3"])
    assert needle["accuracy_by_position"] == [[5, 1.0]] and needle["chance"] == pytest.approx(0.1)


def test_the_exponential_fit_recovers_a_decay() -> None:
    xs = [1, 4, 9, 16, 25, 36]
    ys = [0.6 * math.exp(-0.05 * x) for x in xs]
    exp = decay.fit(xs, ys, "exp")
    assert exp.r2 == pytest.approx(1.0) and exp.params[1] == pytest.approx(-0.05) and not exp.rising
    assert exp.stars == "***" and exp.label() == "1.000***"
    offset = decay.fit(xs, [y + 0.1 for y in ys], "exp_offset")
    assert offset.r2 == pytest.approx(1.0, abs=1e-6) and offset.params[2] == pytest.approx(0.1, abs=1e-3)
    rising = decay.fit(xs, [0.1, 0.2, 0.2, 0.3, 0.35, 0.5], "log")
    assert rising.rising and "↓" in rising.label()
    assert decay.fit([1, 4], [0.5, 0.4]) is None  # two points are no fit
    assert math.isnan(decay.fit(xs, [0.0] * 6, "exp").r2)  # flat: nothing to explain
    assert decay.sub_chance([0.1, 0.2, 0.3], [0.25] * 3) and not decay.sub_chance([0.3, 0.2, 0.3], [0.25] * 3)
