"""One number per cell everywhere (issue 54, items 2, 4 and 6): every number `harness view` shows for a demo-like run
is report.md's for the same thing, value and interval.

A miniature of `make demo` (scripts/demo.sh): the random baseline over offline builds of all four benchmarks
(MMNeedle's K = 1 configs, MMLongBench at 8K and its ablation sets at 8K, MileBench's Table 2 set, two LoCoVQA
series), the constant answer on MMNeedle's K = 1 and LoCoVQA's composed MMStar, and `harness report`. The test walks
the index, every group page (its grids and members) and every task page, parses each number and finds report.md's
cell for it: the table across models and the summary for the rows they hold, a model's *All metrics* for the rest,
and a benchmark's own tables where it shows a number nowhere else (MileBench's Table 2, MMLongBench's category
table, LoCoVQA's accuracy by length)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.config.task_index import TaskIndex
from harness.run.cli import main
from tests.support.results_runs import harness_run
from tests.support.view_app import unmarked, view_client

RANDOM = [
    "mmneedle_k1",
    "mmlongbench_8k",
    "mmlongbench_ablation_8k",
    "milebench",
    "locovqa_mmstar",
    "locovqa_needle_cmp",
]
CONSTANT = ["mmneedle_k1", "locovqa_mmstar_cmp"]
MODELS = ["constant", "random"]  # the report's and the index's column order
TABLE_2 = ["T-1", "T-2", "T-3", "T-4", "S-1", "S-2", "S-3", "S-4", "S-5", "N-1", "N-2", "I-1"]
MILEBENCH_COLUMNS = {f"milebench_{c.lower().replace('-', '')}": c for c in TABLE_2} | {"milebench": "Overall Real."}
MILEBENCH_LEVELS = {"milebench_few": "Few", "milebench_medium": "Medium", "milebench_many": "Many"}
LOCOVQA_SERIES = {"mmstar": "MMStar", "needle": "Needle", "okvqa": "OK-VQA", "mnist": "MNIST"}
PROPORTIONS = ("mmneedle_", "locovqa_")  # benchmarks that record proportions (the others 0-100)
# a number, its interval or why it has none (issue 98: "0.0 (no interval: one cluster holds 2 of 3 rows ...)")
CELL = re.compile(r"(-?\d+(?:\.\d+)?)(?: \[(-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)\]| \(no interval: .*\))?$")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.locovqa import build_locovqa
    from builders.milebench.build import build_milebench
    from builders.mmlongbench.build import build_mmlongbench
    from builders.mmneedle import build_mmneedle

    root = tmp_path_factory.mktemp("view_report_agree")
    index = TaskIndex()
    configs: dict[str, list[str]] = {}
    for name in index.select(RANDOM + CONSTANT).tasks:
        task = index.tasks[name]
        configs.setdefault(str(task.dataset_path), []).append(str(task.dataset_name))
    data = root / "data"
    build_mmneedle(source="synthetic", out_dir=data, configs=sorted(set(configs["mmneedle"])), limit=4, num_proc=1)
    build_mmlongbench(source="fixture", out_dir=data, configs=sorted(set(configs["mmlongbench"])))
    build_milebench(source="fixture", out_dir=data, configs=sorted(set(configs["milebench"])))
    build_locovqa(["synthetic"], data, sorted(set(configs["locovqa"])), limit=2, cell_size=16)
    out = root / "results"
    for tasks in RANDOM:
        harness_run(out, data, tasks, "random")
    for tasks in CONSTANT:
        harness_run(out, data, tasks, "constant", "--model_args", "answer=-1")
    assert main(["report", str(out), "--no_figures"]) == 0
    return out


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", unmarked(fragment)))).strip()


# --------------------------------------------------------------------------------------------- report.md, read


def _tables(report: str) -> Iterator[tuple[str, str, list[str], list[list[str]]]]:
    """Each markdown table: (its `## ` heading, its `### ` heading, header cells, rows of cells)."""
    part = sub = ""
    lines = report.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            part, sub = line[3:].strip(), ""
        elif line.startswith("### "):
            sub = line[4:].strip()
        elif line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            yield part, sub, header, rows
            continue
        i += 1


class Report:
    """report.md's cells, found by what they are of."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.across: dict[tuple[str, str], dict[str, str]] = {}  # (task or group, metric) -> model -> cell
        self.summary: dict[tuple[str, str], dict[str, str]] = {}
        self.metrics: dict[tuple[str, str, str], float] = {}  # (model, task, metric) -> All metrics' value
        self.tables: list[tuple[str, str, list[str], list[list[str]]]] = list(_tables(text))
        for part, sub, header, rows in self.tables:
            if part == "Across models" and header[:2] == ["task", "metric (0-100)"]:
                for row in rows:
                    name = re.sub(r"[ ‡§]+$", "", row[0])
                    self.across[(name, row[1])] = dict(zip(header[2:], row[2:], strict=True))
            elif part == "Summary":
                for row in rows:
                    if " · " in row[0]:
                        name, metric = row[0].split(" · ")
                        self.summary[(name, metric)] = dict(zip(header[1:], row[1:], strict=True))
            elif sub == "All metrics":
                task = ""
                for row in rows:
                    task = row[0] or task
                    if row[5] not in ("N/A", ""):
                        self.metrics[(part, task, row[4])] = float(row[5])

    def table(self, part: str, sub: str, first: str) -> tuple[list[str], list[list[str]]]:
        """The table of `part`'s `sub` section whose header begins with `first`."""
        for found_part, found_sub, header, rows in self.tables:
            if found_part == part and found_sub == sub and header[0] == first:
                return header, rows
        raise AssertionError(f"report.md has no table {first!r} in {part} / {sub}")


