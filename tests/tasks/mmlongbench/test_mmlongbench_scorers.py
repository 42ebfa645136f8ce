"""The MMLongBench scorers against the official code (EdinburghNLP/MMLongBench @ 26197d2), case by
case. Expected values are derived by hand from the official source; the comment beside a case names
the official line that decides it (utils.py unless another file is named). The official code is not
imported: these tests run where it is absent."""

from __future__ import annotations

import hashlib
import json

import pytest

from builders.mmlongbench.leaves import ABLATION_LEAVES, LEAVES
from tasks.mmlongbench import scoring

# ------------------------------------------------------------------------------- parse_output


@pytest.mark.parametrize(
    ("output", "prefix", "expected"),
    [
        ("Answer: Paris\nmore text", "Answer:", "Paris"),  # L123: rest of the prefix's line
        ("answer:  Paris  ", "Answer:", "Paris"),  # L123 IGNORECASE, L129 strip
        ("Answer:\nParis", "Answer:", ""),  # L123: (.*) stops at the newline
        ("Answer: answer: B", "Answer:", "B"),  # L122: one repeated prefix removed
        ("Answer: Answer: Answer: B", "Answer:", "Answer: B"),  # ... only once
        ("I think\nAnswer: B\nAnswer: C", "Answer:", "B"),  # L123: first match
        ("no prefix here\nB", "Answer:", "no prefix here"),  # L124: first line
        ("  Paris  \nLondon", "Answer:", "Paris"),
        ("", "Answer:", ""),  # L124 always matches, never None
        ("label: 3\nlabel: 4", "label:", "3"),
        ("The Answer:  x  ", "Answer:", "x"),
        ("Summary: one line\nsecond", "Summary:", "one line"),
    ],
)
def test_parse_output(output: str, prefix: str, expected: str) -> None:
    assert scoring.parse_output(output, prefix) == expected


# ---------------------------------------------------------------------------------------- SubEM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower"),  # L39-40: lower, punctuation, articles
        ("  A  cat,\n an apple ", "cat apple"),  # L26: whitespace collapsed
        ("the-end", "theend"),  # punctuation goes before articles: the "the" is glued
        ("Theatre", "theatre"),  # L23: articles only as whole words
        ("\u2019Paris\u2019", "\u2019paris\u2019"),  # non-ASCII punctuation stays (string.punctuation)
        ("an", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert scoring.normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("prediction", "golds", "expected"),
    [
        ("It is the Eiffel Tower.", ["eiffel tower"], 1.0),
        ("Paris", ["London", "paris"], 1.0),  # L84: max over golds
        ("Parisian", ["Paris"], 1.0),  # L81: character substring, not word
        ("Eiffel", ["Eiffel Tower"], 0.0),
        ("anything", ["The"], 1.0),  # a gold normalizing to "" matches everything
        ("Rome", "rome", 1.0),  # L88: a str is one gold
        ("Rome", [["Paris", "Rome"], ["Milan"]], 1.0),  # L90: alias lists flattened
        ("Rome", [["Paris"], ["Milan"]], 0.0),
    ],
)
def test_sub_em(prediction: str, golds, expected: float) -> None:
    assert scoring.sub_em(prediction, golds) == expected


def test_sub_em_rejects_no_golds() -> None:
    with pytest.raises(ValueError):
        scoring.sub_em("x", [])


def test_score_sub_em_keeps_the_raw_match_when_the_parsed_line_misses() -> None:
    # data.py default_post_process: metric on the raw prefixed output and on the parsed line, max.
    generated = " I am not sure.\nParis"
    assert scoring.sub_em(scoring.parse_output("Answer:" + generated, "Answer:"), ["Paris"]) == 0.0
    assert scoring.score_sub_em(generated, "Answer:", ["Paris"]) == 1.0
    assert scoring.score_sub_em(" Paris", "Answer:", ["London"]) == 0.0
    assert scoring.score_sub_em(" Paris", "Answer:", ["answer"]) == 1.0  # the prefix is in the raw text


