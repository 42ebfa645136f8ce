#!/usr/bin/env python
"""`harness view` at a million rows per model (issue 64): the first `/pairs` page, a group's grid, a task's filtered
table, a sample page and four requests at once, timed against the real server, with its peak memory.

The results folder is made by real runs: MMNeedle's synthetic build (the real builder, configs m1_n2_k1 and m1_n2_k5,
12 rows a set), the `random` and `constant` baselines run on its two positive tasks by `harness`. Then each model's
journal of `mmneedle_m1_n2_k1_pos` is grown to --samples sample records, written by the journal's own line writer
(`harness.running.journal.journal_file.record_line`): the run's records repeated under new sample ids (`<id>-<i>`), their cluster
keys suffixed the same way (an item stays the size it is in the build), doc ids as they are (so every row's prompt
and axes are read from the build).

`harness view` is then started as its own process (`python -m harness view results --port 0`) and asked over HTTP:

- one journal's index built alone (`build_index`, one streaming pass), in a process of its own: its time and peak;
- round 1, a fresh viewer: the first `/pairs` page, sent as soon as it listens (it indexes every journal at start, on a
  thread of its own; the page waits for the two it needs), the same again, the other way, the task's table (wrong answers by tokens, descending), the group's page
  (its grids, 1,000,012 rows), a sample page beside the other model, then four different pages at once;
- round 2, another fresh viewer: four different pages as its very first requests, at once (they share one build of
  each index).

Each figure is wall time of the HTTP request; the viewer's peak resident memory is its VmHWM (/proc) at the end of
each round (and, in round 1, its VmRSS then: the memory it holds with both indexes built).

Usage: .venv/bin/python bench/view_million.py [--samples 1000000] [--work DIR]  (DIR kept: a second run reuses it)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import cast

K1, K5 = "mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k5_pos"
MODELS = ("random", "constant")


def make_results(work: Path, samples: int) -> Path:
    """The results folder of the two baselines, their K = 1 journals grown to `samples` records."""
    from builders.mmneedle import build_mmneedle
    from harness.run.cli import main
    from harness.running.journal.journal_file import SampleRecord, record_line

    data, results = work / "data", work / "results"
    if (results / "constant" / f"journal_{K1}.jsonl").exists():
        return results
    build_mmneedle(source="synthetic", out_dir=data, configs=["m1_n2_k1", "m1_n2_k5"], limit=12, seed=0, num_proc=1)
    common = ["--tasks", f"{K1},{K5}", "--data_dir", str(data), "--output_path", str(results), "--no_progress"]
    assert main(["--model", "random", *common]) == 0
    assert main(["--model", "constant", "--model_args", "answer=-1", *common]) == 0
    for model in MODELS:
        journal = results / model / f"journal_{K1}.jsonl"
        lines = journal.read_text().splitlines()
        header, records = lines[0], [json.loads(line) for line in lines[1:]]
        grown = journal.with_suffix(".grown")
        with open(grown, "w", encoding="utf-8") as out:
            out.write(header + "\n")
            for i in range(samples):
                record = records[i % len(records)]
                suffix = f"-{i:07d}"
                cluster = [f"{key}-{i // len(records):07d}" for key in record.get("cluster") or []]
                grown_record = {**record, "sample_id": record["sample_id"] + suffix, "cluster": cluster}
                out.write(record_line(cast(SampleRecord, grown_record)) + "\n")
        os.replace(grown, journal)
    return results


class Viewer:
    """`harness view` as its own process, on a free port."""

    def __init__(self, results: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(Path.cwd()))
        command = [sys.executable, "-m", "harness", "view", str(results), "--port", "0"]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = re.search(r"(http://\S+?)/? ", line)
        assert found, line
        self.url = found.group(1)

    def get(self, path: str, **params: str) -> tuple[float, int, int]:
        """(seconds, status, bytes) of one request."""
        start = time.perf_counter()
        with urllib.request.urlopen(f"{self.url}{path}?{urllib.parse.urlencode(params)}", timeout=900) as response:
            body = response.read()
            return time.perf_counter() - start, response.status, len(body)

    def memory_mb(self, field: str = "VmHWM") -> float:
        """The viewer's peak (`VmHWM`) or present (`VmRSS`) resident memory."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(30)


