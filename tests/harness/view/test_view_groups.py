"""`harness view` across a benchmark (issue 44): a group's page with the benchmark's grid across its tasks, each cell
opening the samples behind it; the group URL without a model; report.md's table rows linked to their pages; the
question image outlined for LoCoVQA and MMLongBench VH; metric lists as tables and the gold without JSON quotes."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support.results_runs import harness_run
from tests.support.view_app import view_client

REPO = Path(__file__).resolve().parents[3]
NEEDLE = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k2_pos", "mmneedle_m1_n2_k5_pos"]


def _count(page: str) -> str:
    found = re.search(r'id="count">(\d+ of \d+ samples)', page)
    return found.group(1) if found else ""


def _links(page: str, kind: str) -> list[str]:
    return [html.unescape(href) for href in re.findall(rf'class="{kind}" href="([^"]+)"', page)]


@pytest.fixture(scope="module")
def needle_results(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """MMNeedle's random baseline on four tasks (its journals hold the K = 2 and K = 5 metric lists), the constant
    answer on the K = 1 ones, and the report."""
    out = tmp_path_factory.mktemp("view_groups")
    harness_run(out, data_dir, ",".join(NEEDLE), "random")
    harness_run(out, data_dir, ",".join(NEEDLE[:2]), "constant", "--model_args", "answer=-1")
    assert main(["report", str(out), "--jobs", "1"]) == 0
    return out


def test_a_group_page_draws_the_benchmarks_grid_and_each_cell_opens_its_samples(needle_results: Path) -> None:
    client = view_client(needle_results)
    page = client.get("/samples", params={"model": "random", "task": "mmneedle"})
    assert page.status_code == 200 and _count(page.text) == "48 of 48 samples"
    assert sorted(_links(page.text, "member-link")) == sorted(f"/samples?model=random&task={t}" for t in NEEDLE)
    cells = _links(page.text, "grid-link")  # M x N, one grid per K and set: one config each here
    assert len(cells) == 4 and "/samples?model=random&task=mmneedle&ax.K=1&ax.set=positives&ax.M=1&ax.N=2" in cells
    for cell in cells:
        behind = client.get(cell)
        assert behind.status_code == 200 and _count(behind.text) == "12 of 48 samples", cell
        assert 'class="h' in behind.text and " selected" in behind.text  # the cell chosen stays marked
    rows = _links(client.get(cells[0]).text, "sample-link")
    assert rows and all("task=mmneedle_m1_n2_k1_pos" in row for row in rows)
    assert client.get(rows[0]).status_code == 200
    by_task = client.get("/samples", params={"model": "random", "task": "mmneedle", "ax.task": NEEDLE[2]})
    assert _count(by_task.text) == "12 of 48 samples"


def test_a_group_url_without_a_model_opens_the_model_that_ran_it_or_the_two_side_by_side(
    needle_results: Path, tmp_path: Path
) -> None:
    client = view_client(needle_results)
    both = client.get("/samples", params={"task": "mmneedle_k1"}, follow_redirects=False)
    assert both.status_code == 303 and both.headers["location"] == "/samples?task=mmneedle_k1&model=constant&vs=random"
    one = client.get("/samples", params={"task": "mmneedle_k2", "show": "wrong"}, follow_redirects=False)
    assert one.status_code == 303 and one.headers["location"] == "/samples?task=mmneedle_k2&show=wrong&model=random"
    assert client.get("/samples", params={"task": "mmlongbench_8k"}).status_code == 404  # no model ran it
    assert client.get("/samples", params={"task": "*"}).status_code == 404  # a pattern names no group
    # A third model (the random run again, under another name): each one's value, and every two side by side.
    three = tmp_path / "three"
    shutil.copytree(needle_results, three)
    shutil.copytree(three / "random", three / "again")
    for path in (three / "again").glob("results_*.json"):
        run = json.loads(path.read_text())
        run["config"]["model_name"] = "again"
        path.write_text(json.dumps(run))
    task = NEEDLE[0]
    choose = view_client(three).get("/samples", params={"task": task})
    assert choose.status_code == 200 and _links(choose.text, "model-link") == [
        f"/samples?task={task}&model={model}" for model in ("again", "constant", "random")
    ]
    assert _links(choose.text, "beside-link") == [
        f"/samples?model={a}&task={task}&vs={b}"
        for a, b in (("again", "constant"), ("again", "random"), ("constant", "random"))
    ]
    report = (needle_results / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith(f"| {task} | exact_acc |"))
    across = [cell.strip() for cell in row.strip("|").split("|")]
    shown = [html.unescape(cell) for cell in re.findall(r'class="shown">(.*?)</span>', choose.text)]
    assert shown == [across[3], across[2], across[3]]  # "again" is the random run; report.md's cells


def test_every_table_row_of_report_md_links_to_its_page(needle_results: Path) -> None:
    client = view_client(needle_results)
    report = client.get("/report/").text
    rows = [row for row in re.findall(r"<tr>(.*?)</tr>", report, re.S) if "<td" in row]
    data_rows = [row for row in rows if re.search(r"<td>(D\d+|tasks run|samples (not )?scored)", row)]
    assert rows and all('class="row-link"' in row for row in rows if row not in data_rows)
    links = {html.unescape(href) for href in re.findall(r'<a href="([^"]+)" class="row-link"', report)}
    assert "/samples?model=random&task=mmneedle&ax.M=10&ax.N=1&ax.K=2" in links  # the paper's table, by config
    assert "/samples?model=constant&task=mmneedle_m1_n2_k1_neg" in links  # a task's row in a model's part
    assert all(client.get(link).status_code == 200 for link in links)
    assert "row-link" not in (needle_results / "report.md").read_text()  # the file is the report's, unchanged


def test_metric_lists_show_as_tables(needle_results: Path) -> None:
    client = view_client(needle_results)
    table = client.get("/samples", params={"model": "random", "task": "mmneedle_m10_n1_k2_pos"}).text
    page = client.get(_links(table, "sample-link")[0]).text
    assert page.count('<table class="metric-list">') >= 4  # by cell, by depth, individual index and exact
    assert not re.search(r"<td>\[\[", page)  # no list printed as Python's repr


@pytest.fixture(scope="module")
def locovqa_and_vh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LoCoVQA's synthetic build (the needle in a composed and an interleaved context) and MMLongBench's offline
    fixture (VH-Single and InfoSeek at 8K), each run by the random baseline with sample logs."""
    from builders.locovqa import build_locovqa
    from builders.mmlongbench.build import build_mmlongbench

    root = tmp_path_factory.mktemp("view_groups_builds")
    configs = ["needle_cmp_4", "needle_int_4", "needle_cmp_9", "mnist_cmp_4"]
    build_locovqa(["synthetic"], root / "data", configs, limit=2, cell_size=16)
    build_mmlongbench(source="fixture", out_dir=root / "data", configs=["niah_vh_single_8k", "vrag_infoseek_8k"])
    tasks = [f"locovqa_{c}" for c in configs] + ["mmlongbench_niah_vh_single_8k", "mmlongbench_vrag_infoseek_8k"]
    return harness_run(root / "results", root / "data", ",".join(tasks), "random")


