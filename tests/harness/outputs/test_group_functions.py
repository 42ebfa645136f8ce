"""Issue 41, item 11: a group's own aggregation (`aggregation: !function utils.fn` in its `aggregate_metric_list`) that
raises, or returns no number, is one line naming the group, the metric, the function and its YAML, as a task's own
aggregation is; it was a traceback. The samples are journalled first, so the run after the fix generates nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

BODIES = {
    "ZeroDivisionError: float division by zero": "return sum(s.value for s in scores) / 0",
    "RuntimeError: no rule for 2 members": "raise RuntimeError(f'no rule for {len(scores)} members\\nsecond line')",
    "ValueError: could not convert string to float: 'high'": "return 'high'",
    "AttributeError: 'MemberScore' object has no attribute 'score'": "return scores[0].score",
}


@pytest.mark.parametrize("reason", sorted(BODIES))
def test_a_group_function_that_fails_is_one_line_naming_the_group_and_function(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, reason: str
) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(toy_tasks, tasks)
    with (tasks / "utils.py").open("a") as utils:
        utils.write(f"\n\ndef group_rule(scores):\n    {BODIES[reason]}\n")
    group = tasks / "_group_toy.yaml"
    text = group.read_text()
    assert "aggregation: strict_mean" in text
    group.write_text(text.replace("aggregation: strict_mean", "aggregation: !function utils.group_rule"))
    line = next(n for n, row in enumerate(group.read_text().splitlines(), 1) if "!function" in row)
    argv = ("--tasks", "toy", "--include_path", tasks, "--data_dir", toy_dir, "--model", "constant")
    run = harness(*argv, "--model_args", "answer=red", "--output_path", tmp_path / "out")
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert run.err.strip().splitlines()[-1] == (
        f"harness: error: group 'toy': metric 'acc': aggregation `!function utils.group_rule` ({group}:{line}) "
        f"failed on 2 member scores ({reason})"
    )
    group.write_text(text)  # the rule fixed: the journalled samples are scored, none generated again
    again = harness(*argv, "--model_args", "answer=red", "--output_path", tmp_path / "out")
    assert again.code == 0 and "0 generated now" in again.err, again.err
