"""`harness report`: the markdown, where the numbers came from (data provenance and the warning that a
synthetic or limited run is not the paper's), the cross-model table and the MMNeedle figures it links."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from harness.outputs.results.model_results import load_results
from tests.support.report_runs import evaluate as _evaluate
from tests.support.report_runs import report_text as _report


def _part(text: str, model: str) -> str:
    """One model's part of the report (from its heading to the next model's)."""
    start = text.index(f"## {model}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _wilson_cell(p: float, stderr: float, clustered: float, clusters: int) -> str:
    """A proportion as the report shows it, on one scale (percent): Wilson's 95 % interval (statsmodels) on the
    effective n, p(1 - p) / SE² with SE the larger error; the number of clusters where the rows have no spread."""
    from statsmodels.stats.proportion import proportion_confint

    error = max(stderr, clustered)
    n = p * (1 - p) / error**2 if error > 0 and 0 < p < 1 else clusters
    low, high = proportion_confint(p * n, n, method="wilson")
    return f"{100 * p:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _cell(results: dict[str, Any], task: str, metric: str) -> str:
    entry = results["results"][task]
    clusters = results["uncertainty"][task][metric]["n_clusters"]
    return _wilson_cell(
        entry[f"{metric},none"], entry[f"{metric}_stderr,none"], entry[f"{metric}_stderr_clustered,none"], clusters
    )


@pytest.mark.slow
def test_report_writes_markdown_and_plots(tmp_path: Path, data_dir: Path, harness) -> None:
    out = tmp_path / "results"
    random = _evaluate(harness, out, data_dir, "random")
    constant = _evaluate(harness, out, data_dir, "constant", "--model_args", "answer=-1")
    text = _report(harness, out)
    assert "## random" in text and "## constant" in text
    assert "| mmneedle_m1_n2_k1_neg | 1.0 | 12 | 0 | existence_acc | 1.0000 | 0.0000 |" in text  # constant -1
    # the paper's layout: positives' existence (format validity beside it)/index/exact, negatives' existence; a 0 %
    # or 100 % of 12 rows with no spread: Wilson's interval on its 12 items, never "± 0.0"
    hit, miss = "100.0 [75.8, 100.0]", "0.0 [0.0, 24.2]"
    assert f"| M=1 N=2 K=1 | 12 | {miss} | {hit} | {miss} | {miss} |  |  | 12 | {hit} | {hit} |" in text
    assert "± 0.0" not in text
    for name in (
        "mmneedle_cells_random.png",
        "mmneedle_depth_random.png",
        "mmneedle_cells_constant.png",
        "mmneedle_depth_constant.png",
    ):
        assert f"]({name})" in text
        with Image.open(out / name) as image:
            assert image.format == "PNG" and image.width > 600 and image.height > 600
    # Several models: their headline metrics side by side, models by name, tasks in the paper's order.
    across = text[text.index("## Across models") : text.index("## constant")]
    rows = [line for line in across.splitlines() if line.startswith("| mmneedle")]
    assert "| task | metric (0-100) | constant | random |" in across
    assert rows == [
        f"| {task} | {metric} | {_cell(constant, task, metric)} | {_cell(random, task, metric)} |"
        for task, metric in (
            ("mmneedle_m1_n2_k1_pos", "exact_acc"),
            ("mmneedle_m1_n2_k1_neg", "existence_acc"),
            ("mmneedle_m10_n1_k2_pos", "exact_acc"),
        )
    ]
    assert rows[0].split(" | ")[2] == miss and rows[1].split(" | ")[2] == hit


@pytest.mark.slow
def test_report_says_what_data_each_task_ran_on_and_warns(tmp_path: Path, data_dir: Path, harness) -> None:
    out = tmp_path / "results"
    _evaluate(harness, out, data_dir, "random")
    _evaluate(harness, out, data_dir, "constant", "--model_args", "answer=-1", "--limit", "5")
    text = _report(harness, out)
    manifest = json.loads((data_dir / "mmneedle" / "build_manifest.json").read_text())
    content_hash = manifest["content_hash"]
    # the config's content as read: its files' sha256s (issue 99)
    config_files = manifest["configs"]["m1_n2_k1"]["files"]
    config_hash = hashlib.sha256(" ".join(f["sha256"] for f in config_files).encode()).hexdigest()
    assert "> **Warning:** some of these results ran on data that is synthetic, limited" in text

    constant = _part(text, "constant")
    for reason in (
        "> - synthetic images (source `synthetic`), not the paper's (3 of 3 tasks)",
        "> - a build capped by `--limit 12` (3 of 3 tasks)",
        "> - a run with `--limit 5`, which evaluates only the first samples of each task (3 of 3 tasks)",
    ):
        assert reason in constant
    builder, images = (
        f"{manifest['builder']} {manifest['builder_version']}",
        manifest["request"]["source"]["num_images"],
    )
    assert (
        f"| D1 | `{data_dir / 'mmneedle'}` ({builder}) | synthetic (`synthetic`, {images:,} images) | "
        f"regenerate | paper | 12 | 5 | 3 | 15 of 36 | `{content_hash}` |"
    ) in constant
    assert f"| mmneedle_m1_n2_k1_pos | D1 | 24 | 12 | 5 | {config_hash} |" in constant
    caption = (
        f"*Data: synthetic source, regenerate build, build --limit 12, run --limit 5, {content_hash[:19]}. "
        "NOT comparable with the paper's numbers.*"
    )
    assert caption in constant

    random = _part(text, "random")
    assert "| regenerate | paper | 12 | none | 3 | 36 of 36 |" in random  # recorded: the run had no --limit
    assert "> - a build capped by `--limit 12` (3 of 3 tasks)" in random and "a run with `--limit" not in random
    # The two models ran different numbers of samples: the cross-model table says so on every row.
    across = text[text.index("## Across models") : text.index("## constant")]
    assert [line.split(" | ")[0] for line in across.splitlines() if line.startswith("| mmneedle")] == [
        "| mmneedle_m1_n2_k1_pos ‡",
        "| mmneedle_m1_n2_k1_neg ‡",
        "| mmneedle_m10_n1_k2_pos ‡",
    ]


def _rewrite_datasets(model_dir: Path, change) -> None:
    """Edit what a real results file records about its data (stands for a build this test cannot afford)."""
    path = next(model_dir.glob("results_*.json"))
    results = json.loads(path.read_text())
    for task in list(results["datasets"]):
        change(results["datasets"], task)
    path.write_text(json.dumps(results))


@pytest.mark.slow  # a run and three reports
def test_no_warning_on_the_papers_data_and_one_when_the_origin_is_unknown(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    out = tmp_path / "results"
    _evaluate(harness, out, data_dir, "constant", "--model_args", "answer=-1")

    def as_coco(datasets: dict[str, Any], task: str) -> None:  # the paper's rows of a COCO build, uncapped
        datasets[task].update(limit=None, source={"kind": "coco", "spec": "coco=/data/coco2014", "num_images": 40504})
        assert set(datasets[task].pop("caveats")) == {"synthetic", "limited"}  # what the synthetic build said

    _rewrite_datasets(out / "constant", as_coco)
    text = _report(harness, out)
    assert "| coco (`coco=/data/coco2014`, 40,504 images) | regenerate | paper | none | none | 3 |" in text
    assert "Not comparable" not in text and "**Warning:**" not in text and "NOT comparable" not in text
    assert "## Across models" not in text  # one model: nothing to set beside it

    # A caveat only the build knew (no source kind or limit says it) is reported in the build's own words.
    _rewrite_datasets(
        out / "constant",
        lambda datasets, task: datasets[task].update(caveats={"partial": "questions of one language only"}),
    )
    text = _report(harness, out)
    assert "> - questions of one language only (3 of 3 tasks)" in text

    _rewrite_datasets(out / "constant", lambda datasets, task: datasets.pop(task))
    text = _report(harness, out)
    assert (
        "> - the data's origin is not recorded (no build manifest), so comparability cannot be checked (3 of 3 tasks)"
    ) in text
    assert "*Data: data origin not recorded. NOT comparable with the paper's numbers.*" in text


def test_counters_are_the_bookkeeping_fields_only(tmp_path: Path, data_dir: Path, harness) -> None:
    out = tmp_path / "results"
    results = _evaluate(harness, out, data_dir, "constant", "--model_args", "answer=-1", "--limit", "4")
    data = load_results(out)["constant"]
    entry = results["sample_counts"]["mmneedle_m1_n2_k1_neg"]
    counters = data.counters("mmneedle_m1_n2_k1_neg")
    assert counters == entry and not any(k.startswith("n_") for k in results["results"]["mmneedle_m1_n2_k1_neg"])
    assert counters["sample_len"] == counters["n_scored"] == 4 and counters["n_error"] == 0


@pytest.mark.slow  # two runs and a report
def test_cross_model_table_without_a_benchmark_hook(tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness) -> None:
    """A benchmark without `headline_metrics`: each task's and group's first metric, in natural order."""
    out = tmp_path / "results"
    args = ("--include_path", toy_tasks, "--data_dir", toy_dir, "--output_path", out)
    for model, extra in (("random", ()), ("constant", ("--model_args", "answer=red"))):
        run = harness("--tasks", "toy,toy_colors", "--model", model, *extra, *args)
        assert run.code == 0, run.err
    random, constant = (load_results(out)[m] for m in ("random", "constant"))
    text = _report(harness, out)
    across = text[text.index("## Across models") : text.index("## constant")]
    rows = [line for line in across.splitlines() if line.startswith("| toy")]

    def cell(data, name: str) -> str:  # a benchmark that declares no scale: proportions shown as percentages
        from harness.outputs.results.estimates import Estimate

        entry = data.results.get(name) or data.groups[name]
        source = data.sources[name]["uncertainty"][name]["acc"]
        p, stderr, clustered = (entry[f"acc{part},none"] for part in ("", "_stderr", "_stderr_clustered"))
        # the interval by the report's rule (its figures: tests/harness/outputs/test_interval_korn_graubard.py)
        low, high = Estimate(p, stderr, clustered, source["n"], source["n_clusters"], 1.0).interval()
        return f"{100 * p:.1f} [{100 * low:.1f}, {100 * high:.1f}]"

    assert rows == [
        f"| {name} | acc | {cell(constant, name)} | {cell(random, name)} |"
        for name in ("toy", "toy_colors", "toy_pairs")
    ]


def test_report_on_a_folder_without_results(tmp_path: Path, harness) -> None:
    run = harness("report", tmp_path)
    assert run.code == 2 and "no results_*.json" in run.err


def test_report_on_a_mistyped_folder_creates_nothing(tmp_path: Path, harness) -> None:
    run = harness("report", tmp_path / "resluts")
    assert run.code == 2 and "resluts: no such folder; give the folder a run wrote" in run.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["report", "view"])
def test_a_missing_folder_is_matched_only_to_a_results_folder_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Issue 89: `harness report results` in the repository answered "did you mean tests?" (its own tests folder);
    the folder suggested is one a run wrote (a results file in it or its model folder), never another close name;
    where none is beside it, the one of its name a folder down (`make demo`'s `demo_out/results`)."""
    from harness.run.cli import main

    (tmp_path / "tests").mkdir()
    assert main([command, str(tmp_path / "results")]) == 2
    assert capsys.readouterr().err.strip().endswith("no such folder; give the folder a run wrote (its --output_path)")
    (tmp_path / "demo_out" / "results" / "random").mkdir(parents=True)
    (tmp_path / "demo_out" / "results" / "random" / "results_2026-01-01T00-00-00.json").write_text("{}")
    assert main([command, str(tmp_path / "results")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"; did you mean {tmp_path / 'demo_out' / 'results'}?")
    (tmp_path / "result" / "random").mkdir(parents=True)
    (tmp_path / "result" / "random" / "results_2026-01-01T00-00-00.json").write_text("{}")
    assert main([command, str(tmp_path / "results")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"; did you mean {tmp_path / 'result'}?")


def test_report_hooks_of_a_folder_a_results_file_names_run_only_when_given(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness
) -> None:
    """A results folder from elsewhere records an --include_path whose report hook is code: the report names the
    folder and imports nothing from it; given to `harness report --include_path`, its hook runs."""
    import shutil

    out = tmp_path / "results"
    run = harness(
        "--tasks", "toy_colors", "--include_path", toy_tasks, "--model", "constant", "--model_args", "answer=red",
        "--data_dir", toy_dir, "--output_path", out,
    )  # fmt: skip
    assert run.code == 0, run.err
    planted = Path(shutil.copytree(toy_tasks, tmp_path / "their_tasks"))
    mark = tmp_path / "imported"
    (planted / "planted_report.py").write_text(
        f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n\n"
        "from harness.config.benchmark import BenchmarkDeclaration\nfrom harness.outputs.report.hooks import ReportHooks\n\n"
        "def section(model, data, out_dir):\n    return ['## their section', '']\n\n"
        "BENCHMARK = BenchmarkDeclaration('Theirs', report=ReportHooks(section=section))\n"
    )
    yaml_file = planted / "_toy.yaml"
    yaml_file.write_text(yaml_file.read_text() + "benchmark: !function planted_report.BENCHMARK\n")
    (path,) = out.rglob("results_*.json")
    results = json.loads(path.read_text())
    results["config"]["include_path"] = [str(planted)]
    path.write_text(json.dumps(results))

    untrusted = harness("report", out, "--no_figures")
    assert untrusted.code == 0, untrusted.err
    assert f"not read: the task folders the results files record ({planted})" in untrusted.err
    assert not mark.exists() and "their section" not in (out / "report.md").read_text()

    trusted = harness("report", out, "--no_figures", "--include_path", planted)
    assert trusted.code == 0 and "not read" not in trusted.err
    assert mark.exists() and "## their section" in (out / "report.md").read_text()
