"""LoCoVQA's hooks for `harness view` (`tasks/locovqa/view_hooks.py`): the question image outlined where the build
put it (a cell of the composed grid, or one of the interleaved images), each task's axes across tasks, and the page a
row of the report's tables opens."""

from __future__ import annotations

from tasks.locovqa import benchmark
from tasks.locovqa.view_hooks import sample_marks, task_axes, viewer_row


def test_the_question_image_is_outlined_in_its_grid_cell_or_as_its_own_image() -> None:
    composed = {"mode": "cmp", "context_length": 9, "grid_side": 3, "content_positions": [5]}
    assert [(m["image"], m["row"], m["col"], m["n"]) for m in sample_marks(composed, "")] == [(0, 2, 3, 3)]
    digits = {"mode": "cmp", "context_length": 16, "grid_side": 4, "content_positions": [0, 15]}
    assert [(m["row"], m["col"]) for m in sample_marks(digits, "")] == [(1, 1), (4, 4)]
    interleaved = {"mode": "int", "context_length": 9, "grid_side": 0, "content_positions": [7]}
    (mark,) = sample_marks(interleaved, "")
    assert (mark["kind"], mark["image"], mark["n"], mark["legend"]) == ("gold", 7, 1, "question image")
    assert sample_marks({"mode": "cmp", "grid_side": 2, "content_positions": [4, -1, "x"]}, "") == []  # off the grid


def test_each_task_has_its_source_mode_and_length_and_the_report_rows_their_pages() -> None:
    assert task_axes("locovqa_mmstar_cmp_16") == {"source": "mmstar", "mode": "cmp", "length": "16"}
    # the viewer reads it in the benchmark's declaration
    assert task_axes("locovqa") == {} and benchmark.BENCHMARK.view.task_axes is task_axes
    assert viewer_row(["series", "mode", "n=1"], ["MMBench", "int", "0.5"]) == (
        "locovqa",
        {"source": "mmstar", "mode": "int"},
    )
    assert viewer_row(["series", "cmp exp"], ["Haystack-4", ".1"]) == ("locovqa", {"source": "mnist"})
    assert viewer_row(["task", "mode", "length", "n"], ["needle", "cmp", "16", "2"]) == ("locovqa_needle_cmp_16", {})
    assert viewer_row(["config"], ["M=1 N=2 K=1"]) is None
