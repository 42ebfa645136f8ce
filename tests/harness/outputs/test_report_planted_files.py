"""`harness report` into a results folder reads back the figures and the figure manifest an earlier report wrote
there (to draw only what changed): a FIFO planted under either name is taken for a file it did not write, never
waited on (issue 49, item 3: the results folder is untrusted input; `read_bytes` waited forever)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.run.cli import main
from tests.support.deadline import within

TASK = "mmneedle_m1_n2_k1_pos"


def test_a_fifo_planted_as_a_figure_or_the_figure_manifest_is_drawn_over(tmp_path: Path, data_dir: Path) -> None:
    results = tmp_path / "results"
    argv = ["--tasks", TASK, "--model", "random", "--data_dir", str(data_dir), "--no_progress"]
    assert main([*argv, "--output_path", str(results)]) == 0
    assert main(["report", str(results), "--jobs", "1"]) == 0
    figures = sorted(results.glob("*.png"))
    assert figures, "the report draws MMNeedle's figures"
    for planted in (figures[0], results / ".report_figures.json"):
        planted.unlink()
        os.mkfifo(planted)
    with within(120, "harness report over a folder holding FIFOs"):
        assert main(["report", str(results), "--jobs", "1"]) == 0
    assert figures[0].is_file() and (results / ".report_figures.json").is_file()  # written anew, through no FIFO


def test_a_figure_manifest_nested_past_any_parser_is_drawn_over(tmp_path: Path, data_dir: Path) -> None:
    """The figure manifest is read back from the results folder: one nested deeper than json parses (a RecursionError,
    not a ValueError) was a traceback out of `harness report`; it is taken for no manifest."""
    results = tmp_path / "results"
    argv = ["--tasks", TASK, "--model", "random", "--data_dir", str(data_dir), "--no_progress"]
    assert main([*argv, "--output_path", str(results)]) == 0
    (results / ".report_figures.json").write_text("[" * 200_000)
    assert main(["report", str(results), "--jobs", "1"]) == 0
    assert (results / ".report_figures.json").read_text().startswith("{")
