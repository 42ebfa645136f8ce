"""A task's rows are read only while they are held (issue 43 item 4): a document asked for outside `rows()` is a
mistake said in one line, never the whole split read again behind the caller's back and kept."""

from __future__ import annotations

import io
from pathlib import Path

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
