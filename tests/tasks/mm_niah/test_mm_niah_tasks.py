"""MM-NIAH's tasks on the fixture build: the leaves cover the builder's configs, the random baseline runs and
reports (the paper's table, per-length scores and heat maps), the paper's tables are consistent, and the viewer's
axes place each task and sample."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import matplotlib
import pytest

from builders.mm_niah import CONFIGS
from harness.outputs.results.model_results import ModelResults, load_results
from tasks.mm_niah import report, view_hooks

matplotlib.use("Agg")
TASK_DIR = Path(__file__).resolve().parents[3] / "tasks" / "mm_niah"


@pytest.fixture
def random_results(tmp_path: Path, built: Path, harness) -> ModelResults:  # noqa: ANN001
    run = harness(
        "--tasks", "mm_niah_val,mm_niah_test", "--model", "random", "--data_dir", built, "--output_path", tmp_path
    )
    assert run.code == 0, run.err
    return load_results(tmp_path)["random"]


def test_task_leaves_cover_exactly_the_builders_configs() -> None:
    leaves = {p.stem for p in TASK_DIR.glob("mm_niah_*.yaml")}
    assert leaves == {f"mm_niah_{name}" for name in CONFIGS}


def test_the_random_baseline_runs_and_reports(random_results: ModelResults, tmp_path: Path, harness) -> None:  # noqa: ANN001
    results = random_results.results
    assert 0 <= results["mm_niah_retrieval_image_val"]["score,none"] <= 1
    assert results["mm_niah_retrieval_image_test"]["acc,none"] == "N/A"  # the test split's answers are private
    per_length = report.length_scores(random_results, "mm_niah_retrieval_image_val")
    assert per_length is not None and len(per_length) == 11
    assert sum(per_length) / 11 == pytest.approx(results["mm_niah_retrieval_image_val"]["score,none"])
    lines = report.section("random", random_results, tmp_path)
    assert any(line.startswith("| retrieval_image_val | 6 |") for line in lines)
    assert (tmp_path / "mm_niah_heat_random.png").is_file()
    # issue 88: *cells*, how many of the heat map's 11 x 5 cells the rows fill (the score counts the others 0)
    assert "| task | n | cells | score | acc |" in "\n".join(lines)
    assert any(line.startswith("**Empty cells count 0 in the official score**") for line in lines)
    for task in ("retrieval_image_val", "reasoning_image_val"):
        cells = random_results.breakdowns[f"mm_niah_{task}"]["acc_by_length_depth"]
        grid = {f"{length}|{depth}" for length in report.LENGTH_LABELS for depth in report.DEPTH_LABELS}
        filled = sum(isinstance(cells[k].get("mean"), float) for k in grid & set(cells))  # records under 1K: no cell
        assert 1 <= filled <= 6 and any(line.startswith(f"| {task} | 6 | {filled}/55 |") for line in lines), task
        # issue 98: the empty cells said in words, and the score's interval for the filled cells' score
        said = f"- {task}: {55 - filled} of the heat map's 55 cells are empty and count 0, so its score is at most"
        assert any(line.startswith(said) for line in lines), task
        row = next(line for line in lines if line.startswith(f"| {task} | 6 |"))
        assert "[" in row.split("|")[4], row
    # beside the paper's (every cell filled), a run with empty cells gets no verdict: the gap is the empty cells' 0s
    beside = report.beside_paper("idefics2-8b", random_results)
    assert beside and beside[0] == "### MM-NIAH beside the paper's IDEFICS2 (%)"
    assert any(line.startswith("| retrieval_image | ") and line.endswith(" – |") for line in beside)
    tally = next(line for line in beside if line.startswith("Verdict beside the paper:"))
    # five tasks: the empty cells alone put them 5-20 points below; counting_image's paper score is 0.0: no such gap
    assert f"{55 - filled} of 55 heat-map cells empty, counted 0 (the paper's grid is full) (5)" in tally, tally


def test_headline_metrics_follow_the_papers_task_order() -> None:
    names = ["mm_niah_val", "mm_niah_reasoning_image_val", "mm_niah_retrieval_text_test", "mm_niah_retrieval_text_val"]
    assert report.headline_metrics(names) == [
        ("mm_niah_retrieval_text_val", "score"),
        ("mm_niah_reasoning_image_val", "score"),
        ("mm_niah_retrieval_text_test", "score"),
        ("mm_niah_val", "score"),
    ]


def test_the_papers_tables_agree_with_their_own_overall() -> None:
    """Table 2's overall is the mean of its length columns and of Tables 3-8's overall (to the tables' rounding)."""
    with open(TASK_DIR / "paper_results.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_model: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for r in rows:
        if r["value"]:
            by_model[r["model"]][(r["task"], r["length"])] = float(r["value"])
    assert {m.name for m in report.PAPER.models} <= set(by_model)
    for model, values in by_model.items():
        if ("all", "overall") not in values:
            continue
        lengths = [v for (task, length), v in values.items() if task == "all" and length != "overall"]
        tasks = [v for (task, length), v in values.items() if task != "all"]
        assert sum(lengths) / 11 == pytest.approx(values[("all", "overall")], abs=0.1), model
        assert sum(tasks) / 6 == pytest.approx(values[("all", "overall")], abs=0.1), model


def test_view_hooks_place_tasks_and_samples() -> None:
    assert view_hooks.task_axes("mm_niah_counting_image_test") == {
        "task": "counting",
        "needle": "image",
        "split": "test",
    }
    assert view_hooks.task_axes("mmneedle_m1_n2_k1_pos") == {}
    axes = view_hooks.sample_axes_of(
        "t", {"context_length": [999, 64000], "placed_depth": [[0.5], [1.0]], "num_images": [2, 3]}
    )
    assert axes["cell"] == ["<1k|0.4-0.6", "64k|0.8-1.0"]
