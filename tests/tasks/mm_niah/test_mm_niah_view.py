"""MM-NIAH in `harness view` (issue 76, item 2): the group page reads each row on its task's headline metric, whose
rows hold no score of their own (`score` is a heat-map cell and a decision), through the official decision `acc`, so
the headline column has a number on every scored row and "show right" and "show wrong" split them; a sample's page
names the fields of its `score` and shows a multiple-choice gold as the letter a reply gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.view.shown import gold_text
from tasks.mm_niah.view_hooks import VIEW_HOOKS
from tests.support.results_runs import harness_run
from tests.support.view_app import view_client

pytestmark = pytest.mark.slow  # a build and a run
COUNT = re.compile(r"(\d+) of (\d+) samples")


@pytest.fixture(scope="module")
def results(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return harness_run(tmp_path_factory.mktemp("mm_niah_view"), built, "mm_niah_val", "random")


def _count(page: str) -> tuple[int, int]:
    found = COUNT.search(re.sub(r"<[^>]+>", " ", page))
    assert found is not None
    return int(found.group(1)), int(found.group(2))


def _acc_values(results: Path) -> list[float]:
    values = []
    for journal in (results / "random").glob("journal_mm_niah_*.jsonl"):
        for line in journal.read_text().splitlines()[1:]:
            record = json.loads(line)
            values += [record["metrics"]["acc"]] if record.get("type") == "sample" and record.get("metrics") else []
    return values


def test_the_group_page_reads_each_row_on_its_headline_and_splits_right_from_wrong(results: Path) -> None:
    client = view_client(results)
    page = client.get("/samples", params={"model": "random", "task": "mm_niah_val"}).text
    total = _count(page)[1]
    rows = re.findall(r'<tr class="status-[^"]*">(.*?)</tr>', page, re.S)
    values = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[3] for row in rows]  # doc, sample, status, headline
    assert len(values) == total and not any("not scored" in value for value in values)  # was "—" on every row
    acc = _acc_values(results)
    right = sum(1 for value in acc if value >= 1.0)
    assert 0 < right < len(acc) == total
    for metric in ("headline", "acc"):  # the headline filters as the decision it is read on (was 0 of 36, and 5)
        shown = {
            show: _count(client.get("/samples", params={"model": "random", "task": "mm_niah_val", "show": show,
                                                       "metric": metric}).text)[0]
            for show in ("right", "wrong")
        }  # fmt: skip
        assert shown == {"right": right, "wrong": len(acc) - right}, metric


def test_a_sample_names_the_fields_of_its_score_and_shows_the_options_letter(results: Path) -> None:
    client = view_client(results)
    journal = (results / "random" / "journal_mm_niah_retrieval_image_val.jsonl").read_text().splitlines()[1:]
    record = next(r for r in map(json.loads, journal) if r.get("type") == "sample")
    page = client.get("/sample", params={"model": "random", "task": "mm_niah_retrieval_image_val",
                                         "id": record["sample_id"]}).text  # fmt: skip
    gold = re.search(r'<pre class="text gold">([^<]*)</pre>', page)
    assert gold is not None
    letter = "ABCD"[json.loads(record["target"])]
    assert gold.group(1).startswith(f"{letter} ")  # was the release's index, beside replies such as "B"
    for field in ("length bin", "depth bin", "acc"):
        assert f"<td>{field}</td>" in page
    # an open answer's gold, and a gold the hook cannot read, stay as the journal holds them
    assert gold_text('"oak"', VIEW_HOOKS.gold_shown, {"answer_kind": "open"}) == "oak"
    assert gold_text("[1, 2]", VIEW_HOOKS.gold_shown, {"answer_kind": "choice", "choices": ["a", "b"]}) == "1\n2"


def test_no_metrics_effective_n_is_above_its_rows(results: Path) -> None:
    """Issue 88: the metrics table gave an effective n of 244.4 and 575.6 for tasks of 6 rows (p(1 - p) / SE² of a
    score with partial credit or the grid average); it is never above the rows (Korn and Graubard's truncation)."""
    client = view_client(results)
    capped = 0
    for journal in sorted((results / "random").glob("journal_mm_niah_*_val.jsonl")):
        task = journal.stem.removeprefix("journal_")
        page = client.get("/samples", params={"model": "random", "task": task}).text
        for row in re.findall(r'<tr class="metric-error">(.*?)</tr>', page, re.S):
            cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            rows, effective = cells[4], cells[7]
            if not re.fullmatch(r"[\d.]+", effective):
                continue
            assert float(effective) <= float(rows), (task, cells)
            capped += float(effective) == float(rows)
    assert capped > 0  # some metric's p(1 - p) / SE² is above its rows: the cap is what holds it
