"""MM-NIAH's scorer against the official code's own decisions (OpenGVLab/MM-NIAH at 2fd03dd) on held-out replies,
none of them a fixture's: `official_decisions.json`, made by running calculate_scores.py as it is on them (its
`note` says how). The official code is not imported: these tests run where it is absent."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tasks.mm_niah import scoring, utils

DECISIONS = json.loads((Path(__file__).parent / "official_decisions.json").read_text(encoding="utf-8"))
TASKS = ("retrieval-text", "retrieval-image", "counting-text", "counting-image", "reasoning-text", "reasoning-image")


def _doc(task: str, answer: object, length: int = 5000, depth: object = 0.5) -> dict[str, object]:
    return {
        "task": task.split("-")[0],
        "answer": json.dumps(answer),
        "answer_kind": "open",  # any but hidden: the scorer reads the answer's own type
        "context_length": length,
        "placed_depth": depth if isinstance(depth, list) else [depth],
    }


def test_the_decisions_are_many_and_cover_every_task_and_outcome() -> None:
    cases = DECISIONS["cases"]
    assert len(cases) >= 600
    kinds = Counter((c["task"], 0 < c["decision"] < 1 or c["decision"]) for c in cases)
    for task in TASKS:
        assert kinds[(task, 1.0)] and kinds[(task, 0.0)], task  # each task has right and wrong replies
    assert kinds[("counting-text", True)] and kinds[("counting-image", True)]  # partial soft accuracy
    assert DECISIONS["note"].startswith("Decisions of the official scorer")


@pytest.mark.parametrize("task", TASKS)
def test_every_held_out_reply_gets_the_official_decision(task: str) -> None:
    wrong = []
    for case in DECISIONS["cases"]:
        if case["task"] != task:
            continue
        ours = utils.process_results(_doc(task, case["answer"]), [case["response"]])["acc"]
        if ours != pytest.approx(case["decision"], abs=1e-12):
            wrong.append((case["answer"], case["response"], case["decision"], ours))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("heatmap", DECISIONS["heatmaps"], ids=lambda h: h["task"])
def test_the_per_length_scores_are_the_official_heat_maps(heatmap: dict[str, object]) -> None:
    rows = heatmap["rows"]
    assert isinstance(rows, list)
    cells = []
    for row in rows:
        result = utils.process_results(
            _doc(str(heatmap["task"]), row["answer"], row["context_length"], row["placed_depth"]), [row["response"]]
        )
        cells.append(tuple(result["score"]))
    assert scoring.length_scores(cells) == pytest.approx(heatmap["scores"], abs=1e-6)
    assert utils.official_score(cells) == pytest.approx(sum(heatmap["scores"]) / 11, abs=1e-6)


def test_the_overall_is_the_mean_of_the_six_tasks_per_length() -> None:
    per_task = [h["scores"] for h in DECISIONS["heatmaps"]]
    overall = [sum(column) / len(column) for column in zip(*per_task, strict=True)]
    assert overall == pytest.approx(DECISIONS["overall"], abs=1e-5)


def test_the_heat_map_quirks() -> None:
    assert scoring.heat_cell(999, [0.5]) == (0, 2)  # under 1K: bin 0, left out of the scores
    assert scoring.heat_cell(64000, [1.0]) == (11, 4)  # 1.0 counts as 0.99; 64K and over share the last bin
    assert scoring.heat_cell(5000, [0.6]) == (3, 2)  # 0.6 / 0.2 is 2.9999999999999996
    assert scoring.heat_cell(5000, [0.2, 0.4]) == (3, 1)  # several needles: their mean depth, 0.30000000000000004
    assert scoring.length_scores([(1, 0, 1.0)])[0] == pytest.approx(0.2)  # the four empty depth cells count 0


def test_a_reply_is_stripped_as_eval_internvl_writes_it() -> None:
    assert utils.process_results(_doc("retrieval-image", 1), ["  B\n"])["acc"] == 1.0
    assert utils.process_results(_doc("counting-text", "[1, 2]"), ["[1, 3]"])["acc"] == 0.5  # JSON text answer
