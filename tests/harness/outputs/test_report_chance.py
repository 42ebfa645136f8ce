"""The chance level `harness report` prints is the one the results file records (`references`): each benchmark's
section gets the references of its own tasks (it once got none, and LoCoVQA's MMStar read 0.000 for 0.25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support.results_runs import locovqa_random_run

CONFIGS = ["mmstar_cmp_1", "mmstar_cmp_4", "needle_cmp_1", "needle_cmp_4"]


@pytest.fixture(scope="module")
def locovqa_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = locovqa_random_run(tmp_path_factory, "locovqa_chance", CONFIGS, limit=2)
    assert main(["report", str(out)]) == 0
    return out


@pytest.mark.slow  # a LoCoVQA run and its report (~3 s)
def test_the_reports_chance_column_is_the_results_files(locovqa_run: Path) -> None:
    (results_file,) = (locovqa_run / "random").glob("results_*.json")
    references = json.loads(results_file.read_text())["references"]
    report = (locovqa_run / "report.md").read_text()
    rows = {
        tuple(cell.strip() for cell in line.strip("|").split("|")[:2]): line.strip("|").split("|")[-1].strip()
        for line in report.splitlines()
        if line.startswith(("| MMStar | cmp |", "| Needle | cmp |"))
    }
    for series, task in (("MMStar", "mmstar"), ("Needle", "needle")):
        chances = [references[f"locovqa_{c}"]["chance"] for c in CONFIGS if c.startswith(task)]
        assert rows[(series, "cmp")] == f"{sum(chances) / len(chances):.3f}", (series, rows)
    assert rows[("MMStar", "cmp")] == "0.250" and rows[("Needle", "cmp")] == "0.100"