# --------------------------------------------------------------------------------------------- the viewer, read


def _index(page: str) -> dict[str, tuple[str, dict[str, tuple[str, str]]]]:
    """The index: task or group -> (metric, model -> (shown, why))."""
    rows = {}
    for row in re.findall(r'<tr class="index-row">(.*?)</tr>', page, re.S):
        name = _text(re.search(r'<td class="name">(.*?)</td>', row, re.S).group(1))  # type: ignore[union-attr]
        metric = _text(re.search(r'<td class="metric">(.*?)</td>', row, re.S).group(1))  # type: ignore[union-attr]
        cells = {}
        for model, cell in re.findall(r'<td class="num cell" data-model="([^"]+)"[^>]*>(.*?)</td>', row, re.S):
            shown = re.search(r'class="shown">(.*?)</span>', cell, re.S)
            why = re.search(r'class="why">(.*?)</small>', cell, re.S)
            cells[model] = (_text(shown.group(1)) if shown else "", _text(why.group(1)) if why else "")
        rows[name] = (metric, cells)
    return rows


def _grid_cells(page: str) -> list[tuple[str, str, str, str]]:
    """Each cell of a group page's grids: (its row label, its column label, the task or group it shows, shown)."""
    out = []
    for grid in re.findall(r'<table class="heat">(.*?)</table>', page, re.S):
        lines = re.findall(r"<tr>(.*?)</tr>", grid, re.S)
        columns = [_text(c) for c in re.findall(r"<th>(.*?)</th>", lines[0], re.S)][1:]
        for line in lines[1:]:
            label = _text(re.search(r"<th>(.*?)</th>", line, re.S).group(1))  # type: ignore[union-attr]
            for column, cell in zip(columns, re.findall(r"<td[^>]*>(.*?)</td>", line, re.S), strict=True):
                found = re.search(r'class="shown" data-of="([^"]*)">(.*?)</span>', cell, re.S)
                if found:
                    out.append((label, column, html.unescape(found.group(1)), _text(found.group(2))))
    return out


def _opened(demo: Path):
    """report.md read, a client of the viewer, its index page and the index's cells."""
    client = view_client(demo)
    home = client.get("/").text
    return Report((demo / "report.md").read_text()), client, home, _index(home)


def _links_of(home: str, kind: str) -> list[str]:
    return sorted({html.unescape(link) for link in re.findall(rf'class="{kind}" href="([^"]+)"', home)})


def _number(shown: str) -> tuple[float, tuple[float, float] | None]:
    found = CELL.fullmatch(shown)
    assert found, shown
    bounds = (float(found.group(2)), float(found.group(3))) if found.group(2) else None
    return float(found.group(1)), bounds


# --------------------------------------------------------------------------------------------- the tests


