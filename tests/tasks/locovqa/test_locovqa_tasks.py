"""LoCoVQA end to end on the offline build: `harness --tasks locovqa --model random` runs every task, the random
guesses score at chance, and `harness report` fits and draws accuracy against length for every model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builders.locovqa import CONFIGS, build_locovqa
from harness.config.task_index import TaskIndex
from harness.outputs.results.model_results import load_results
from tasks.locovqa import figures, report, series
from tests.support.paths import PROJECT

TASKS_DIR = PROJECT / "tasks" / "locovqa"


@pytest.fixture(scope="module")
def offline_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("locovqa_data")
    build_locovqa(["synthetic"], root, None, limit=2, cell_size=16, num_proc=2)
    return root


@pytest.fixture(scope="module")
def two_models(offline_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.run.cli import main

    out = tmp_path_factory.mktemp("locovqa_results")
    into_out = ["--data_dir", str(offline_build), "--output_path", str(out), "--no_progress"]
    assert main(["--tasks", "locovqa", "--model", "random", *into_out]) == 0
    constant_a = ["--model", "constant", "--model_args", "answer=A"]
    assert main(["--tasks", "locovqa_mmstar,locovqa_needle", *constant_a, *into_out]) == 0
    return out


def test_task_leaves_cover_exactly_the_builders_configs() -> None:
    index = TaskIndex()
    leaves = {t.dataset_name for name, t in index.tasks.items() if name.startswith("locovqa_")}
    assert leaves == set(CONFIGS)
    assert index.groups["locovqa"].task == ["locovqa_okvqa", "locovqa_mmstar", "locovqa_mnist", "locovqa_needle"]


def test_each_series_and_mode_has_one_number_and_no_group_pools_modes_or_series() -> None:
    """Issue 54: the report's summary and the viewer's index show LoCoVQA as one number per series and mode, its
    headline metric's unweighted mean over the six lengths (N/A unless every length ran); the groups above it pool
    nothing, as the paper keeps modes and series apart."""
    groups = TaskIndex().groups
    for task, metric in (
        ("okvqa", "exact_match"),
        ("mmstar", "accuracy"),
        ("mnist", "accuracy"),
        ("needle", "accuracy"),
    ):
        for mode in ("cmp", "int"):
            found = groups[f"locovqa_{task}_{mode}"]
            assert found.aggregate_metric_list == [{"metric": metric, "aggregation": "strict_mean"}]
            assert found.task == [f"locovqa_{task}_{mode}_{n}" for n in (1, 4, 9, 16, 25, 36)]
        assert groups[f"locovqa_{task}"].aggregate_metric_list == []
    assert groups["locovqa"].aggregate_metric_list == []


@pytest.mark.slow
def test_random_runs_every_task_and_guesses_at_chance(two_models: Path) -> None:
    data = load_results(two_models)["random"]
    assert len([t for t in data.results if series.LEAF.match(t)]) == len(CONFIGS)
    for name, entry in data.results.items():
        assert data.counters(name)["n_scored"] == data.counters(name)["sample_len"] > 0, name
        if "_okvqa_" in name:  # a word of the question is never the gold colour
            assert entry["exact_match,none"] == 0.0 and 0 < entry["bertscore_minilm_cos,none"] < 1
        if "_mmstar_" in name:
            assert data.reference(name, "chance") == pytest.approx(0.25) and entry["non_template,none"] == 0
        assert "chance,none" not in entry  # a constant, kept apart from the metrics (`references`)


@pytest.mark.slow
def test_report_fits_and_draws_every_model(two_models: Path, tmp_path: Path) -> None:
    from harness.outputs.report.report_md import write_report

    path = write_report(two_models, tmp_path)
    text = path.read_text()
    across = text.split("## LoCoVQA across models")[1].split("## ")[0]
    header = next(line for line in across.splitlines() if line.startswith("| series |"))
    assert header == "| series | constant (c) | constant (i) | random (c) | random (i) |"
    assert any(line.startswith("| MMStar | ") for line in across.splitlines())
    assert any(line.startswith("| Haystack-9 | ") for line in across.splitlines())
    assert (tmp_path / "locovqa_decay.png").stat().st_size > 10_000
    assert (tmp_path / "locovqa_needle_random.png").is_file()
    assert "| series | cmp exp | cmp log | cmp exp_offset | int exp | int log | int exp_offset |" in text
    figure = figures.decay_figure({m: series.series(d) for m, d in load_results(two_models).items()}, "test")
    lines = {line.get_label() for ax in figure.axes for line in ax.get_lines()}
    assert {"random (cmp)", "random (int)", "constant (cmp)", "constant (int)", "chance"} <= lines


@pytest.mark.slow  # the `two_models` runs of every LoCoVQA task
def test_open_answers_and_transcriptions_show_no_chance_level(two_models: Path, tmp_path: Path) -> None:
    """Issue 44: OK-VQA's three metrics and MNIST showed chance 0.000 where the random baseline scores 0.25-0.52 (a
    guess gets partial credit there); they show none, and are never marked below it."""
    from harness.outputs.report.report_md import write_report

    text = write_report(two_models, tmp_path).read_text()
    chance: dict[tuple[str, str], set[str]] = {}  # (series, mode) -> its chance cells, in every model's table
    for table in text.split("| series | mode | ")[1:]:
        for row in table.split("\n\n")[0].splitlines()[2:]:
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            chance.setdefault((cells[0], cells[1]), set()).add(cells[-1])
    for row in ("OK-VQA", "BERT", "ROUGE", "MNIST"):
        assert chance[(row, "cmp")] == chance[(row, "int")] == {report.NO_LEVEL}, row
    assert chance[("MMStar", "cmp")] == {"0.250"} and chance[("Needle", "int")] == {"0.100"}
    curves = series.series(load_results(two_models)["random"])
    assert all(not c.chance and not c.below_chance for c in curves if c.row in ("OK-VQA", "BERT", "ROUGE", "MNIST"))
    assert all(not c.chance for c in curves if c.row.startswith("Haystack-"))
    figure = figures.decay_figure({"random": curves}, "caption")
    drawn = {ax.get_title(): {line.get_label() for line in ax.get_lines()} for ax in figure.axes if ax.get_title()}
    assert "chance" in drawn["MMStar"] and "chance" not in drawn["OK-VQA ROUGE-L"]


@pytest.mark.slow  # the `two_models` runs of every LoCoVQA task
def test_the_decay_figure_tells_modes_chance_and_metrics_apart_and_says_its_data(
    two_models: Path, tmp_path: Path
) -> None:
    from harness.outputs.report.report_md import write_report
    from tests.support.report_runs import svg_texts

    models = load_results(two_models)
    figure = figures.decay_figure({m: series.series(d) for m, d in models.items()}, "caption")
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert len(labels) == len(set(labels)) and "chance" in labels and "Random" not in labels
    colours = {line.get_label(): line.get_color() for ax in figure.axes for line in ax.get_lines()}
    assert colours["random (cmp)"] != colours["random (int)"] and colours["constant (cmp)"] != colours["constant (int)"]
    assert len({colours[f"{m} ({mode})"] for m in ("random", "constant") for mode in ("cmp", "int")}) == 4
    ylabels = {ax.get_title(): ax.get_ylabel() for ax in figure.axes if ax.get_title()}
    assert ylabels["OK-VQA BERTScore (MiniLM cos)"] == "BERTScore (MiniLM cosine)"
    assert ylabels["OK-VQA ROUGE-L"] == "ROUGE-L F1" and ylabels["OK-VQA exact match"] == "exact match"
    assert ylabels["MMStar"] == "accuracy"

    write_report(two_models, tmp_path)
    texts = " ".join(svg_texts(tmp_path / "locovqa_decay.svg"))
    build = models["random"].task_data("locovqa_needle_cmp_1").origin
    assert "Data: synthetic source" in texts and build.content_hash[:19] in texts  # what data, which build
    assert "chance" in texts and "ROUGE-L F1" in texts


@pytest.mark.slow
def test_leaves_for_other_lengths_run_from_an_include_path(offline_build: Path, tmp_path: Path) -> None:
    from harness.run.cli import main

    build_locovqa(["synthetic"], offline_build, ["needle_int_3"], limit=2, cell_size=16)
    subprocess.run(
        [sys.executable, str(TASKS_DIR / "_make_yamls.py"), "--lengths", "3", "--out", str(tmp_path / "t")], check=True
    )
    assert (
        main(
            [
                "--tasks",
                "locovqa_needle_int_3",
                "--include_path",
                str(tmp_path / "t"),
                "--model",
                "random",
                "--data_dir",
                str(offline_build),
                "--output_path",
                str(tmp_path / "r"),
                "--no_progress",
            ]
        )
        == 0
    )
    data = load_results(tmp_path / "r")["random"]
    assert data.counters("locovqa_needle_int_3")["n_scored"] == 6


@pytest.mark.slow  # the `two_models` runs of every LoCoVQA task
def test_a_model_the_paper_evaluated_is_set_beside_its_published_r2(two_models: Path, tmp_path: Path) -> None:
    models = load_results(two_models)
    assert report.paper_model_for("llava-hf/llava-1.5-7b-hf", models["random"]) == "LLaVA-1.5"
    assert report.paper_model_for("random", models["random"]) is None
    published = report.paper_r2()
    assert published[("MMStar", "LLaVA-1.5", "cmp")] == ".924***"
    assert published[("MMMU", "PaliGemma", "cmp")] == ".923↓"
    assert ("Haystack-9", "Gemini 1.0", "cmp") not in published  # "-" in Table 3
    lines = report.paper_table({"llava-hf/llava-1.5-7b-hf": models["random"]})
    assert lines[0].startswith("**llava-hf/llava-1.5-7b-hf** is the paper's LLaVA-1.5")
    assert "| MMStar | " in "\n".join(lines) and ".924***" in "\n".join(lines)
    # The run has interleaved curves too, which the paper did not run for a single-image model: N/A beside ours.
    (header,) = [line for line in lines if line.startswith("| series |")]
    assert header == "| series | cmp ours | cmp paper | int ours | int paper |"
    mmstar = next(line for line in lines if line.startswith("| MMStar |")).split(" | ")
    assert mmstar[-1] == "N/A |" and mmstar[2].startswith(".924***")
    assert any(
        line.startswith("N/A (int): the paper did not run LLaVA-1.5 in this setting: a single-image") for line in lines
    )
    # The r² table across models names each run by the paper's model, as Tables 2-3 print it.
    across = report.across_models({"llava-hf/llava-1.5-7b-hf": models["random"], "random": models["random"]}, tmp_path)
    columns = next(line for line in across if line.startswith("| series |"))  # the r² table, then the paper's
    assert "| LLaVA-1.5 (c): llava-hf/llava-1.5-7b-hf | LLaVA-1.5 (i): llava-hf/llava-1.5-7b-hf |" in columns
    assert "| random (c) | random (i) |" in columns
