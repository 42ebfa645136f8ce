"""Memory that must not grow with rows (issue 19, section 2): what a run keeps resident of the data files it
hashes and reads, measured from the kernel's own account of the process's mappings (`/proc/self/smaps`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.api import Model, ModelFacts, Request, Response
from harness.inputs.integrity import open_files

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc/self/smaps")


def resident_kib(path: Path) -> int:
    """KiB of `path`'s mappings that count in this process's RSS."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's header line
            inside = len(head) >= 6 and head[5] == str(path)
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


def test_hashing_a_data_file_leaves_none_of_it_resident(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    path.write_bytes(os.urandom(24 << 20))  # bigger than one hashing block
    (file,) = open_files([path])
    assert len(file.sha256) == 64
    assert resident_kib(path) * 1024 < path.stat().st_size / 8, "the hashed file stays resident in full"
    assert file.mapping is not None and file.mapping[-1] == path.read_bytes()[-1]  # still mapped and readable


class ImageReader(Model):
    """A backend that reads every image it is sent (the baselines read none), and answers nothing useful."""

    name = "image-reader"

    def __init__(self) -> None:
        self._facts = ModelFacts(batch_size=4, cache_responses=False)
        self.read_bytes = 0

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        return cls()

    def generate(self, requests: list[Request]) -> list[Response]:  # type: ignore[override]
        self.read_bytes += sum(len(image.data()) for request in requests for image in request.images)
        return [Response("1", finish_reason="stop") for _ in requests]

    def identity(self) -> dict[str, str]:
        return {"model": self.name}


def test_a_run_holds_the_images_of_one_batch_not_of_every_row(data_dir: Path) -> None:
    from harness.config.task_index import TaskIndex
    from harness.running.runner import Runner, RunOptions
    from harness.running.task.task import Task

    task = Task(TaskIndex([]).tasks["mmneedle_m10_n1_k2_pos"])
    task.load(data_dir)
    model = ImageReader()
    Runner(model, RunOptions(progress=False)).run([task])
    files = sorted((data_dir / "mmneedle").rglob("*.parquet"))
    assert model.read_bytes > 256 << 10  # the run read images worth holding on to
    assert sum(resident_kib(f.resolve()) for f in files) * 1024 < model.read_bytes / 8


class RowsWatcher(Model):
    """A backend that notes, at each batch, which of the run's tasks hold their rows in memory."""

    name = "rows-watcher"

    def __init__(self, tasks: list) -> None:
        self._facts = ModelFacts(batch_size=2, cache_responses=False)
        self.tasks = tasks
        self.held: list[tuple[bool, ...]] = []

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        raise TypeError("made by the test")

    def holding(self, *_: object) -> int:
        self.held.append(tuple(task.docs is not None for task in self.tasks))
        return 1

    def generate(self, requests: list[Request]) -> list[Response]:  # type: ignore[override]
        self.holding()
        return [Response("1", finish_reason="stop") for _ in requests]

    def identity(self) -> dict[str, str]:
        return {"model": self.name}


def test_a_run_and_a_screen_hold_the_rows_of_one_task_at_a_time(data_dir: Path) -> None:
    from harness.models.shared.screen_model import ScreenModel
    from harness.run.arguments import parse_options
    from harness.run.plan import plan_run
    from harness.running.runner import Runner, RunOptions
    from harness.running.screen_only import screen_tasks

    argv = [
        "--tasks",
        "mmneedle_m1_n2_k1_pos,mmneedle_m10_n1_k2_pos",
        "--model",
        "constant",
        "--model_args",
        "answer=1",
        "--data_dir",
        str(data_dir),
    ]
    plan = plan_run(parse_options(argv), argv)
    first, second = plan.tasks
    assert first.docs is None and second.docs is None  # checked before the model loads, then let go of
    assert (len(first), len(second)) == (12, 12) and second.max_num_images() == 10

    model = RowsWatcher(plan.tasks)
    results = Runner(model, RunOptions(progress=False)).run(plan.tasks)
    assert sorted(set(model.held)) == [(False, True), (True, False)]  # each batch: its own task's rows only
    assert [r.counts["ok"] for r in results] == [12, 12] and first.docs is None and second.docs is None

    watcher = RowsWatcher(plan.tasks)
    screen = ScreenModel("constant", None, count=watcher.holding, rule="one token", context_length=10)
    screened = screen_tasks(screen, plan.tasks, {}, 0)
    assert sorted(set(watcher.held)) == [(False, True), (True, False)]  # every count: one task's rows
    assert [r.token_range for r in screened] == ["1-1", "1-1"] and first.docs is None
