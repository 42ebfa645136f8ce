"""The cells MMLongBench's official run never ran for a model (issue 53, phase 2 item 3): Claude 3.7 Sonnet's, as
`scripts/run_api.sh:153-193` (26197d2) leaves them out, declared in its paper model (`PaperModel.not_run`), the paper's
N/A exactly there, and a report that runs them anyway shows ours beside N/A with why, never a verdict."""

from __future__ import annotations

from typing import Any

from harness.outputs.results.model_results import ModelResults
from tasks.mmlongbench import report
from tasks.mmlongbench.aggregation import load_paper_results
from tasks.mmlongbench.paper_models import PAPER_MODELS, SCRIPT_TASKS
from tasks.mmlongbench.scores import DATASET_ORDER, dataset_task

ALL = ("vrag", "vh", "mm_niah_text", "mm_niah_image", "icl", "summ", "docqa")
# run_api.sh's Claude 3.7 commands, transcribed: each `--test_length` with its `for task in ...` list.
CLAUDE_COMMANDS = {
    "8k": ALL,  # :154-162
    "16k": ALL,
    "32k": ("vrag", "vh", "mm_niah_text", "mm_niah_image", "summ", "docqa"),  # :164-172, "cannot test ICL at 32K"
    "64k": ("vrag", "summ", "docqa"),  # :175-183
    "128k": ("vrag", "summ"),  # :185-193
}
CLAUDE = "Claude-3.7-Sonnet"
TOKENS = {"8k": 8192, "16k": 16384, "32k": 32768, "64k": 65536, "128k": 131072}


def _script_task(task: str) -> str:
    """The run_api.sh task a harness task is (its glob in `SCRIPT_TASKS`)."""
    import fnmatch

    return next(name for name, glob in SCRIPT_TASKS.items() if fnmatch.fnmatchcase(task, f"{glob}_*"))


def test_claudes_not_run_cells_are_the_scripts_and_the_papers_n_a() -> None:
    run = PAPER_MODELS.run_by("claude-3.7-sonnet")
    assert run is not None and run.name == CLAUDE
    paper = load_paper_results()
    for length, ran in CLAUDE_COMMANDS.items():
        for dataset in DATASET_ORDER:
            task = dataset_task(dataset, length)
            script_ran = _script_task(task) in ran
            assert (run.not_run_why(task) is None) == script_ran, task
            assert (paper[(CLAUDE, dataset, TOKENS[length])] is None) == (not script_ran), task
    # The models the scripts ran everywhere declare nothing left out.
    assert not PAPER_MODELS.run_by("gpt-4o").not_run and not PAPER_MODELS.run_by("gemini-2.5-pro").not_run


def _sources(tasks: list[str]) -> dict[str, dict[str, Any]]:
    """Results-file records: each task ran on a build of the release's official sample."""
    record = {
        "location": "/data/build",
        "content_hash": "sha256:" + "0" * 64,
        "rows": "paper",
        "source": {"kind": "release", "spec": "release"},
        "verification": "verified",
    }
    run = {
        "config": {"limit": None},
        "datasets": dict.fromkeys(tasks, record),
        "n-samples": {t: {"original": 100, "effective": 100} for t in tasks},
    }
    return dict.fromkeys(tasks, run)


def test_the_report_shows_a_cell_the_paper_did_not_run_without_a_verdict(tmp_path) -> None:
    """Claude run on NIAH at 64K (which run_api.sh left out) and VRAG there (which it ran): NIAH is ours beside N/A,
    not comparable because the paper did not run it, and VRAG gets its verdict."""
    paper = load_paper_results()
    vrag = paper[(CLAUDE, "VRAG", 65536)]
    assert vrag is not None and paper[(CLAUDE, "NIAH", 65536)] is None
    groups = {
        "mmlongbench_vrag_64k": {"score,none": vrag, "score_stderr,none": 1.0},
        "mmlongbench_niah_64k": {"score,none": 40.0, "score_stderr,none": 1.0},
    }
    results = {"mmlongbench_vrag_infoseek_64k": {"score,none": 20.0, "score_stderr,none": 2.0}}
    data = ModelResults(results=results, groups=groups, sources=_sources(list(results)))
    lines = report.section("claude-3-7-sonnet-20250219", data, tmp_path)
    rows = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    assert rows["NIAH"] == "| NIAH | 40.0 (N/A) – |"
    assert rows["VRAG"].startswith(f"| VRAG | {vrag:.1f} ({vrag:.1f}) +0.0 [") and rows["VRAG"].endswith(" ✓ |")
    tally = next(line for line in lines if line.startswith("Verdict beside the paper"))
    assert "the paper did not run it (run_api.sh:175-193 leaves it out at 64K/128K) (1)" in tally
