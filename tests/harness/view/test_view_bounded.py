"""The viewer reads no file of the folder whole without a bound (issue 49, item 5): a report, a results file, a
figure, a journal line, a sample log line and a journal header are each read within their bound
(`harness.view.samples.safe_files`), and one past it is one line on its page (or one line left out), in little memory; a
journal header whose `parts` is not an object is a header without parts (item 7: an HTTP 500 before). The files of
2 GiB are sparse (nothing is written); the issue measured 2.2-4.3 GB and an HTTP 500 for each."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.api import SCORED
from harness.view.samples import judged_columns
from tests.support.results_runs import harness_run, model_folder, results_copy
from tests.support.view_app import view_client

TASK = "mmneedle_m1_n2_k1_pos"
GiB = 1 << 30
MiB = 1 << 20


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("bounded_run")
    return harness_run(out, data_dir, TASK, "constant", "--model_args", "answer=GUESS", "--log_samples")


@pytest.fixture
def results(logged_run: Path, tmp_path: Path) -> Path:
    return results_copy(logged_run, tmp_path)


def _split_journal(results: Path) -> tuple[Path, bytes, list[bytes], str]:
    """The run's journal: its path, its header line, its other lines, and the first sample's id."""
    journal = model_folder(results) / f"journal_{TASK}.jsonl"
    header, *rest = journal.read_bytes().splitlines(keepends=True)
    return journal, header, rest, json.loads(rest[0])["sample_id"]


def sparse(path: Path, size: int, prefix: bytes = b"", suffix: bytes = b"") -> Path:
    """`prefix`, then zeros up to `size` bytes, then `suffix`: a file of `size` bytes that takes no disk."""
    path.write_bytes(prefix)
    os.truncate(path, size)
    with open(path, "ab") as handle:
        handle.write(suffix)
    return path


def peak(call: Callable[[], object]) -> tuple[object, int]:
    """(what `call` returns, the most memory Python held meanwhile, every thread counted)."""
    tracemalloc.start()
    try:
        value = call()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_report_past_its_bound_is_one_line_on_its_page(results: Path) -> None:
    sparse(results / "report.md", 2 * GiB, b"# Evaluation report\n")
    page, held = peak(lambda: view_client(results).get("/report/"))
    assert page.status_code == 404  # type: ignore[attr-defined]
    assert "report.md: 2,147,483,648 bytes, over the 16 MiB that a report can hold; not read" in page.text  # type: ignore[attr-defined]
    assert held < 64 * MiB


def test_a_figure_past_its_bound_is_one_line_on_its_page(results: Path) -> None:
    figure = sparse(results / "figure.png", 2 * GiB, b"\x89PNG\r\n\x1a\n")
    (results / ".report_figures.json").write_text(json.dumps({"figure.png": {"sha256": "0" * 64}}))
    page, held = peak(lambda: view_client(results).get("/report/figure.png"))
    assert page.status_code == 404  # type: ignore[attr-defined]
    assert f"{figure.name}: 2,147,483,648 bytes, over the 64 MiB that a figure can hold; not read" in page.text  # type: ignore[attr-defined]
    assert held < 64 * MiB


def test_a_results_file_past_its_bound_is_left_out_in_one_line(results: Path, capsys: pytest.CaptureFixture) -> None:
    sparse(model_folder(results) / "results_zzz.json", 2 * GiB, b'{"results": {}, "config": {}, "x": "')
    home, held = peak(lambda: view_client(results).get("/"))
    err = capsys.readouterr().err
    assert home.status_code == 200 and "results_zzz.json" in home.text  # type: ignore[attr-defined]
    line = next(line for line in err.splitlines() if "results_zzz.json" in line)
    assert "left out (unreadable results file (2,147,483,648 bytes, over the 64 MiB that a results file" in line
    assert held < 64 * MiB


def test_journal_and_sample_log_lines_past_their_bound_are_passed_by(results: Path) -> None:
    """A journal line of 2 GiB among the records (the index leaves it out, and counts it), and a sample log whose
    lines are 2 GiB: the table and the sample page show, in little memory."""
    model_dir = model_folder(results)
    journal = model_dir / f"journal_{TASK}.jsonl"
    records = journal.read_bytes()
    sparse(journal, len(records) + 2 * GiB, records, b"\n")
    (log,) = model_dir.glob(f"samples_{TASK}_*.jsonl")
    sparse(log, 2 * GiB, b'{"doc_id": 0, "x": "', b'"}\n')
    sample_id = next(json.loads(line)["sample_id"] for line in records.splitlines() if b'"sample"' in line)
    client = view_client(results)

    def pages() -> tuple[object, object]:
        table = client.get("/samples", params={"model": "constant", "task": TASK})
        sample = client.get("/sample", params={"model": "constant", "task": TASK, "id": sample_id})
        return table, sample

    (table, sample), held = peak(pages)
    assert table.status_code == 200 and "1 journal line(s) are not sample records" in table.text  # type: ignore[attr-defined]
    assert sample.status_code == 200  # type: ignore[attr-defined]
    assert held < 160 * MiB  # a line's bound and what the pages hold, not the 2 GiB line


def test_a_journal_header_whose_parts_is_no_object_is_a_header_without_parts(results: Path) -> None:
    """The issue's `parts` as a string made `/sample` an HTTP 500."""
    journal, header, rest, sample_id = _split_journal(results)
    client = view_client(results)
    for parts in ("a string", 5, ["a", "list"], None):
        damaged = json.dumps({**json.loads(header), "parts": parts}).encode() + b"\n"
        journal.write_bytes(damaged + b"".join(rest))
        page = client.get("/sample", params={"model": "constant", "task": TASK, "id": sample_id})
        assert page.status_code == 200, (parts, page.text[-500:])
    # A header line `null`: pyarrow 26's JSON reader crashed the whole process on it (found by make fuzz).
    journal.write_bytes(b"null\n" + b"".join(rest))
    table = client.get("/samples", params={"model": "constant", "task": TASK})
    assert table.status_code == 200 and "1 journal line(s) are not sample records" in table.text


