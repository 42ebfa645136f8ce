#!/usr/bin/env python
"""`harness report` on one results folder (the demo's, `make demo`): wall and CPU time, before and after a change.

Variants, run round-robin (a busy machine slows every variant alike), each a fresh process writing to its own
folder:

- `before`: the checkout given by --before (a `git archive` of the older commit), a fresh output folder;
- `cold`: this checkout, a fresh output folder (every figure drawn, in parallel);
- `warm`: this checkout again into the `cold` folder of the same round (figures unchanged: none drawn);
- `no_figures`: this checkout with `--no_figures`;
- `serial`: this checkout, `--jobs 1` (figures drawn one after another in the report's process).

CPU is user + system of the report's process and its workers (`os.wait4` counts waited-for descendants). With
--check, every output folder's report.md (the results path normalised) and figures must be byte-identical with the
first `before` folder's, the cold ones all the same bytes.

Usage: .venv/bin/python bench/report_time.py RESULTS_DIR --before /tmp/old_checkout [--after /tmp/new_checkout]
       [--rounds 3] [--check]       (a checkout: `git archive COMMIT | tar -x -C DIR`)
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def report(checkout: Path, results: Path, out: Path, *flags: str) -> tuple[float, float]:
    """(wall, CPU) seconds of `harness report results --out out` run from `checkout`."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    cmd = [sys.executable, "-m", "harness", "report", str(results), "--out", str(out), *flags]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.read() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def same_output(a: Path, b: Path) -> list[str]:
    """What differs between two report folders: report.md with each folder's path replaced, every figure."""
    differs = []
    if a.joinpath("report.md").read_text().replace(str(a), "OUT") != b.joinpath("report.md").read_text().replace(
        str(b), "OUT"
    ):
        differs.append("report.md")
    figures = sorted(p.name for p in a.iterdir() if p.suffix in (".png", ".svg"))
    if figures != sorted(p.name for p in b.iterdir() if p.suffix in (".png", ".svg")):
        differs.append("the set of figures")
    differs += [name for name in figures if (b / name).exists() and not filecmp.cmp(a / name, b / name, shallow=False)]
    return differs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("--before", type=Path, required=True, help="checkout of the older code")
    parser.add_argument("--after", type=Path, default=ROOT, help="checkout of the newer code (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="check byte-identity of every folder with `before`")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="report_time_"))
    times: dict[str, list[tuple[float, float]]] = {}
    for i in range(args.rounds):
        for variant, checkout, flags, out in (
            ("before", args.before, (), work / f"before{i}"),
            ("cold", args.after, (), work / f"cold{i}"),
            ("warm", args.after, (), work / f"cold{i}"),
            ("no_figures", args.after, ("--no_figures",), work / f"nofig{i}"),
            ("serial", args.after, ("--jobs", "1"), work / f"serial{i}"),
        ):
            times.setdefault(variant, []).append(report(checkout, args.results, out, *flags))
            print(
                f"round {i + 1} {variant}: wall {times[variant][-1][0]:.2f} s, CPU {times[variant][-1][1]:.2f} s",
                flush=True,
            )
    print(f"\n{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end; median of {args.rounds}:")
    print("| variant | wall (s) | CPU (s) |\n|---|---|---|")
    for variant, runs in times.items():
        print(
            f"| {variant} | {statistics.median(w for w, _ in runs):.2f} | {statistics.median(c for _, c in runs):.2f} |"
        )
    if args.check:
        reference = work / "before0"
        for i in range(args.rounds):
            for folder in (work / f"before{i}", work / f"cold{i}", work / f"serial{i}"):
                differs = same_output(reference, folder)
                print(f"{folder.name}: " + ("byte-identical with before0" if not differs else f"DIFFERS: {differs}"))
        differs = same_output(reference, work / "nofig0")
        print(f"nofig0 against before0 (expected: report.md only, no figures): {differs}")


if __name__ == "__main__":
    main()