# ------------------------------------------------------------------------------ multiple choice


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is (C).", 2),  # L183 rule 1
        ("answer is D", 3),
        ("answer is Dog", 3),  # rule 1 has no word boundary after the letter
        ("The answer is C.\nAnswer: D", 2),  # rule order beats position
        ("Answer: B", 1),  # L189 rule 2
        ("answer:   C", 2),
        ("Answer: Based on the images, C", 1),  # rule 2 reads the B of "Based"
        ("Answer: I think it is A", 8),  # ... and "I"
        ("The Answer is C", 2),  # rule 1 is case-sensitive: falls to rule 3 (L195)
        ("Option C is correct.", 2),  # rule 3
        ("A or B", 1),  # rule 3: the LAST stand-alone letter
        ("C, I guess", 8),  # ... "I" is one
        ("A\n\nB", 1),  # L182 whitespace collapsed
        ("K", -1),  # only A-J
        ("ABC", -1),  # no stand-alone letter
        ("", -1),
    ],
)
def test_choice_index(text: str, expected: int) -> None:
    assert scoring.choice_index(text) == expected


@pytest.mark.parametrize(
    ("generated", "gold", "expected"),
    [
        (" B", 1, 1.0),
        (" B", 2, 0.0),
        (" Based on the images, C", 1, 1.0),  # raw reads B (rule 2)
        (" Based on the images, C", 2, 1.0),  # parsed line reads C (rule 3): only the parsed one matches
        (" Based on the images, C", 0, 0.0),
        (" none of them", 0, 0.0),  # -1 never equals an index
    ],
)
def test_score_mc_max_over_raw_and_parsed(generated: str, gold: int, expected: float) -> None:
    assert scoring.score_mc(generated, "Answer:", gold) == expected


# ---------------------------------------------------------------------------------------- count


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2, 3]", [1, 2, 3]),  # L160 rule 1
        ("first [1, 2] then [0, 4]", [0, 4]),  # rule 1: last list
        ("[1, 2] and [x]", [1, 2]),  # rule 1 wins over a later bracket
        ("[1, 2] and [a]", []),  # the article "a" is dropped first (L158): "[ ]" is the last rule-1 list
        ("[[1, 2], [3]]", [3]),
        ("[ ]", []),  # rule 1 matches "[ ]", JSON []
        ("[1 2]", [1, 2]),  # rule 1 is not JSON, nor rule 2: fallback 2 (L176) digits
        ("[01, 2]", [1, 2]),  # leading zero is not JSON
        ("[1,]", [1]),
        ("[1, two, 3]", [1, 3]),  # rule 2 (L168) is not JSON either
        ('[1.9, "2", null]', [1, 2]),  # rule 2 JSON, int()-castable items (L146): 1.9 -> 1
        ("[True, false, 2]", [1, 0, 2]),  # lowercased first (L158), then true -> 1
        ("[] ", []),  # rule 2 JSON []
        ("[x] then [1, y]", [1]),  # rule 2 last span not JSON: digits
        ("There are 3 needles in 2 images", [3, 2]),  # fallback 2
        ("none", []),
    ],
)
def test_count_list(text: str, expected: list[int]) -> None:
    assert scoring.count_list(text) == expected


@pytest.mark.parametrize(
    ("generated", "gold", "expected"),
    [
        (" [1, 2]", [3], 1.0),  # L225: sums compared
        (" [2, 1]", [1, 2], 1.0),
        (" [1, 1]", [1, 2], 0.0),
        (" none", [0, 0], 1.0),  # no number: sum 0
        (" [1, 2]\n[3, 3]", [3], 1.0),  # parsed line [1, 2]: only the parsed one matches
        (" [1, 2]\n[3, 3]", [6], 1.0),  # raw text's last list [3, 3]: only the raw one matches
        (" [1, 2]\n[3, 3]", [9], 0.0),
    ],
)
def test_score_count(generated: str, gold: list[int], expected: float) -> None:
    assert scoring.score_count(generated, "Answer:", gold) == expected