def test_a_journal_header_past_its_bound_is_no_header(results: Path) -> None:
    journal, _, rest, sample_id = _split_journal(results)
    client = view_client(results)
    sparse(journal, 2 * GiB, b'{"type": "header", "x": "', b'"}\n' + b"".join(rest))
    page, held = peak(lambda: client.get("/sample", params={"model": "constant", "task": TASK, "id": sample_id}))
    assert page.status_code == 200 and held < 160 * MiB  # type: ignore[attr-defined]


def _judged_sample(results: Path) -> tuple[Path, dict[str, object]]:
    """Where the run's judge log goes, and the journal's first scored record."""
    journal, _, rest, _ = _split_journal(results)
    record = next(r for r in map(json.loads, rest) if r.get("status") in SCORED)
    return journal.with_name(f"judge_{TASK}.jsonl"), record


def test_a_judge_line_naming_150000_metrics_is_left_out_in_one_line(results: Path) -> None:
    """Issue 87: one 2.3 MB judge line naming 150,000 metrics made a column of each (2.6 GB at 2,000 rows); now the
    line is left out and said, and a line within the bound still joins."""
    log, record = _judged_sample(results)
    line = {"sample_id": record["sample_id"], "doc_id": record["doc_id"], "status": "judged"}
    wide = {**line, "metrics": {f"m{i}": 1.0 for i in range(150_000)}}
    log.write_text(json.dumps(wide) + "\n")
    client = view_client(results)
    table, held = peak(lambda: client.get("/samples", params={"model": "constant", "task": TASK}))
    assert table.status_code == 200  # type: ignore[attr-defined]
    assert f"judge_{TASK}.jsonl: 1 line(s) hold over 64 judge metric values: left out" in table.text  # type: ignore[attr-defined]
    assert "m149999" not in table.text and held < 64 * MiB  # type: ignore[attr-defined]
    log.write_text(json.dumps({**line, "metrics": {"judge_score": 0.25}}) + "\n")  # a line of ours: joined
    sample = client.get("/sample", params={"model": "constant", "task": TASK, "id": record["sample_id"]})
    assert "judge_score" in client.get("/samples", params={"model": "constant", "task": TASK}).text
    assert sample.status_code == 200 and "judge_score" in sample.text


def test_a_judge_log_of_unknown_samples_is_read_past_without_holding_it(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 87: a judge log of 1,000,000 lines for samples the journal lacks was held whole (1,172 MB); now each is
    passed by as read, and no more lines are read than a journal's bound."""
    log, _ = _judged_sample(results)
    line = '{"sample_id": "unknown-%07d", "doc_id": 0, "status": "judged", "metrics": {"judge_score": 1.0}}\n'
    log.write_text("".join(line % i for i in range(100_000)))
    monkeypatch.setattr(judged_columns, "JOURNAL_LINES_MOST", 60_000)
    table, held = peak(lambda: view_client(results).get("/samples", params={"model": "constant", "task": TASK}))
    assert table.status_code == 200 and "only its first 60,000 lines are read" in table.text  # type: ignore[attr-defined]
    assert held < 32 * MiB  # a batch of lines, not the log
