#!/usr/bin/env python
"""The task index: how long `TaskIndex()` over the installed tasks takes, first in a process and again.

Every `harness` run, report, compare and `ls` builds one; a process that builds several (the Python API, a test
session's in-process runs, `report` beside a run) parses a folder again only where a file it read has changed
(`harness.config.task_index`). `first`: in a fresh process (the parse, then the copy kept for later); `again`: a
second index in the same process (the files read and hashed, the kept parse copied out). Each figure is the median of
--repeat fresh processes.

Usage: .venv/bin/python bench/task_index.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = """
import json, time
from harness.config.task_index import TaskIndex
start = time.perf_counter(); index = TaskIndex(); first = time.perf_counter() - start
start = time.perf_counter(); TaskIndex(); again = time.perf_counter() - start
print(json.dumps({"first": first, "again": again, "tasks": len(index.tasks), "groups": len(index.groups)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", CHILD], check=True, capture_output=True, text=True).stdout)
        for _ in range(args.repeat)
    ]
    print(f"{runs[0]['tasks']} tasks, {runs[0]['groups']} groups; median of {args.repeat} processes:")
    for key in ("first", "again"):
        print(f"  {key}: {statistics.median(run[key] for run in runs) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
