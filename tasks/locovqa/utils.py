"""LoCoVQA task hooks: each row scored by its task's scorer (`scoring.py`), and the random baseline's guess.

Every row also reports `chance`, the probability that a uniform guess is right (MMStar: 1 / options; needle:
1 / 10; OK-VQA and MNIST transcription: 0, spec §3.6), so that the report draws the random baseline from
the data it ran on. The report shows no level for OK-VQA and MNIST (`series.GUESS_LEVELS`): their metrics give a
guess partial credit (the random baseline scores 0.25-0.52 there), so 0 is no chance level.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.locovqa import scoring


def _errors(response: str) -> dict[str, float]:
    return {
        "non_response": float(scoring.non_response(response)),
        "non_template": float(not scoring.uses_template(response)),
    }


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    response = results[0]
    task = doc["task"]
    if task == "okvqa":
        answers = doc["answers"]
        return {
            "exact_match": scoring.exact_match(response, answers),
            "bertscore_minilm_cos": scoring.bertscore_minilm_cos(response, answers),
            "rougeL_f1": scoring.rouge_l(response, answers),
            "chance": 0.0,
            **_errors(response),
        }
    if task == "mmstar":
        letter, step = scoring.extract_choice(response, doc["choices"])
        correct = float(letter == doc["answer"])
        return {
            "accuracy": correct,
            "accuracy_by_subset": [[doc["subset"], correct]],
            "extraction_step": [[step, 1.0]],
            "chance": 1.0 / max(len(doc["choices"]), 1),
            **_errors(response),
        }
    correct = scoring.transcription_correct(response, doc["digits"])
    if task == "mnist":
        return {
            "accuracy": correct,
            "accuracy_by_digits": [[doc["num_digits"], correct]],
            "chance": 0.0,
            "non_response": float(scoring.non_response(response)),
        }
    if task == "needle":
        return {
            "accuracy": correct,
            "accuracy_by_position": [[doc["content_positions"][0], correct]],
            "chance": 0.1,
            "non_response": float(scoring.non_response(response)),
        }
    raise ValueError(f"row {doc.get('id')!r}: unknown LoCoVQA task {task!r}")


def random_answer(doc: dict[str, Any], rng: random.Random) -> str:
    """A uniform guess in the form the scorer reads: one of the options' letters (MMStar), one digit (needle),
    one to min(8, n) digits (MNIST), a word of the question (OK-VQA)."""
    task = doc["task"]
    if task == "mmstar":
        return f"<answer>{rng.choice(scoring.LETTERS[: max(len(doc['choices']), 1)])}</answer>"
    if task == "needle":
        return str(rng.randrange(10))
    if task == "mnist":
        count = rng.randint(1, min(8, doc["context_length"]))
        return ", ".join(str(rng.randrange(10)) for _ in range(count))
    words = [w for w in doc["question"].replace("?", " ").split() if w.isalpha()] or ["unknown"]
    return f"<answer>{rng.choice(words).lower()}</answer>"
