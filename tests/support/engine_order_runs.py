"""The request-order tests of the engine backends (vllm, sglang): the MMLongBench needle configs whose rows share
haystacks, and a run of a backend's model over their tasks through the runner, read back from its journals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.config.task_index import TaskIndex
from harness.running.runner import Runner, RunOptions
from harness.running.task.task import Task

NIAH_CONFIGS = ("niah_vh_single_8k", "niah_vh_multi_8k")


def journalled_answers(model: Any, data: Path, out: Path) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Run `model` (closed after) over the tasks of `NIAH_CONFIGS` in `data`, 8 new tokens a request, into `out`:
    {task: its journal's (sample id, response, metrics), sorted}."""
    tasks = [Task(TaskIndex([]).tasks[f"mmlongbench_{c}"]) for c in NIAH_CONFIGS]
    for task in tasks:
        task.load(data)
    options = RunOptions(data_dir=data, gen_kwargs={"max_gen_toks": 8}, output_dir=out, progress=False)
    try:
        Runner(model, options).run(tasks)
    finally:
        model.close()
    journals = {}
    for task in tasks:
        lines = (out / f"journal_{task.name}.jsonl").read_text().splitlines()[1:]
        journals[task.name] = sorted((r["sample_id"], r["response"], r["metrics"]) for r in map(json.loads, lines))
    return journals
