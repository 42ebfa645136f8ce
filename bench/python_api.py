"""A sweep through the Python API against the same sweep through the command line, and what `import harness` costs.

Builds MMNeedle's m1_n2_k1 (synthetic, `--limit 50`: 100 rows) under `.scratch/bench_api/`, then runs the random
baseline on its two tasks once per seed, `--seeds` times: in one process with `simple_evaluate`, and as one
`harness` process per run. Prints the median seconds per run of each, and the median time of a bare
`import harness` and of `from harness import simple_evaluate` (each in a fresh interpreter).

    PYTHONPATH=. .venv/bin/python bench/python_api.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(".scratch/bench_api")
TASKS = "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg"


def seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()

    from builders.mmneedle import build_mmneedle

    data = ROOT / "data"
    if not (data / "mmneedle" / "build_manifest.json").is_file():
        build_mmneedle(source="synthetic", out_dir=data, configs=["m1_n2_k1"], limit=50, seed=0, num_proc=1)
    python = sys.executable
    imports = {
        code: statistics.median(seconds([python, "-c", code]) for _ in range(5))
        for code in ("import harness", "from harness import simple_evaluate", "pass")
    }

    from harness import simple_evaluate

    in_process = []
    for seed in range(args.seeds):
        started = time.perf_counter()
        simple_evaluate(tasks=TASKS, model="random", seed=seed, data_dir=data, no_progress=True)
        in_process.append(time.perf_counter() - started)
    by_command = [
        seconds(
            [
                python,
                "-c",
                "import sys; from harness.run.cli import main; sys.exit(main())",
                "--tasks",
                TASKS,
                "--model",
                "random",
                "--seed",
                str(seed),
                "--data_dir",
                str(data),
                "--no_progress",
            ]
        )
        for seed in range(args.seeds)
    ]
    print(
        f"interpreter start: {imports['pass']:.3f} s; import harness: {imports['import harness']:.3f} s; "
        f"from harness import simple_evaluate: {imports['from harness import simple_evaluate']:.3f} s"
    )
    print(
        f"{args.seeds} runs of {TASKS} (100 rows), random baseline: simple_evaluate median "
        f"{statistics.median(in_process):.3f} s a run (first {in_process[0]:.3f} s); a harness process per run "
        f"median {statistics.median(by_command):.3f} s"
    )


if __name__ == "__main__":
    main()