# ----------------------------------------------------------------------------------------- ICL


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("label: 7", 7),  # L207 rule 1
        ("Label:12", 12),  # IGNORECASE
        ("label: 3 or label: 5", 3),  # first
        ("label: x 4", 4),  # rule 1 fails: L212 rule 2, last stand-alone integer
        ("class 3 or 12", 12),
        ("3.5", 5),  # "5" is the last stand-alone digit run
        ("id42x", 42),  # no stand-alone integer: L217 rule 3, first digit run
        ("id42x and 7y", 42),
        ("none", -1),
    ],
)
def test_class_label(text: str, expected: int) -> None:
    assert scoring.class_label(text) == expected


@pytest.mark.parametrize(
    ("generated", "gold", "expected"),
    [
        (" 3", 3, 1.0),
        (" 3", 4, 0.0),
        (" x 4\nlabel: 7", 4, 1.0),  # parsed line "x 4" -> 4; raw reads "label: 7"
        (" x 4\nlabel: 7", 7, 1.0),
        (" x 4\nlabel: 7", 5, 0.0),
    ],
)
def test_score_icl(generated: str, gold: int, expected: float) -> None:
    assert scoring.score_icl(generated, "label:", gold) == expected


# -------------------------------------------------------------------------------- Visual Haystack


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", 1),
        ("No.", 0),
        ("Answer: yes", 1),
        ("YES!", 1),
        ("No, wait: yes.", 1),  # L135: the last yes/no
        ("Yes, or no", 0),
        ("The answer is no", 0),
        ("I do not know", -1),  # whole words only: not, know
        ("yesterday", -1),
        ("1", 1),  # L143: a digit string is its int
        (" 2 ", 2),
        ("Answer: 1", -1),  # ... only when the whole text is digits
        ("", -1),
    ],
)
def test_vh_label(text: str, expected: int) -> None:
    assert scoring.vh_label(text) == expected


def test_vh_default_cycles_over_row_positions() -> None:
    # data.py L152-155: [0, 1, 1, 0], advanced once per scored row (L187).
    assert [scoring.vh_default_label(i) for i in range(9)] == [0, 1, 1, 0, 0, 1, 1, 0, 0]


@pytest.mark.parametrize(("row_index", "expected"), [(0, 1.0), (1, 0.0), (2, 0.0), (3, 1.0), (4, 1.0), (5, 0.0)])
def test_score_vh_unparseable_uses_the_row_default(row_index: int, expected: float) -> None:
    assert scoring.score_vh(" I cannot tell", "Answer:", "No", row_index) == expected


def test_score_vh_parseable_ignores_the_row_and_the_parsed_line() -> None:
    for row in range(4):
        assert scoring.score_vh(" yes", "Answer:", "Yes", row) == 1.0
        assert scoring.score_vh(" yes", "Answer:", "No", row) == 0.0
    # Raw text only: a later line decides (parse_output would keep the first line, "I see a dog").
    assert scoring.score_vh(" I see a dog\nSo, no.", "Answer:", "No", 1) == 1.0
    assert scoring.score_vh(" yes", "Answer:", "1", 0) == 1.0  # the gold is read by the same rule


def test_score_vh_file_indexes_the_default_by_position_not_by_failures() -> None:
    # Row 1 is the first unparseable row: its default is cycle[1] = 1 (a counter of failures would give 0).
    assert scoring.score_vh_file(["Yes", "??"], "Answer:", ["Yes", "Yes"]) == [1.0, 1.0]
    assert scoring.score_vh_file(["??", "??", "??", "??"], "Answer:", ["No"] * 4) == [1.0, 0.0, 0.0, 1.0]
    with pytest.raises(ValueError):
        scoring.score_vh_file(["Yes"], "Answer:", [])


@pytest.mark.parametrize(
    ("accuracy", "reported"), [(30.0, 70.0), (49.5, 50.5), (50.0, 50.0), (75.0, 75.0), (0.0, 100.0)]
)
def test_fold_at_50(accuracy: float, reported: float) -> None:
    # figure_scripts/utils.py L123-126: below 50 -> 100 - acc.
    assert scoring.fold_at_50(accuracy) == pytest.approx(reported)