@pytest.mark.slow
def test_every_number_of_the_index_is_report_mds_and_every_group_has_a_row(demo: Path) -> None:
    report, client, home, index = _opened(demo)
    header = re.search(r'<table class="metrics index" id="index">\s*<thead>(.*?)</thead>', home, re.S)
    assert header and re.findall(r'class="model-column">([^<]+)<', header.group(1)) == MODELS  # a column per model
    # A row for every group the results hold, LoCoVQA's and the pooled-nothing ones included.
    for name in [
        "locovqa_mmstar",
        "locovqa_mmstar_int",
        "locovqa_mmstar_cmp",
        "locovqa_needle_cmp",
        "milebench",
        "milebench_t1",
    ]:
        assert name in index, name
    assert {"mmlongbench_8k", "mmlongbench_ablation_8k", "milebench_few", "milebench_many"} <= set(index)
    tasks = re.findall(r'class="samples-link" href="/samples\?model=random&amp;task=(milebench_[^"]+)"', home)
    assert len(set(tasks)) == 29  # MileBench's subsets, which only its own section shows
    checked = 0
    for name, (metric, cells) in index.items():
        for model, (shown, why) in cells.items():
            if shown == "" and why in ("", "not run"):
                continue  # the model did not run it
            key = (name, metric)
            if key in report.across:
                assert shown == report.across[key][model], (name, model)
                if key in report.summary:
                    assert shown == report.summary[key][model], (name, model)
            elif shown == "—":  # no value: said why, and the report holds none either
                assert why.startswith("no value"), (name, why)
                assert not any(key[0] == name for key in report.summary), name
            elif name in MILEBENCH_COLUMNS or name in MILEBENCH_LEVELS:
                if name in MILEBENCH_COLUMNS:
                    head, rows = report.table(model, "MileBench", "")
                    column = MILEBENCH_COLUMNS[name]
                else:
                    head, rows = report.table(model, "MileBench", "image-count level (mean over subsets)")
                    column = MILEBENCH_LEVELS[name]
                line = next(row for row in rows if row[0] in (f"{model} (test)", "test"))
                assert re.split(r" [\[(]", shown)[0] == line[head.index(column)], (name, model)
            else:  # a task the tables across models leave out (MileBench's subsets): its All metrics value
                value = report.metrics[(model, name, metric)]
                assert name.startswith("milebench_") and abs(_number(shown)[0] - value) <= 0.051, (name, model)
            checked += 1
    assert checked > 120, checked
    assert index["mmlongbench_ablation_8k"][1]["random"][0] == "—"
    assert "Each set is its own measurement: the section pools nothing." in report.text
    summ = index["mmlongbench_summ_8k"][1]["random"]
    assert (
        summ[0] == "N/A"
        and "--judge_model" in summ[1]
        and report.across[("mmlongbench_summ_8k", "score")]["random"] == "N/A"
    )


@pytest.mark.slow
def test_every_grid_cell_and_member_of_every_group_page_is_the_index_and_report_mds(demo: Path) -> None:
    report, client, home, index = _opened(demo)
    pages = _links_of(home, "group-link")
    assert len(pages) > 30
    cells_seen = 0
    for link in pages:
        model = re.search(r"model=([^&]+)", link).group(1)  # type: ignore[union-attr]
        page = client.get(link)
        assert page.status_code == 200, link
        for row, column, of, shown in _grid_cells(page.text):
            cells_seen += 1
            if of:  # a task's or a group's value: the index's (which is report.md's), never a mean made here
                assert shown == index[of][1][model][0], (link, row, column, of)
            else:
                assert shown == "—", (link, row, column)
        for task, shown in re.findall(
            r'class="member-link" href="[^"]+">([^<]+)</a></td>\s*<td>[^<]*</td><td class="num"[^>]*>'
            r'<span class="shown">(.*?)</span>',
            page.text,
        ):
            assert _text(shown) == index[task][1][model][0], (link, task)
    assert cells_seen > 100
    # The benchmarks' own tables, read where the report shows them.
    grid = {
        (r, c): (of, s) for r, c, of, s in _grid_cells(client.get("/samples?model=random&task=mmlongbench_8k").text)
    }
    _, categories = report.table("random", "MMLongBench", "category")
    for category, cell in (
        (row[0], row[1]) for row in categories if row[0] in ("VRAG", "NIAH", "ICL", "Summ", "DocVQA")
    ):
        assert grid[(f"category={category}", "length=8k")][1] == cell, category
    assert grid[("category=NIAH", "length=8k")][0] == "mmlongbench_niah_8k"  # the paper's pair-weighted mean
    milebench = _grid_cells(client.get("/samples?model=random&task=milebench").text)
    head, rows = report.table("random", "MileBench", "")
    table_2 = dict(zip(head[1:], next(row for row in rows if row[0] == "random (test)")[1:], strict=True))
    assert {r.removeprefix("task id="): re.split(r" [\[(]", s)[0] for r, c, _, s in milebench if c == "set=test"} == {
        column: table_2[column] for column in TABLE_2
    }
    locovqa = _grid_cells(client.get("/samples?model=random&task=locovqa").text)
    head, rows = report.table("random", "LoCoVQA", "series")
    by_length = {(row[0], row[1]): dict(zip(head[2:], row[2:], strict=True)) for row in rows}
    for label, column, _, shown in locovqa:
        source, mode = (part.split("=")[1] for part in label.split(" · "))
        expected = float(by_length[(LOCOVQA_SERIES[source], mode)][f"n={column.split('=')[1]}"]) * 100
        assert abs(_number(shown)[0] - expected) <= 0.051, (label, column)
    ablation = _grid_cells(client.get("/samples?model=random&task=mmlongbench_ablation").text)
    assert ablation and all(of for _, _, of, _ in ablation)  # one set a row: each cell one task, none pooled