BUILD_ALONE = """
import sys, time
from pathlib import Path
from harness.view.samples.sample_index import build_index
start = time.perf_counter()
index = build_index(Path(sys.argv[1]), sys.argv[2])
seconds = time.perf_counter() - start
peak = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]
print(f"{seconds:.1f} {int(peak) / 1024:.0f} {len(index)}")
"""


def build_alone(journal: Path) -> tuple[float, float, int]:
    """(seconds, peak MB, rows) of one journal's index built by one streaming pass, in a process of its own."""
    env = dict(os.environ, PYTHONPATH=str(Path.cwd()))
    out = subprocess.run([sys.executable, "-c", BUILD_ALONE, str(journal), K1], env=env, capture_output=True, text=True)
    seconds, peak, rows = out.stdout.split()
    return float(seconds), float(peak), int(rows)


def at_once(viewer: Viewer, pages: list[tuple[str, dict[str, str]]]) -> tuple[float, list[float]]:
    """Wall time of `pages` requested together, and each one's."""
    times: list[float] = [0.0] * len(pages)

    def one(i: int) -> None:
        seconds, status, _ = viewer.get(pages[i][0], **pages[i][1])
        assert status == 200
        times[i] = seconds

    start = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(pages))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    work = args.work or Path(tempfile.mkdtemp(prefix="view_million_"))
    start = time.perf_counter()
    results = make_results(work, args.samples)
    sizes = {m: (results / m / f"journal_{K1}.jsonl").stat().st_size for m in MODELS}
    print(f"results folder {results} ({time.perf_counter() - start:.0f} s); journals of {K1}: ", end="")
    print(", ".join(f"{m} {size / 1e6:,.0f} MB" for m, size in sizes.items()))
    with open(results / "random" / f"journal_{K1}.jsonl") as journal:  # the first sample record
        next(journal)
        sample = json.loads(next(journal))["sample_id"]

    pairs = {"task": K1, "a": "random", "b": "constant", "metric": "exact_acc"}
    table = {"model": "random", "task": K1, "show": "wrong", "sort": "tokens", "desc": "1", "page": "100"}
    grid = {"model": "random", "task": "mmneedle", "vs": "constant"}
    one = {"model": "random", "task": K1, "id": sample, "vs": "constant"}
    mixed = [("/pairs", {**pairs, "way": "b"}), ("/samples", grid), ("/sample", one), ("/samples", table)]
    seconds, peak, rows = build_alone(results / "random" / f"journal_{K1}.jsonl")
    print(f"one journal's index alone ({rows:,} rows): {seconds:.1f} s, peak RSS {peak:,.0f} MB (the process's)")
    print("| round | request | wall (s) | status | bytes |\n|---|---|---|---|---|")
    viewer = Viewer(results)
    try:
        for name, path, params in (
            ("first /pairs, sent as the viewer starts (waits for both indexes)", "/pairs", pairs),
            ("/pairs again", "/pairs", pairs),
            ("/pairs, the other way", "/pairs", {**pairs, "way": "b"}),
            ("task table: wrong, by tokens desc, page 100", "/samples", table),
            ("group grid page (mmneedle, vs constant)", "/samples", grid),
            ("sample page, vs constant", "/sample", one),
        ):
            seconds, status, size = viewer.get(path, **params)
            print(f"| 1 | {name} | {seconds:.3f} | {status} | {size:,} |")
        wall, each = at_once(viewer, mixed)
        print(
            f"| 1 | 4 at once (pairs, grid, sample, table) | {wall:.3f} | each {', '.join(f'{t:.2f}' for t in each)} | |"
        )
        print(f"| 1 | viewer peak RSS (VmHWM) | {viewer.memory_mb():,.0f} MB | | |")
        print(f"| 1 | viewer RSS now, both indexes held (VmRSS) | {viewer.memory_mb('VmRSS'):,.0f} MB | | |")
    finally:
        viewer.close()
    viewer = Viewer(results)
    try:
        wall, each = at_once(viewer, mixed)
        print(
            f"| 2 | 4 at once, first requests of a fresh viewer | {wall:.3f} | each {', '.join(f'{t:.2f}' for t in each)} | |"
        )
        print(f"| 2 | viewer peak RSS (VmHWM) | {viewer.memory_mb():,.0f} MB | | |")
    finally:
        viewer.close()


if __name__ == "__main__":
    main()