def test_vh_reported_accuracy() -> None:
    assert scoring.mean_percent([0.0, 0.0, 0.0, 1.0]) == 25.0
    assert scoring.vh_reported_accuracy([0.0, 0.0, 0.0, 1.0]) == 75.0
    assert scoring.vh_reported_accuracy([1.0, 1.0, 0.0, 1.0]) == 75.0
    with pytest.raises(ValueError):
        scoring.vh_reported_accuracy([])


# --------------------------------------------------------------------------------------- DocVQA


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5 kg", "5"),
        ("5 meters", "5"),
        ("5 acres", "5"),
        ("5 minutes", "5"),
        ("5 miles", "5"),
        ("5 mile", "5"),
        ("5 feet", "5"),
        ("5 million", "5"),
        ("5 thousand", "5"),
        ("5 billion", "5"),
        ("12 MM", "12"),
        ("5 m", "5"),  # L233-238, lowercased first
        ("5 kgm", "5 kg"),  # one pass in order: "kg" was tried before "m" removed
        ("5 km", "5 k"),
        ("item", "ite"),  # a suffix needs no word boundary
        ("1,200", "1200"),  # L231 commas
        ("'45%'", "45"),  # L243 quotes, then L245 %
        ('"$5"', "5"),
        ("£3", "3"),
        ("$ 5", "5"),
        ("3 m%", "3 m"),  # suffixes go before the symbols
        (7, "7"),
    ],
)
def test_docvqa_clean(value, expected: str) -> None:
    assert scoring.docvqa_clean(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pages 3-5", [3.0, -5.0]),  # L279: the hyphen is a sign
        ("1,234.5 and .5", [1234.5, 0.5]),
        ("1.5.2", [1.5, 0.2]),
        ("v2.", [2.0]),
        ("9" * 400, []),  # inf dropped (L285)
        ("", []),
    ],
)
def test_docvqa_numbers(text: str, expected: list[float]) -> None:
    assert scoring.docvqa_numbers(text) == expected


@pytest.mark.parametrize(
    ("gold", "expected"),
    [
        ("https://example.com/a", True),
        ("see train.py", True),
        ("model.ipynb", True),
        ("page 5", True),
        ("12", True),
        ("12-15", True),
        ("12 15", True),
        ("9:30 a.m.", True),
        ("5 p.m. sharp", True),
        ("2020-01-02", True),
        ("2020/1/2", True),
        ("01-02-2020", True),
        ("1/2/20", True),
        ("2020-01", True),
        ("2020 1", True),
        ("a.b@c.org", True),
        ("Page 5", False),
        ("12a", False),
        ("http://example.com", False),
        ("Paris", False),
        ("2020-01-02x", False),
    ],
)
def test_docvqa_needs_exact_match(gold: str, expected: bool) -> None:
    # L261-274, one case per regex, then near misses.
    assert scoring.docvqa_needs_exact_match(gold) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", "Integer"),
        ("3.0", "Integer"),
        ("1e3", "Integer"),
        ("1_000", "Integer"),
        ("5m", "Integer"),
        ("12%", "Float"),
        ("2.5", "Float"),
        ("nan", "String"),
        ("inf", "String"),
        ("Paris", "String"),
        ("", "String"),
    ],
)
def test_docvqa_value_type(value: str, expected: str) -> None:
    # L293-301: float() decides; "%" in the original string makes a whole number Float.
    assert scoring.docvqa_value_type(value) == expected


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("3", "There are 3 apples", 1.0),  # L305-311: any whole number equals
        ("3", "3.0", 1.0),
        ("3", "3.5", 0.0),
        ("3", "about 13", 0.0),
        ("1,000", "1000 units", 1.0),
        ("5 kg", "5", 1.0),
        ("5", "5 million", 1.0),  # the prediction is cleaned too
        ("12", "12%", 1.0),
        ("-5", "pages 3-5", 1.0),
        ("5", "pages 3-5", 0.0),
    ],
)
def test_docvqa_integer(gold: str, prediction: str, expected: float) -> None:
    assert scoring.docvqa_score_parsed(gold, prediction, "Integer") == expected


