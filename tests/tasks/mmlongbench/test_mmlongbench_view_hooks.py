"""MMLongBench's hooks for `harness view` (`tasks/mmlongbench/view_hooks.py`): VH's needle image found from the
example's rows at its other depths (the release does not label it) and outlined, each task's axes across tasks, and
the page a row of the report's tables opens."""

from __future__ import annotations

from tasks.mmlongbench import benchmark
from tasks.mmlongbench.view_hooks import sample_marks, task_axes, viewer_row

HAYSTACK = ["h0", "h1", "h2", "h3", "h4"]


def _row(images: list[str], dataset: str = "vh_single") -> dict[str, object]:
    return {"dataset": dataset, "source_id": "vh_single_0", "image_sha256": images}


def _at(position: int) -> list[str]:
    return [*HAYSTACK[:position], "needle", *HAYSTACK[position:]]


def test_the_vh_needle_is_the_image_that_moves_between_the_examples_depths() -> None:
    for position in range(6):
        siblings = [_row(_at(other)) for other in range(6) if other != position]
        (mark,) = sample_marks(_row(_at(position)), "Yes", siblings)
        assert (mark["image"], mark["kind"], mark["n"]) == (position, "gold", 1), position
    # A neighbour swapped with the needle is no needle: the other depths tell them apart.
    assert [m["image"] for m in sample_marks(_row(_at(0)), "", [_row(_at(1)), _row(_at(3))])] == [0]


def test_vh_multi_needles_that_swap_places_are_each_outlined() -> None:
    mine = ["a", "n1", "b", "n2", "c"]
    swapped = ["a", "n2", "b", "n1", "c"]
    assert [m["image"] for m in sample_marks(_row(mine, "vh_multi"), "", [_row(swapped, "vh_multi")])] == [1, 3]


def test_no_outline_without_the_other_depths_or_outside_vh() -> None:
    assert sample_marks(_row(_at(2)), "", []) == []
    assert sample_marks(_row(_at(2), "infoseek"), "", [_row(_at(3), "infoseek")]) == []
    assert sample_marks(_row(_at(2)), "", [_row(["other", *HAYSTACK])]) == []  # not the same images


def test_each_task_has_its_category_dataset_and_length_and_the_report_rows_their_pages() -> None:
    assert task_axes("mmlongbench_niah_vh_single_8k") == {"category": "NIAH", "dataset": "vh_single", "length": "8k"}
    assert task_axes("mmlongbench_docvqa_mmlongbench_doc_128k")["dataset"] == "mmlongbench_doc"
    assert task_axes("mmlongbench_8k") == {} and benchmark.BENCHMARK.view.task_axes is task_axes
    # another version's tasks say which, on the same axes
    assert task_axes("mmlongbench_v1_1_niah_vh_single_8k") == {
        **task_axes("mmlongbench_niah_vh_single_8k"),
        "version": "v1_1",
    }
    assert task_axes("mmlongbench_vlmevalkit_as_paper_vrag_viquae_512k")["version"] == "vlmevalkit_as_paper"
    assert task_axes("mmlongbench_vlmevalkit_docvqa_slidevqa_256k") == {
        "category": "DocVQA",
        "dataset": "slidevqa",
        "length": "256k",
        "version": "vlmevalkit",
    }
    assert viewer_row(["category", "8k"], ["ICL", "53.1"]) == ("mmlongbench", {"category": "ICL"})
    assert viewer_row(["dataset", "metric", "8k"], ["food101", "score", "1"]) == ("mmlongbench", {"dataset": "food101"})
    assert viewer_row(["ablation", "official set"], ["triviaqa", "x"]) == (
        "mmlongbench_ablation",
        {"dataset": "triviaqa"},
    )
    assert viewer_row(["config"], ["M=1 N=2 K=1"]) is None
