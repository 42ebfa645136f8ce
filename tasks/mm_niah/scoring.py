"""MM-NIAH's official scorer (`calculate_scores.py::is_correct` with `utils/tools.py::VQAEval`, OpenGVLab/MM-NIAH
@2fd03dd), line for line, quirks included:

- multiple choice (an int answer): a reply of digits is compared as a number (`"2"` is option C; a reply such as
  `"²"` passes `str.isdigit()` and `int()` raises, which stops the official `main()` whole, where here it refuses that
  row alone, recorded `error`, the others scored); otherwise, after
  `.strip('.')`, lower-casing, removing "the answer is" and `*`, cutting at the first `.`, the reply must be one
  letter (`"(a)"`, `"A) fox"`, `"Option A"` are wrong); "none" is wrong; two camera replies map to a and b;
- counting (a list answer, or its JSON text): the reply, less "json" and backticks, must parse as JSON to a list (a
  dict's values are concatenated); soft accuracy: the items equal to the answer's at the same place over the
  answer's length (`true` equals 1: Python's `==`);
- open (a string answer): VQA normalisation of both, then the answer as a whole word of the reply (`has_word`):
  `"The item is an oak."` finds `oak`. The VQA quirks stay: the period regex's `(?!<=\\d)` is a lookahead (meant
  as a lookbehind), `periodStrip.sub` is passed `re.UNICODE` as its count (at most 32 periods go), and number words
  become digits ("two" -> "2").

The heat map (`main`): x is `np.digitize(context_length, x_bins)` (under 1K falls in bin 0, which the scores leave
out), y is `int(depth / 0.2)` of the needles' mean depth (1.0 counts as 0.99; float division, so a depth of 0.6 is
bin 2); a task's score per length bin is the mean over the five depth bins of each cell's accuracy, an empty cell
counting 0.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

X_BINS = (1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000, 40000, 48000, 64000)
Y_INTERVAL = 0.2
DEPTH_BINS = int(1 / Y_INTERVAL)
LENGTH_LABELS = tuple(f"{x // 1000}k" for x in X_BINS)  # `context_ranges`: bin i + 1 is [X_BINS[i], X_BINS[i + 1])
DEPTH_LABELS = tuple(f"{j / DEPTH_BINS}-{(j + 1) / DEPTH_BINS}" for j in range(DEPTH_BINS))

MANUAL_MAP = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
ARTICLES = ("a", "an", "the")
PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
COMMA_STRIP = re.compile(r"(\d)(\,)(\d)")
PUNCT = (";", r"/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
# The VQA evaluation's contraction table, as utils/tools.py holds it.
# fmt: off
CONTRACTIONS = {'aint': "ain't", 'arent': "aren't", 'cant': "can't", 'couldve': "could've", 'couldnt': "couldn't", "couldn'tve": "couldn't've", "couldnt've": "couldn't've", 'didnt': "didn't", 'doesnt': "doesn't", 'dont': "don't", 'hadnt': "hadn't", "hadnt've": "hadn't've", "hadn'tve": "hadn't've", 'hasnt': "hasn't", 'havent': "haven't", 'hed': "he'd", "hed've": "he'd've", "he'dve": "he'd've", 'hes': "he's", 'howd': "how'd", 'howll': "how'll", 'hows': "how's", "Id've": "I'd've", "I'dve": "I'd've", 'Im': "I'm", 'Ive': "I've", 'isnt': "isn't", 'itd': "it'd", "itd've": "it'd've", "it'dve": "it'd've", 'itll': "it'll", "let's": "let's", 'maam': "ma'am", 'mightnt': "mightn't", "mightnt've": "mightn't've", "mightn'tve": "mightn't've", 'mightve': "might've", 'mustnt': "mustn't", 'mustve': "must've", 'neednt': "needn't", 'notve': "not've", 'oclock': "o'clock", 'oughtnt': "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at", "'ow'sat": "'ow's'at", 'shant': "shan't", "shed've": "she'd've", "she'dve": "she'd've", "she's": "she's", 'shouldve': "should've", 'shouldnt': "shouldn't", "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've", "somebody'd": 'somebodyd', "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've", 'somebodyll': "somebody'll", 'somebodys': "somebody's", 'someoned': "someone'd", "someoned've": "someone'd've", "someone'dve": "someone'd've", 'someonell': "someone'll", 'someones': "someone's", 'somethingd': "something'd", "somethingd've": "something'd've", "something'dve": "something'd've", 'somethingll': "something'll", 'thats': "that's", 'thered': "there'd", "thered've": "there'd've", "there'dve": "there'd've", 'therere': "there're", 'theres': "there's", 'theyd': "they'd", "theyd've": "they'd've", "they'dve": "they'd've", 'theyll': "they'll", 'theyre': "they're", 'theyve': "they've", 'twas': "'twas", 'wasnt': "wasn't", "wed've": "we'd've", "we'dve": "we'd've", 'weve': "we've", 'werent': "weren't", 'whatll': "what'll", 'whatre': "what're", 'whats': "what's", 'whatve': "what've", 'whens': "when's", 'whered': "where'd", 'wheres': "where's", 'whereve': "where've", 'whod': "who'd", "whod've": "who'd've", "who'dve": "who'd've", 'wholl': "who'll", 'whos': "who's", 'whove': "who've", 'whyll': "why'll", 'whyre': "why're", 'whys': "why's", 'wont': "won't", 'wouldve': "would've", 'wouldnt': "wouldn't", "wouldnt've": "wouldn't've", "wouldn'tve": "wouldn't've", 'yall': "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll", "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've", 'youd': "you'd", "youd've": "you'd've", "you'dve": "you'd've", 'youll': "you'll", 'youre': "you're", 'youve': "you've"}
# fmt: on


def process_punctuation(text: str) -> str:
    out = text
    for p in PUNCT:
        if (p + " " in text or " " + p in text) or (re.search(COMMA_STRIP, text) is not None):
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return PERIOD_STRIP.sub("", out, re.UNICODE)  # the official call: re.UNICODE (32) lands on `count`


def process_digit_article(text: str) -> str:
    words: list[Any] = []
    for word in text.lower().split():
        mapped: int | str = MANUAL_MAP.get(word, word)
        if mapped not in ARTICLES:
            words.append(mapped)
    words = [CONTRACTIONS.get(w, w) if isinstance(w, str) else w for w in words]
    return " ".join(str(w) for w in words)


def vqa_normalise(text: str) -> str:
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return process_digit_article(process_punctuation(text))


def has_word(sentence: str, word: str) -> bool:
    return re.search(r"\b" + re.escape(word) + r"\b", sentence) is not None


def official_open(response: str, answer: str) -> int:
    """`VQAEval.evaluate(response, answer)` for a string answer."""
    return int(has_word(vqa_normalise(response), vqa_normalise(answer)))


def official_choice(response: str, answer: int) -> float:
    if response.isdigit():
        return float(int(response) == answer)
    response = response.lower().replace("the answer is", "").replace("*", "")
    if response.find(".") != -1:
        response = response.split(".")[0].replace(",", "").strip()
    response = response.strip()
    if response == "none":
        return 0.0
    if "the camera is moving left" in response:
        response = "a"
    elif "the camera is moving right" in response:
        response = "b"
    if len(response) != 1:
        return 0.0
    return float((ord(response) - ord("a")) == answer)


def official_list(response: str, answer: list[Any]) -> float:
    try:
        parsed = json.loads(response.replace("json", "").replace("```", "").strip())
        if isinstance(parsed, dict):
            parsed = sum(list(parsed.values()), start=[])
    except Exception:  # the official code catches every failure to parse as a wrong reply
        return 0.0
    if not isinstance(parsed, list | tuple):
        return 0.0
    return sum(res == ans for res, ans in zip(parsed, answer, strict=False)) / len(answer)


def is_correct(answer: Any, response: str, counting: bool = False) -> float:
    """`is_correct(answer, response)` for the release's answer (its JSON value); `counting`: the official
    `'counting' in jsonl_file_path`, under which a non-list answer is its list's JSON text."""
    if counting and not isinstance(answer, list):
        answer = json.loads(answer)
    response = response.strip(".")
    if isinstance(answer, int):
        return official_choice(response, answer)
    if isinstance(answer, list):
        return official_list(response, answer)
    return float(official_open(response, answer))


def heat_cell(context_length: int, depths: list[float]) -> tuple[int, int]:
    """The official heat map's (x, y) indices of a sample."""
    y = sum(depths) / len(depths)
    if y == 1.0:
        y = 0.99
    return bisect.bisect_right(X_BINS, context_length), int(y / Y_INTERVAL)


def length_scores(cells: list[tuple[int, int, float]]) -> list[float]:
    """The official per-length-bin scores (`uniform_data.mean(axis=0)`): per bin 1 .. 11, the mean over the five
    depth bins of each cell's accuracy, an empty cell counting 0; bin 0 (under 1K) is left out."""
    total = [[0] * DEPTH_BINS for _ in range(len(X_BINS) + 1)]
    correct = [[0.0] * DEPTH_BINS for _ in range(len(X_BINS) + 1)]
    for x, y, value in cells:
        total[x][y] += 1
        correct[x][y] += value
    return [
        sum(correct[x][y] / total[x][y] if total[x][y] else 0.0 for y in range(DEPTH_BINS)) / DEPTH_BINS
        for x in range(1, len(X_BINS) + 1)
    ]