def test_docvqa_integer_gold_must_be_whole() -> None:
    with pytest.raises(AssertionError):
        scoring.docvqa_score_parsed("2.5", "2.5", "Integer")


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        ("12.5", "12.5", 1.0),
        ("12.5", "12.6", 1.0),  # L250-258: rel_tol 0.01 of the larger
        ("12.5", "12.7", 0.0),
        ("0.25", "25%", 1.0),  # gold * 100
        ("25", "0.25", 1.0),  # gold / 100
        ("25%", "0.25", 1.0),
        ("0", "0.001", 0.0),
        ("0", "0", 1.0),
        ("12.5", "no number", 0.0),
    ],
)
def test_docvqa_float(gold: str, prediction: str, expected: float) -> None:
    assert scoring.docvqa_score_parsed(gold, prediction, "Float") == expected


@pytest.mark.parametrize(
    ("gold", "prediction", "answer_format", "expected"),
    [
        ("https://x.org/a", "See https://x.org/a.", "String", 1.0),  # L319: exact substring
        ("https://x.org/a", "HTTPS://X.ORG/A", "String", 0.0),  # ... case-sensitive
        ("2020-01-02", "on 2020-01-02", "String", 1.0),
        ("2020-01-02", "on 2020/01/02", "String", 0.0),
        ("the red car", "A red car indeed", "String", 0.8),  # L321 token F1: P 2/3, R 1
        ("Paris", "London", "String", 0.0),
        ("Not answerable", "Not answerable.", "None", 1.0),
        ("Not answerable", "It is not answerable from the document", "None", 0.5),  # P 2/6, R 1
        ("!!!", "!!!", "String", 0.0),  # nothing left after normalization
    ],
)
def test_docvqa_string_and_none(gold: str, prediction: str, answer_format: str, expected: float) -> None:
    assert scoring.docvqa_score_parsed(gold, prediction, answer_format) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("gold", "prediction", "expected"),
    [
        (["apple", "banana"], "banana and apple", 0.8),  # L327-332: one merged item, F1 P 2/3 R 1
        (["red", "big"], "red", 2 / 3),  # merged: P 1, R 1/2 (scored apart it would be 0.5)
        (["page 3", "intro"], "page 3 intro", 0.75),  # "page 3" needs exact match, not merged: (1 + 0.5) / 2
        (["apple", 3, "2.5", "https://x.org"], "apple, 3 and 2.5 at https://x.org", (2 / 7 + 3) / 4),
        (["12%"], "0.12", 1.0),  # a "%" string is Float
        (["3"], "3 of them", 1.0),  # a numeric string is Integer
        ([2.0], "2", 1.0),  # a JSON float is Float
        ([3, 4], "3", 0.5),
    ],
)
def test_docvqa_list(gold: list, prediction: str, expected: float) -> None:
    assert scoring.docvqa_score_parsed(json.dumps(gold), prediction, "List") == pytest.approx(expected)


def test_docvqa_errors_as_official() -> None:
    with pytest.raises(ZeroDivisionError):
        scoring.docvqa_score_parsed("[]", "x", "List")
    with pytest.raises(AssertionError):
        scoring.docvqa_score_parsed('[["a"]]', "x", "List")
    with pytest.raises(KeyError):
        scoring.docvqa_score_parsed("x", "x", "Bool")


def test_score_docvqa_reads_the_parsed_line_only() -> None:
    # data.py L450-460: no max with the raw text.
    assert scoring.score_docvqa(" 42\nbecause of page 3", "Answer:", "42", "Integer") == 1.0
    assert scoring.score_docvqa("\n42", "Answer:", "42", "Integer") == 0.0
    assert scoring.score_docvqa(" Answer: Not answerable.", "Answer:", "Not answerable", "None") == 1.0


# -------------------------------------------------------------------------------- summarization


