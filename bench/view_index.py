#!/usr/bin/env python
"""`harness view`: how long the sample table of a 100,000-sample task takes to open, first and again.

The demo's results folder (`make demo`) is copied and one task's journal (random, mmneedle_m10_n2_k1_pos, written
with --log_samples: every line holds its prompt and image hashes) is grown to N samples by repeating its records
under new sample ids (doc ids cycling over the build's rows, so the benchmark's axes are read for every sample).
Then, in one process, through the app's own request handling (Starlette's test client, no network):

- `first page`: the first request for the task's table: index the journal, load the task's verified build (for
  the axes), filter, sort, render 50 rows;
- `again`: the same request once the index is built;
- `wrong, by tokens`: the wrong answers sorted by prompt tokens, descending; `page 1000`: a deep page;
- `sample`: one sample's page (its prompt rebuilt from the build, ten images registered).

Each figure is the median of --repeat runs (the first page: each in a fresh app). Wall and CPU time of the process.

With --compact the records lose what `--log_samples` adds (prompt, target, image hashes): a run's usual journal.

Usage: .venv/bin/python bench/view_index.py [DEMO_RESULTS] [--samples 100000] [--repeat 3] [--compact]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

TASK, MODEL = "mmneedle_m10_n2_k1_pos", "random"


LOGGED = ("prompt", "target", "image_sha256", "image_sizes", "effective_image_sizes", "assistant_prefix")


def grow(results: Path, samples: int, compact: bool = False) -> tuple[Path, int, str]:
    """A copy of the results folder whose journal of TASK holds `samples` samples; its size in bytes; a sample id."""
    work = Path(tempfile.mkdtemp(prefix="view_index_")) / "results"
    shutil.copytree(results, work, ignore=shutil.ignore_patterns("*.png", "*.svg", "samples_*"))
    journal = work / MODEL / f"journal_{TASK}.jsonl"
    lines = journal.read_text().splitlines()
    header, records = lines[0], [json.loads(line) for line in lines[1:]]
    rows = len(records)
    with open(journal, "w") as out:
        out.write(header + "\n")
        for i in range(samples):
            record = dict(records[i % rows], sample_id=f"{records[i % rows]['sample_id']}-{i:06d}")
            if compact:  # as a run without --log_samples writes it
                record = {k: v for k, v in record.items() if k not in LOGGED}
            out.write(json.dumps(record) + "\n")
    return work, journal.stat().st_size, f"{records[1]['sample_id']}-{1:06d}"


def timed(call) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = call()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="?", default=Path("demo_out/results"))
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compact", action="store_true", help="the journal of a run without --log_samples")
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from harness.view.app import create_app, served_hosts

    work, size, sample_id = grow(args.results, args.samples, args.compact)
    print(f"journal: {args.samples:,} samples, {size / 1e6:.0f} MB")
    table = {"model": MODEL, "task": TASK}
    times: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.repeat):
        client = TestClient(create_app(work, hosts=served_hosts("127.0.0.1", 8765)), base_url="http://127.0.0.1:8765")
        for name, params in (
            ("first page", table),
            ("again", table),
            ("wrong, by tokens", {**table, "show": "wrong", "sort": "tokens", "desc": "1"}),
            ("page 1000", {**table, "page": "1000"}),
        ):
            wall, cpu, response = timed(lambda p=params, c=client: c.get("/samples", params=p))
            assert response.status_code == 200 and f"of {args.samples} samples" in response.text, response.text[:500]
            times.setdefault(name, []).append((wall, cpu))
        wall, cpu, response = timed(lambda s=sample_id, c=client: c.get("/sample", params={**table, "id": s}))
        assert response.status_code == 200, response.text[:500]
        times.setdefault("sample", []).append((wall, cpu))
    print(f"median of {args.repeat}:\n| request | wall (s) | CPU (s) |\n|---|---|---|")
    for name, runs in times.items():
        print(f"| {name} | {statistics.median(w for w, _ in runs):.3f} | {statistics.median(c for _, c in runs):.3f} |")
    shutil.rmtree(work.parent)


if __name__ == "__main__":
    main()
