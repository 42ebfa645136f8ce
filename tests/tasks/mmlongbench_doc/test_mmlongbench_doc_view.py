"""MMLongBench-Doc's numbers as the pages show them (issue 76, item 2): a row's `f1` holds its score and the two flags
generalized F1 is aggregated from as fields, so a sample's page names them and shows no code as a score, `harness
compare` correlates no `f1` row (its values are no scores) while its F1 stays the results' F1, and the report's table
across models says why a run without a judge has no acc and F1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import cast

import pytest

from builders.mmlongbench_doc.fixture import SAMPLES
from harness.run.cli import main
from tests.support.judged_runs import judge_server, judged_run
from tests.support.results_runs import harness_run
from tests.support.view_app import view_client

pytestmark = pytest.mark.slow  # a build, judged runs, a comparison and a report
TASK = "mmlongbench_doc"


def extractor(body: dict[str, object]) -> str:
    """The gold for a reply of even length, "Not answerable" for an odd one: two seeds' replies differ, and so do
    the rows' flags."""
    analysis = cast(list[dict[str, str]], body["messages"])[1]["content"]
    found = re.fullmatch(r"\n\nQuestion:(.*)\nAnalysis:(.*)\n", analysis, re.S)
    assert found is not None
    (gold,) = [s[2] for s in SAMPLES if s[1] == found.group(1)]
    return f"Extracted answer: {gold if len(found.group(2)) % 2 == 0 else 'Not answerable'}\nAnswer format: String"


@pytest.fixture(scope="module")
def judged(doc_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`seed0/` and `seed1/`: the random model's replies read by the extractor, two seeds."""
    root = tmp_path_factory.mktemp("doc_view")
    with judge_server(extractor) as server:
        for seed in (0, 1):
            argv = [*judged_run(server, TASK, doc_dir), "--seed", seed, "--output_path", root / f"seed{seed}"]
            assert main([*map(str, argv), "--no_progress"]) == 0
    return root


def test_a_samples_page_names_the_f1_fields_and_shows_no_code_as_a_score(doc_dir: Path, tmp_path: Path) -> None:
    out = harness_run(tmp_path / "r", doc_dir, TASK, "random")
    record = json.loads((out / "random" / f"journal_{TASK}.jsonl").read_text().splitlines()[1])
    assert isinstance(record["metrics"]["unextracted_f1"], list)
    page = view_client(out).get("/sample", params={"model": "random", "task": TASK, "id": record["sample_id"]}).text
    metrics = re.search(r'<table class="kv metrics-of-sample">(.*?)</table></dd>', page, re.S)
    assert metrics is not None
    shown = re.findall(r"<td>([^<]*)</td><td[^>]*>([^<]*)</td>", metrics.group(1))
    assert [name for name, _ in shown if name in ("score", "answerable", "predicted")] == [
        "score",
        "answerable",
        "predicted",
    ]
    assert all(0.0 <= float(value) <= 1.0 for _, value in shown)  # was `unextracted_f1 6` on a row scored 0
    # the task's page is headed by its first headline metric the run holds (Acc, then F1, as the paper's table; a run
    # without the judge holds the unextracted ones: issue 89), not its last
    task_page = view_client(out).get("/samples", params={"model": "random", "task": TASK}).text
    assert re.search(r'id="headline">\s*unextracted_acc \(', task_page)


def test_compare_correlates_no_f1_row_and_keeps_its_f1(judged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = judged / "compared"
    assert main(["compare", str(judged / "seed0"), str(judged / "seed1"), "--out", str(out)]) == 0
    rows = {row["metric"]: row for row in json.loads((out / "compare.json").read_text())["rows"]}
    results = [
        json.loads(next((judged / seed / "random").glob("results_*.json")).read_text())["results"][TASK]
        for seed in ("seed0", "seed1")
    ]
    for metric in ("f1", "unextracted_f1"):
        row = rows[metric]
        assert row["correlation"] == "N/A" and row["a_only"] is None, metric  # was r 0.67 over the codes
        assert (row["value_a"], row["value_b"]) == pytest.approx(
            (results[0][f"{metric},none"], results[1][f"{metric},none"])
        )
    assert rows["f1"]["value_a"] != rows["f1"]["value_b"]  # the judge's fields read back from its log


def test_the_table_across_models_says_why_a_run_without_a_judge_has_no_f1(
    judged: Path, doc_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "both"
    (out / "random").mkdir(parents=True)
    for path in (judged / "seed0" / "random").iterdir():
        (out / "random" / path.name).write_bytes(path.read_bytes())
    harness_run(out, doc_dir, TASK, "constant", "--model_args", "answer=42")  # no --judge_model
    assert main(["report", str(out), "--no_figures"]) == 0
    text = (out / "report.md").read_text()
    across = text[text.index("## Across models") : text.index("## constant")]
    for metric in ("acc", "f1"):
        (line,) = [row for row in across.splitlines() if row.startswith(f"| {TASK} | {metric} |")]
        assert line.split(" | ")[2] == "—", line  # was empty, its only number (Acc) further down
    (why,) = [line for line in across.splitlines() if line.startswith("- *—*")]
    assert "only the task's judge writes" in why and f"`{TASK}` acc" in why and f"`{TASK}` f1" in why


def test_the_viewer_shows_the_judge_s_metrics_from_its_log(judged: Path) -> None:
    """The judge's metrics live in `judge_<task>.jsonl`, not in the journal: the viewer joins them as compare does, so
    a judged run's samples table sorts by acc and a sample's page shows its acc and its F1's fields."""
    folder = judged / "seed0"
    lines = [json.loads(line) for line in (folder / "random" / f"judge_{TASK}.jsonl").read_text().splitlines()]
    acc = {line["sample_id"]: line["metrics"]["acc"] for line in lines if "acc" in line.get("metrics", {})}
    assert acc and set(acc.values()) == {0.0, 1.0}
    client = view_client(folder)
    table = client.get("/samples", params={"model": "random", "task": TASK, "metric": "acc"}).text
    assert re.search(r'<option value="acc" selected', table), "acc is no column of the samples table"
    right = client.get("/samples", params={"model": "random", "task": TASK, "metric": "acc", "show": "right"}).text
    listed = re.findall(r'class="sample-link" href="[^"]*">([^<]+)</a>', right)
    assert sorted(listed) == sorted(s for s, v in acc.items() if v == 1.0)
    sample = next(s for s, v in acc.items() if v == 1.0)
    page = client.get("/sample", params={"model": "random", "task": TASK, "id": sample}).text
    metrics = re.search(r'<table class="kv metrics-of-sample">(.*?)</table></dd>', page, re.S)
    assert metrics is not None
    shown = dict(re.findall(r"<td>([^<]*)</td><td[^>]*>([^<]*)</td>", metrics.group(1)))
    assert float(shown["acc"]) == 1.0 and {"score", "answerable", "predicted"} <= set(shown)