def test_rouge_lsum_f1_max_over_raw_and_parsed() -> None:
    # Parsed "the cat sat" is exact (1.0); raw "summary the cat sat" has P 3/4.
    assert scoring.rouge_lsum("Summary: the cat sat", "the cat sat") == pytest.approx(6 / 7)
    assert scoring.rouge_lsum_f1(" the cat sat", "Summary:", "the cat sat") == pytest.approx(1.0)
    # Parsed "x" shares nothing; raw lines ["summary x", "the cat sat"]: P 3/5, R 1.
    assert scoring.rouge_lsum_f1(" x\nthe cat sat", "Summary:", "the cat sat") == pytest.approx(0.75)
    assert scoring.rouge_lsum_f1(" the cats sat", "Summary:", ["dog", "the cat sat"]) == pytest.approx(1.0)  # stemmed


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('Reasoning... {"fluency": 1}', {"fluency": 1}),
        ('first {"recall": 2} then {"recall": 4}', {"recall": 4}),  # eval_gpt4_summ.py L309-312: the last
        ('{"recall": 4} then {oops}', None),  # last span fails, no fence (official raises)
        ('{"a": {"b": 1}}', None),  # nested: the span '{"a": {"b": 1}' is not JSON
        (
            'Output: ```json\n{"precision": 2, "sentence_count": {"n": 6}}\n```',
            {"precision": 2, "sentence_count": {"n": 6}},
        ),  # L314: fenced fallback
        ('```json\n{"recall": 1}\n``` and ```json\n{"recall": 2}\n``` {bad}', None),  # greedy fence spans both
        ("text {not json} ```json\n[1]\n```", None),  # fenced JSON that is not an object
        ("no json here", None),  # L316
        ("{}", {}),
    ],
)
def test_parse_judge_json(reply: str, expected) -> None:
    assert scoring.parse_judge_json(reply) == expected


@pytest.mark.parametrize(
    ("fluency", "found", "n_claims", "precise", "sentences", "expected"),
    [
        (1, 4, 8, 3, 6, 0.5),  # eval_gpt4_summ.py L383-386
        (0, 4, 8, 3, 6, 0.0),  # not fluent
        (1, 8, 8, 3, 6, 2 / 3),  # R 1, P 0.5
        (1, 0, 0, 6, 6, 0.0),  # no claims: R 0
        (1, 4, 8, 0, 0, 0.0),  # no sentences: P 0
        (1, 0, 8, 0, 6, 0.0),  # P + R = 0
        (1, 10, 5, 6, 6, 4 / 3),  # nothing clipped: R 2
    ],
)
def test_fluency_f1(fluency: int, found: int, n_claims: int, precise: int, sentences: int, expected: float) -> None:
    score = scoring.fluency_f1(
        {"fluency": fluency}, {"recall": found}, {"precision": precise, "sentence_count": sentences}, n_claims
    )
    assert score == pytest.approx(expected)


def test_fluency_f1_from_replies_and_file_mean() -> None:
    ok = scoring.fluency_f1_from_replies(
        '{"fluency": 1}', 'x {"recall": 4}', '{"precision": 3, "sentence_count": 6}', 8
    )
    assert ok == pytest.approx(0.5)
    assert (
        scoring.fluency_f1_from_replies('{"fluency": 1}', "no json", '{"precision": 3, "sentence_count": 6}', 8) is None
    )
    with pytest.raises(KeyError):
        scoring.fluency_f1({}, {"recall": 1}, {"precision": 1, "sentence_count": 1}, 1)
    assert scoring.judged_mean_percent([0.5, None, 1.0]) == pytest.approx(75.0)  # unjudged rows skipped
    with pytest.raises(ValueError):
        scoring.judged_mean_percent([None])


@pytest.mark.parametrize(
    ("generated", "prefix", "expected"),
    [
        (" The audit found x. ", "Summary:", "The audit found x."),  # eval_gpt4_summ.py L348-349
        (" Summary: again", "Summary:", "Summary: again"),  # stripped once
        (" x", "Answer:", "Answer: x"),
    ],
)
def test_summary_for_judge(generated: str, prefix: str, expected: str) -> None:
    assert scoring.summary_for_judge(generated, prefix) == expected


