"""MM-NIAH beside MMLongBench's MM-NIAH sets in `harness report` (issue 65, item 4): both fixtures built by their
real builders into one data folder, the random baseline run on `mm_niah_val` and three MMLongBench MM-NIAH leaves
into one results folder, and the report's side-by-side table read back against the results file's own numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from builders.mm_niah import CONFIGS
from harness.outputs.results.model_results import ModelResults, load_results
from tasks.mm_niah import report
from tasks.mm_niah.scoring import LENGTH_LABELS
from tests.support.report_runs import report_text

# Image-needle retrieval at two lengths and text-needle counting at one: the random guesses score above 0 on all
# three in the fixture, so a cell read from the wrong task or length shows.
MMLONGBENCH_CONFIGS = ("niah_mmniah_ret_image_8k", "niah_mmniah_ret_image_16k", "niah_mmniah_count_text_8k")
HEADING = "### MM-NIAH beside MMLongBench's MM-NIAH sets (same model, %)"


@pytest.fixture(scope="module")
def data_dir(fixture_builds: Callable[..., Path]) -> Path:
    return fixture_builds(mm_niah=list(CONFIGS), mmlongbench=MMLONGBENCH_CONFIGS)


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    """The side-by-side table's header and rows, each a list of cells."""
    lines = text.splitlines()
    start = lines.index(HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    table = [line for line in lines[start:end] if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    return cells[0], cells[2:]


def test_the_report_sets_both_runs_numbers_side_by_side(data_dir: Path, tmp_path: Path, harness) -> None:  # noqa: ANN001
    tasks = ",".join(["mm_niah_val", *(f"mmlongbench_{c}" for c in MMLONGBENCH_CONFIGS)])
    run = harness("--tasks", tasks, "--model", "random", "--data_dir", data_dir, "--output_path", tmp_path)
    assert run.code == 0, run.err
    results = run.results("random")["results"]
    header, rows = _table(report_text(harness, tmp_path))

    # MM-NIAH's bins and MMLongBench's lengths on one axis; only tasks MMLongBench ran get rows, text needles first.
    assert header[:3] == ["task", "set", "overall"]
    assert header[3:] == [k.upper() for k in LENGTH_LABELS]  # 8K and 16K are bins of MM-NIAH's too
    assert [row[:2] for row in rows] == [
        ["counting_text", "MM-NIAH val, as released (n=6)"],
        ["counting_text", "MMLongBench (paper), fitted to each length"],
        ["retrieval_image", "MM-NIAH val, as released (n=6)"],
        ["retrieval_image", "MMLongBench (paper), fitted to each length"],
    ]
    data = load_results(tmp_path)["random"]
    for mm_niah, mmlongbench, name in ((rows[0], rows[1], "count_text"), (rows[2], rows[3], "ret_image")):
        task = f"mm_niah_{mm_niah[0]}_val"
        assert mm_niah[2] == f"{100 * results[task]['score,none']:.1f}"
        per_bin = report.length_scores(data, task)
        assert per_bin is not None and mm_niah[3:] == [f"{100 * v:.1f}" for v in per_bin]
        theirs = {k: results.get(f"mmlongbench_niah_mmniah_{name}_{k.lower()}") for k in header[3:]}
        assert mmlongbench[2] == ""
        assert mmlongbench[3:] == [f"{v['score,none']:.1f}" if v else "" for v in theirs.values()]
    assert rows[3][header.index("16K")] == f"{results['mmlongbench_niah_mmniah_ret_image_16k']['score,none']:.1f}"
    assert all(float(rows[k][header.index("8K")]) > 0 for k in (1, 3))  # numbers, not empty defaults


def _results(runs: list[dict[str, dict[str, float]]], ours: dict[str, dict[str, float]]) -> ModelResults:
    files = [(f"r{k}.json", {"results": run}) for k, run in enumerate(runs)]
    return ModelResults(results=ours, runs=files)  # type: ignore[arg-type]


def test_each_mmlongbench_set_gets_its_row_and_the_newest_run_wins(tmp_path: Path) -> None:
    ours = {"mm_niah_retrieval_text_test": {"acc,none": math.nan}}  # only the test split: its answers are private
    older = {"mmlongbench_niah_mmniah_ret_text_8k": {"score,none": 10.0}}
    newer = {
        "mmlongbench_niah_mmniah_ret_text_8k": {"score,none": 40.0},
        "mmlongbench_vlmevalkit_niah_mmniah_ret_text_256k": {"score,none": 20.0},
        "mmlongbench_vlmevalkit_as_paper_niah_mmniah_ret_text_256k": {"score,none": 25.0},
        "mmlongbench_v1_1_niah_mmniah_ret_text_8k": {"score,none": 30.0},
        "mmlongbench_mmniah_ret_8k": {"score,none": 99.0},  # a group of text and image needles: not one task
        "mmlongbench_niah_vh_single_8k": {"score,none": 99.0},  # another dataset
    }
    text = "\n".join(report.section("m", _results([older, newer], ours), tmp_path))
    header, rows = _table(text)
    assert header[-2:] == ["64K", "256K"]
    assert [row[1] for row in rows] == [
        "MM-NIAH val (N/A: the test split's answers are private)",
        "MMLongBench (paper), fitted to each length",
        "MMLongBench V1.1, fitted to each length",
        "MMLongBench (VLMEvalKit's rows and scorers), fitted to each length",
        "MMLongBench (VLMEvalKit's rows, the paper's scorers), fitted to each length",
    ]
    at = {k: header.index(k) for k in ("8K", "256K")}
    assert [(row[at["8K"]], row[at["256K"]]) for row in rows] == [
        ("", ""),
        ("40.0", ""),
        ("30.0", ""),
        ("", "20.0"),
        ("", "25.0"),
    ]
    assert "no item is shared" in text


def test_no_mmlongbench_mm_niah_run_no_table(tmp_path: Path) -> None:
    runs = [{"mmlongbench_niah_vh_single_8k": {"score,none": 50.0}}]
    ours = {"mm_niah_retrieval_text_val": {"score,none": 0.5}}
    assert HEADING not in report.section("m", _results(runs, ours), tmp_path)
