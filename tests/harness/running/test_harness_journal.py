"""The journal never ends a run in a traceback: unreadable lines are reported with file:line and their
samples run again; a cut header is repaired; superseded records are compacted away."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.running.journal.journal_file import journal_name
from harness.running.journal.sample_store import SampleStore
from tests.support.run_setups import run_args

TASK = "mmneedle_m1_n2_k1_neg"


def _run(harness, data_dir: Path, out: Path):
    return harness(*run_args(TASK, "constant", model_args="answer=-1", data_dir=data_dir, out=out))


@pytest.mark.slow  # harness runs end to end
def test_unreadable_journal_lines_are_reported_and_run_again(tmp_path: Path, data_dir: Path, harness) -> None:
    first = _run(harness, data_dir, tmp_path)
    assert first.code == 0, first.err
    journal = tmp_path / "constant" / journal_name(TASK)
    lines = journal.read_bytes().splitlines(keepends=True)
    header, records = lines[0], lines[1:]
    damaged = [
        header,
        *records[:3],
        b'{"x": 1}\n',
        b"[1, 2]\n",
        b'{"type": "sample", "sample_id": "\xff\xfe"}\n',
        header,
        b"not json at all\n",
        *records[5:],
    ]  # records 3 and 4 are lost among the damage
    journal.write_bytes(b"".join(damaged))
    again = _run(harness, data_dir, tmp_path)
    assert again.code == 0 and "Traceback" not in again.err, again.err
    messages = [line for line in again.err.splitlines() if "skipped an unreadable journal line" in line]
    assert [m.split(": skipped")[0].rsplit(":", 1)[1] for m in messages] == ["5", "6", "7", "8", "9"]
    assert "(expected a JSON object, got list)" in messages[1] and "(not UTF-8" in messages[2]
    assert "(a second header)" in messages[3] and "(not JSON" in messages[4]
    assert "10 samples resumed from the journal, 2 generated now" in again.err
    assert again.results("constant")["results"][TASK] == first.results("constant")["results"][TASK]
    compacted = journal.read_text().splitlines()
    assert len(compacted) == 1 + 12 and [json.loads(line)["doc_id"] for line in compacted[1:]] == list(range(12))
    third = _run(harness, data_dir, tmp_path)
    assert third.code == 0 and "skipped" not in third.err


@pytest.mark.slow
def test_a_cut_header_is_repaired_and_a_bad_one_is_reported(tmp_path: Path, data_dir: Path, harness) -> None:
    journal = tmp_path / "constant" / journal_name(TASK)
    journal.parent.mkdir(parents=True)
    journal.write_text('{"type": "header", "task": "mmne')  # killed while writing the header
    run = _run(harness, data_dir, tmp_path)
    assert run.code == 0, run.err
    assert "journal" not in run.err.replace(str(journal), "")  # repaired silently: nothing was lost
    journal.write_text("garbage\n")
    run = _run(harness, data_dir, tmp_path)
    assert run.code == 0 and f"{journal}:1: the journal's header is unreadable" in run.err
    assert "starting it afresh" in run.err
    samples = journal.read_text().splitlines()[1:]
    journal.write_text("garbage\n" + "\n".join(samples) + "\n")
    run = _run(harness, data_dir, tmp_path)
    assert run.code == 2 and f"{journal}:1: the journal's header is unreadable" in run.err
    assert "cannot be trusted; delete the file" in run.err and "Traceback" not in run.err


def test_compaction_keeps_the_latest_record_of_each_sample(tmp_path: Path) -> None:
    path = tmp_path / journal_name("t")
    store = SampleStore(path, "t", {"model": "m"})
    store.add([{"doc_id": 1, "sample_id": "b", "status": "error"}, {"doc_id": 0, "sample_id": "a", "status": "ok"}])
    store.add([{"doc_id": 1, "sample_id": "b", "status": "ok", "metrics": {"acc": 1.0}}])
    assert len(path.read_text().splitlines()) == 4
    store.compact()
    store.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("sample_id") for line in lines] == [None, "a", "b"] and lines[2]["status"] == "ok"
    reopened = SampleStore(path, "t", {"model": "m"})
    assert reopened.is_done("a") and reopened.is_done("b") and reopened.outcomes["b"].metrics == {"acc": 1.0}
    reopened.close()
    with pytest.raises(UserError, match="holds samples of a different run"):
        SampleStore(path, "t", {"model": "other"})


def test_a_journal_under_its_old_name_is_taken_over(tmp_path: Path, data_dir: Path, harness) -> None:
    assert _run(harness, data_dir, tmp_path).code == 0
    folder = tmp_path / "constant"
    (folder / journal_name(TASK)).rename(folder / f"samples_{TASK}.jsonl")  # as runs before the rename wrote it
    again = _run(harness, data_dir, tmp_path)
    assert again.code == 0 and "12 samples resumed from the journal, 0 generated now" in again.err
    assert (folder / journal_name(TASK)).is_file() and not (folder / f"samples_{TASK}.jsonl").exists()


POS = "mmneedle_m1_n2_k1_pos"  # its records carry a breakdown (`exact_acc_by_cell`) among their metrics


def _wrong_shapes(records: list[bytes]) -> list[bytes]:
    """Records 0-5 given the wrong shape, in the ways a damaged or hand-edited journal has them."""
    parsed = [json.loads(line) for line in records]
    parsed[0]["metrics"]["exact_acc_by_cell"] = "x"  # a string where [key, value] pairs belong
    parsed[1]["usage"] = "lots"  # a string where token counts belong
    parsed[2]["metrics"] = "m"
    parsed[3]["metrics"]["existence_acc"] = {"a": 1}
    parsed[4]["response"] = ["not", "text"]
    shaped = [(json.dumps(r) + "\n").encode() for r in parsed[:5]]
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"  # beyond the JSON parser's recursion limit
    return [*shaped, deep, *records[6:]]


def test_records_of_the_wrong_shape_are_reported_and_run_again(tmp_path: Path, data_dir: Path, harness) -> None:
    args = run_args(POS, "random", data_dir=data_dir, out=tmp_path)
    first = harness(*args)
    assert first.code == 0, first.err
    journal = tmp_path / "random" / journal_name(POS)
    header, *records = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(header + b"".join(_wrong_shapes(records)))
    again = harness(*args)
    assert again.code == 0 and "Traceback" not in again.err, again.err
    messages = [line for line in again.err.splitlines() if "skipped an unreadable journal line" in line]
    assert [m.split(": skipped")[0] for m in messages] == [f"harness: {journal}:{n}" for n in range(2, 8)]
    assert (
        "(metrics.exact_acc_by_cell is a str, not a number, a list of numbers or a list of [key, number] pairs)"
        in messages[0]
    )
    assert "(usage is a str, not an object)" in messages[1]
    assert "(metrics is a str, not an object)" in messages[2] and "(metrics.existence_acc is a dict," in messages[3]
    assert "(response is a list, not a string)" in messages[4] and "(nested too deeply to read)" in messages[5]
    assert "6 samples resumed from the journal, 6 generated now" in again.err
    assert again.results("random")["results"] == first.results("random")["results"]
    assert again.results("random")["breakdowns"] == first.results("random")["breakdowns"]


def test_a_scorer_whose_metrics_could_not_be_read_back_stops_the_run(tmp_path: Path, data_dir: Path, harness) -> None:
    """What the reader refuses, the writer refuses too: otherwise the sample would run again on every resume."""
    (tmp_path / "utils.py").write_text("def score(doc, results):\n    return {'acc': 'yes'}\n")
    (tmp_path / "t.yaml").write_text(
        "task: says_yes\ndataset_path: mmneedle\ndataset_name: m1_n2_k1\ndoc_to_text: prompt\ndoc_to_visual: images\n"
        "doc_to_target: answer\nprocess_results: !function utils.score\nmetric_list:\n  - metric: acc\n"
    )
    flags = {
        "model_args": "answer=-1",
        "include_path": tmp_path / "t.yaml",
        "data_dir": data_dir,
        "out": tmp_path / "out",
    }
    run = harness(*run_args("says_yes", "constant", **flags), "--limit", "1")
    assert run.code == 2 and "Traceback" not in run.err
    assert run.err.strip().splitlines()[-1] == (
        "harness: error: task 'says_yes': sample 'm1_n2_k1-00000' cannot be journalled: metrics.acc is a str, not a "
        "number, a list of numbers or a list of [key, number] pairs"
    )


def test_a_change_of_scoring_rescores_the_stored_replies_until_they_are_compacted(tmp_path: Path) -> None:
    """The scoring part decides the replies' metrics, never their reuse: a changed one drops them to be scored again,
    and the header keeps the old scoring until compaction writes the records scored anew (a run killed before rescores
    again); the parts that decide reuse still refuse."""
    path = tmp_path / journal_name("t")
    before = {"model": "m", "scoring": {"metrics": ["acc"], "sha256": "1"}}
    after = {"model": "m", "scoring": {"metrics": ["acc", "acc_nonempty"], "sha256": "2"}}
    store = SampleStore(path, "t", before)
    store.add([{"doc_id": 0, "sample_id": "a", "status": "ok", "response": "x", "metrics": {"acc": 1.0}}])
    store.close()
    for _ in range(2):  # killed before compaction: the header still says the old scoring
        reopened = SampleStore(path, "t", after)
        assert reopened.rescoring == "the task's metrics changed (added acc_nonempty)"
        assert reopened.is_done("a") and reopened.outcomes["a"].metrics is None
        reopened.close()
        assert json.loads(path.read_text().splitlines()[0])["parts"] == before
    reopened = SampleStore(path, "t", after)
    reopened.add([{"doc_id": 0, "sample_id": "a", "status": "ok", "response": "x", "metrics": {"acc": 1.0}}])
    reopened.compact()
    reopened.close()
    assert json.loads(path.read_text().splitlines()[0])["parts"] == after
    resumed = SampleStore(path, "t", after)
    assert resumed.rescoring is None and resumed.outcomes["a"].metrics == {"acc": 1.0}
    resumed.close()
    with pytest.raises(UserError, match=r"differs in: model\)"):
        SampleStore(path, "t", {**after, "model": "other"})


def test_a_record_whose_doc_id_is_not_its_samples_row_is_answered_again(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    """A record keyed by a sample's id but naming another row (found by `make fuzz`: a doc_id far out of range made
    `harness merge` an IndexError) is no answer to that sample: it runs again, and the results are as before."""
    args = run_args(POS, "random", data_dir=data_dir, out=tmp_path)
    first = harness(*args)
    assert first.code == 0, first.err
    journal = tmp_path / "random" / journal_name(POS)
    header, *records = journal.read_bytes().splitlines(keepends=True)
    moved = [json.loads(line) for line in records]
    moved[0]["doc_id"], moved[1]["doc_id"] = -(2**70), moved[1]["doc_id"] + 1
    journal.write_bytes(header + b"".join(json.dumps(record).encode() + b"\n" for record in moved))
    again = harness(*args)
    assert again.code == 0 and "Traceback" not in again.err, again.err
    assert f"{len(records) - 2} samples resumed from the journal, 2 generated now" in again.err
    assert again.results("random")["results"] == first.results("random")["results"]
