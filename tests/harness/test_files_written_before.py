"""Files written before the formats were validated by pydantic still read (issue 62 item 2): a journal (with its
prompt store), a results file and a sample log that the harness wrote on 2026-11-25 (`--model random`, two rows of the
synthetic MMNeedle build, `--log_samples`), read by today's readers and by `harness report`."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.outputs.results.results_file import read_results_file
from harness.running.journal.journal_file import header_problem, parse_line, record_problem
from harness.running.journal.sample_log import read_sample_log

WRITTEN = Path(__file__).parent / "written_2026_11"
TASK = "mmneedle_m1_n2_k1_pos"


def test_a_journal_written_before_reads_line_by_line() -> None:
    header, *records = (WRITTEN / f"journal_{TASK}.jsonl").read_bytes().splitlines()
    parsed, problem = parse_line(header)
    assert problem is None and header_problem(parsed) is None
    assert len(records) == 2
    for line in records:
        record, problem = parse_line(line)
        assert (
            problem is None
            and record_problem(record, TASK, {"exact_acc": "mean", "exact_acc_by_cell": "mean_by_key"}) is None
        )


def test_a_results_file_and_sample_log_written_before_read() -> None:
    (results,) = WRITTEN.glob("results_*.json")
    assert read_results_file(results)["results"][TASK]["alias"] == TASK
    (log,) = WRITTEN.glob(f"samples_{TASK}_*.jsonl")
    assert [line["doc_id"] for line in read_sample_log(log)] == [0, 1]


def test_the_report_reads_a_run_written_before(tmp_path: Path, harness) -> None:
    shutil.copytree(WRITTEN, tmp_path / "random")
    run = harness("report", tmp_path, "--no_figures")
    assert run.code == 0 and "Traceback" not in run.err, run.err


def test_a_journal_written_before_is_the_same_tasks_after_its_hooks_took_a_pyarrow_table() -> None:
    """Issue 89 item 5: MMNeedle's `process_docs` takes its rows as a pyarrow Table (a run imports no `datasets`); the
    container that carries the rows decides no reply, so the task's identity is the one its journals recorded when the
    hook took a `datasets.Dataset`, and they still resume (`harness.running.task.process_docs.journal_source`)."""
    from harness.config.task_index import TaskIndex
    from harness.running.task.task import Task

    header, _ = parse_line((WRITTEN / f"journal_{TASK}.jsonl").read_bytes().splitlines()[0])
    task = Task(TaskIndex().tasks[TASK], {}, None)
    assert task.identity()["sent_sha256"] == header["parts"]["task"]["sent_sha256"]
