"""A task's rows are read only while they are held (issue 43 item 4): a document asked for outside `rows()` is a
mistake said in one line, never the whole split read again behind the caller's back and kept."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.config.task_index import TaskIndex
from harness.running.request_building import write_out
from harness.running.task.task import Task

TASK = "mmneedle_m1_n2_k1_pos"


def test_documents_are_read_only_while_the_rows_are_held(data_dir: Path) -> None:
    task = Task(TaskIndex().tasks[TASK])
    with pytest.raises(RuntimeError, match=rf"task '{TASK}': its rows are not held: load\(\) it first"):
        task.doc(0)
    task.load(data_dir, 2)
    first = task.doc(0)
    task.unload()
    with pytest.raises(RuntimeError, match=r"its rows are not held: read them inside `with task.rows\(\):`"):
        next(task.iter_docs())
    assert task.docs is None and len(task) == 2  # what is known of the rows is kept
    with task.rows():
        assert task.doc(0) == first and [doc_id for doc_id, _ in task.iter_docs()] == [0, 1]
    assert task.docs is None  # let go of again


def test_write_out_lets_go_of_each_task_s_rows(data_dir: Path) -> None:
    tasks = [Task(TaskIndex().tasks[TASK])]
    tasks[0].load(data_dir, 2)
    tasks[0].unload()
    out = io.StringIO()
    write_out(tasks, {}, 0, out)
    assert f"--- {TASK}, document 0 ---" in out.getvalue() and tasks[0].docs is None


def test_a_limit_holds_the_documents_it_keeps_not_the_split(tmp_path: Path, data_dir: Path, edit_table) -> None:
    """Issue 106, item 1: `--limit` is applied as the rows are read, and MMNeedle's `process_docs` (a pyarrow Table's
    hook) is given them a piece at a time, so that a task holds the piece its documents come from, not its split
    (before, the split read whole and filtered whole for 4 documents: 7.3 GB of a 10 M-row build). Here 50 copies of
    the build's rows, row groups of 24, 4 documents kept."""
    import shutil

    import pyarrow as pa
    import pyarrow.compute as pc

    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    shard = edit_table(root / "mmneedle", "m1_n2_k1", lambda t: pa.concat_tables([t] * 50), row_group_size=24)
    rows = pq.read_table(shard, columns=[c for c in pq.read_schema(shard).names if c != "images"])
    positives = rows.filter(pc.and_(rows.column("is_positive"), rows.column("in_paper_subset")))
    task = Task(TaskIndex().tasks[TASK])
    before = pa.total_allocated_bytes()
    task.load(root, 4)
    held = pa.total_allocated_bytes() - before
    assert held < rows.nbytes / 10, f"{held:,} bytes held for 4 documents of a split of {rows.nbytes:,}"
    assert [doc["id"] for _, doc in task.iter_docs()] == positives.column("id").to_pylist()[:4]
    assert (len(task), task.n_original) == (4, positives.num_rows)  # every row counted, 4 kept
    task.unload()
    with task.rows():  # read again, as far as the 4 documents
        assert [doc["id"] for _, doc in task.iter_docs()] == positives.column("id").to_pylist()[:4]
