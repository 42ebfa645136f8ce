#!/usr/bin/env python
"""Benchmark: a LoCoVQA build's peak memory and temporary disk against what its plan says (issue 30, item 7).

Each case builds from the offline stand-in (`--source synthetic`) in a fresh process and reports the plan's
"peak memory" and "temporary disk", the child's peak resident memory (`ru_maxrss`), wall and CPU time and the
output's size. Pass `--code DIR` to build with another checkout (e.g. main's) for a before/after.

    .venv/bin/python bench/locovqa_memory.py [--rows 1000 10000 20000] [--code /path/to/checkout]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The build in the child, then its own peak resident memory (RUSAGE_CHILDREN would give the largest of all children).
CHILD = (
    "import resource, sys\nfrom builders.cli import main\ncode = main(sys.argv[1:])\n"
    "print(f'maxrss={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)\nsys.exit(code)"
)


def run(code: Path, configs: str, rows: int, extra: list[str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as out:
        command = [
            sys.executable,
            "-c",
            CHILD,
            "build",
            "locovqa",
            "--source",
            "synthetic",
            "--configs",
            configs,
            "--mnist-samples",
            str(rows),
            "--out",
            out,
            *extra,
        ]
        env = {**os.environ, "PYTHONPATH": str(code)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            command, env=env, cwd=out, capture_output=True, text=True, check=True
        )  # cwd: not the checkout
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        size = sum(f.stat().st_size for f in Path(out).rglob("*") if f.is_file())
    plan = next((line for line in done.stderr.splitlines() if line.startswith("plan:")), "")
    planned = re.search(r"peak memory about ([\d.]+ \w+)", plan)
    scratch = re.search(r"([\d.]+ \w+) of temporary disk", plan)
    peak_kib = int(re.search(r"maxrss=(\d+)", done.stderr)[1])
    return {
        "planned peak": planned[1] if planned else "(not planned)",
        "measured peak": f"{peak_kib / 1024:.0f} MiB",
        "planned temporary disk": scratch[1] if scratch else "(not planned)",
        "output": f"{size / 1e6:.1f} MB",
        "wall": f"{wall:.1f} s",
        "cpu": f"{after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime:.1f} s",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 20000])
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    print("| case | rows | planned peak | measured peak | planned temporary disk | output | wall | cpu |")
    print("|---|---|---|---|---|---|---|---|")
    for rows in args.rows:
        figures = run(args.code, "mnist_cmp_1", rows, [])
        print(f"| mnist_cmp_1 | {rows:,} | " + " | ".join(figures.values()) + " |")
    figures = run(args.code, "mnist_cmp_36,okvqa_cmp_36", 4, ["--cell-size", "1000"])
    print("| mnist_cmp_36 + okvqa_cmp_36, 1000 px cells | 36 | " + " | ".join(figures.values()) + " |")


if __name__ == "__main__":
    main()