# SHA-256 of the six prompt strings of scripts/eval_gpt4_summ.py @ 26197d2 (as Python evaluates them).
PROMPT_SHA256 = {
    "FLUENCY_PROMPT_GOVREPORT": "89fde636977cc5b6b53b29b31829db6ba19edb813602d98486cf8abc41f2cc10",
    "FLUENCY_PROMPT_MULTILEXSUM": "1ae2a512ceda269aa9e72e315dc1abcda107f117461fdd7b62d2c20d086a5944",
    "PRECISION_PROMPT_GOVREPORT": "a7c4d5985b3f2ad7db004df0a42c8f650c10c030c35a573012b2db12329fac07",
    "PRECISION_PROMPT_MULTILEXSUM": "dd54e53b7f2cec77db59b50064d4ee6f76f4054465bbafd8633da56f5aafac28",
    "RECALL_PROMPT_GOVREPORT": "bf3b60a53927ff6441495fd4d378d98fefafcfef3b873aad5df00b47ed00598f",
    "RECALL_PROMPT_MULTILEXSUM": "ae362eeeba9c902aebfbff92c1a828e16f13712a6598f8eaddfd4e1013fa326b",
}


@pytest.mark.parametrize("name", sorted(PROMPT_SHA256))
def test_judge_prompt_templates_are_verbatim(name: str) -> None:
    assert hashlib.sha256(getattr(scoring, name).encode("utf-8")).hexdigest() == PROMPT_SHA256[name]


def test_judge_prompts_are_filled_as_official() -> None:
    gov = scoring.judge_prompts("govreport", "  The audit found x.\n", "Why GAO Did This Study:\nref", ["c1", "c2"])
    assert set(gov) == {"fluency", "precision", "recall"}
    assert gov["fluency"].endswith('{"fluency": 1}.\n\nText: "The audit found x."\n')  # braces undoubled
    assert gov["recall"].endswith(
        "Key points:\n1. c1\n2. c2\n\nSummary: <start of summary>The audit found x.<end of summary>\n"
    )
    assert gov["precision"].endswith(
        "Expert summary: <start of summary>Why GAO Did This Study:\nref<end of summary>\n\n"
        "Provided summary: <start of summary>The audit found x.<end of summary>\n"
    )
    lex = scoring.judge_prompts("multilexsum", "S", "R", ["only"])
    assert lex["recall"].endswith('Key points:\n1. only\n\nSummary: "S"\n')
    assert lex["precision"].endswith('Expert summary: "R"\n\nProvided summary: "S"\n')
    assert lex["fluency"] != gov["fluency"].replace("The audit found x.", "S")  # different rubric examples


# ---------------------------------------------------------------------------------------- names


def test_metric_of_dataset() -> None:
    allowed = {
        "sub_em",
        "vh_acc",
        "vh_acc_folded",
        "count_acc",
        "mc_acc",
        "cls_acc",
        "fluency_f1",
        "rougeLsum_f1",
        "docvqa_score",
    }
    datasets = {leaf.dataset for leaf in (*LEAVES, *ABLATION_LEAVES)}  # 19 and the 5 ablation sets
    assert set(scoring.METRIC_OF_DATASET) == datasets and set(scoring.METRIC_OF_DATASET.values()) <= allowed
    expected = {
        "mmniah_ret_text": "sub_em",
        "mmniah_ret_image": "mc_acc",
        "mmniah_reason_text": "sub_em",
        "mmniah_reason_image": "mc_acc",
        "mmniah_count_text": "count_acc",
        "mmniah_count_image": "count_acc",
        "vh_single": "vh_acc_folded",
        "inat2021": "cls_acc",
        "multilexsum": "fluency_f1",
        "slidevqa": "docvqa_score",
        "viquae": "sub_em",
        "triviaqa": "sub_em",
        "occ_vrag_viquae": "sub_em",
        "text_haystack_ret_image": "mc_acc",
        "text_doc": "docvqa_score",
    }
    assert {k: scoring.METRIC_OF_DATASET[k] for k in expected} == expected