@pytest.mark.slow
def test_every_task_page_shows_report_mds_number_and_interval(demo: Path) -> None:
    report, client, home, index = _opened(demo)
    links = _links_of(home, "samples-link")
    assert len(links) > 100
    for link in links:
        model, task = re.fullmatch(r"/samples\?model=([^&]+)&task=(.+)", link).groups()  # type: ignore[union-attr]
        page = client.get(link).text
        metric, cells = index[task]
        head = re.search(
            rf'<span class="head" data-model="{model}"[^>]*><b>[^<]+</b> <span class="shown">(.*?)</span>', page
        )
        assert head and _text(head.group(1)) == cells[model][0], link
        errors: dict[str, list[str]] = {}
        # the 0-100 table (a proportion as report.md shows it: x 100), then the one of numbers as recorded
        for table, factor in (
            ("metric-errors", 100 if task.startswith(PROPORTIONS) else 1),
            ("metric-errors-recorded", 1),
        ):
            held = re.search(rf'id="{table}">(.*?)</table>', page, re.S)
            for row in re.findall(r'<tr class="metric-error">(.*?)</tr>', held.group(1) if held else "", re.S):
                name, *shown = (_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S))
                errors[name] = shown
                if (model, task, name) in report.metrics:  # every metric's value: report.md's All metrics
                    expected = factor * report.metrics[(model, task, name)]
                    assert abs(float(shown[0]) - expected) <= 5e-4 * max(factor, abs(expected)), (link, name)
        value, bounds = _number(cells[model][0]) if cells[model][0] not in ("N/A", "—") else (None, None)
        if bounds is None or value is None:
            continue
        low, high = (float(x) for x in errors[metric][7].strip("[]").split(","))
        assert abs(low - bounds[0]) <= 0.06 and abs(high - bounds[1]) <= 0.06, (link, errors[metric][7], bounds)


@pytest.mark.slow
def test_two_models_side_by_side_from_the_index_and_from_the_reports_links(demo: Path) -> None:
    report, client, _, index = _opened(demo)
    linked = client.get("/report/").text
    links = {  # the rows of the tables across models: no model named
        _text(label): html.unescape(href)
        for href, label in re.findall(r'<a href="([^"]+)" class="row-link">(.*?)</a>', linked, re.S)
        if "model=" not in href
    }
    page = client.get(links["mmneedle_k1"])  # the Summary's and Across models' row: no model named
    assert str(page.url).endswith("/samples?task=mmneedle_k1&model=constant&vs=random")
    heads = dict(
        re.findall(
            r'<span class="head" data-model="([^"]+)"[^>]*><b>[^<]+</b> <span class="shown">(.*?)</span>', page.text
        )
    )
    assert heads == report.across[("mmneedle_k1", "exact_acc_pos")]
    beside = re.findall(r'class="shown-b" data-of="([^"]*)" data-model="random">random: (.*?)</span>', page.text)
    assert len(beside) == 14 and all(shown == index[of][1]["random"][0] for of, shown in beside)
    task = "locovqa_mmstar_cmp_4"
    page = client.get(links[task]).text  # a task both ran: its two numbers, and B's scores and answers by sample
    heads = dict(
        re.findall(r'<span class="head" data-model="([^"]+)"[^>]*><b>[^<]+</b> <span class="shown">(.*?)</span>', page)
    )
    assert heads == report.across[(task, "accuracy")]
    alone = client.get("/samples", params={"model": "random", "task": task}).text
    answers = dict(re.findall(r'id=([^"&]+)">[^<]+</a></td>.*?<td class="answer">(.*?)</td>', alone, re.S))
    rows = re.findall(r'id=([^"&]+)&amp;vs=random">[^<]+</a></td>.*?<td class="answer answer-b">(.*?)</td>', page, re.S)
    assert rows and len(rows) == len(answers) and all(answers[sample] == answer for sample, answer in rows)
    assert (
        index["locovqa_mmstar_cmp"][1]["constant"][0] == report.summary[("locovqa_mmstar_cmp", "accuracy")]["constant"]
    )
    assert any(line.startswith("| locovqa_mmstar_cmp · accuracy | ") for line in report.text.splitlines())