def _marks(page: str) -> list[tuple[str, str, str]]:
    return re.findall(r'<rect class="mark-(\w+)" x="(\d+)" y="(\d+)"', page)


@pytest.mark.slow
def test_the_question_image_is_outlined_for_locovqa_and_vh_and_their_groups_draw_their_grids(
    locovqa_and_vh: Path,
) -> None:
    client = view_client(locovqa_and_vh)
    model = "random"
    for task in ("locovqa_needle_cmp_4", "locovqa_needle_int_4", "mmlongbench_niah_vh_single_8k"):
        table = client.get("/samples", params={"model": model, "task": task}).text
        for link in _links(table, "sample-link")[:3]:
            page = client.get(link).text
            marks = _marks(page)
            assert len(marks) == 1 and marks[0][0] == "gold", (task, link, marks)
            if task == "mmlongbench_niah_vh_single_8k":
                assert '<pre class="text gold">Yes</pre>' in page or '<pre class="text gold">No</pre>' in page
                assert "needle image" in page
            else:
                assert "question image" in page
    locovqa = client.get("/samples", params={"model": model, "task": "locovqa"}).text
    cells = _links(locovqa, "grid-link")
    assert "/samples?model=random&task=locovqa&ax.source=needle&ax.mode=cmp&ax.length=9" in cells
    total = int(_count(locovqa).split()[0])
    assert len(cells) == 4 and sum(int(_count(client.get(cell).text).split()[0]) for cell in cells) == total
    mmlongbench = client.get("/samples", params={"model": model, "task": "mmlongbench"}).text
    assert set(_links(mmlongbench, "grid-link")) == {
        "/samples?model=random&task=mmlongbench&ax.category=VRAG&ax.length=8k",
        "/samples?model=random&task=mmlongbench&ax.category=NIAH&ax.length=8k",
    }


def test_a_wrongly_typed_view_hooks_is_said_once_and_the_pages_still_serve(
    needle_results: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from harness.config.yaml_loader import _load_module_file

    # The declaration as the task YAML's `benchmark: !function benchmark.BENCHMARK` loads it.
    module = _load_module_file(REPO / "tasks" / "mmneedle" / "benchmark.py")
    broken = replace(module.BENCHMARK, view={"group_grid": {"rows": ["M"], "columns": ["N"]}})
    monkeypatch.setattr(module, "BENCHMARK", broken)
    capsys.readouterr()
    client = view_client(needle_results)
    page = client.get("/samples", params={"model": "random", "task": "mmneedle"})
    assert page.status_code == 200 and _count(page.text) == "48 of 48 samples"
    assert _links(page.text, "grid-link") == []  # no hooks: no grid
    rows = _links(client.get("/samples", params={"model": "random", "task": NEEDLE[0]}).text, "sample-link")
    assert rows and client.get(rows[0]).status_code == 200
    assert client.get("/report/").status_code == 200 and client.get("/").status_code == 200
    said = [line for line in capsys.readouterr().err.splitlines() if "ViewHooks" in line]
    assert said == ["harness view: the MMNeedle declaration's view is a dict, not a ViewHooks: left out"]
