#!/usr/bin/env python
"""`harness view`'s pages that read the results files' groups (issue 54): how long the index and each benchmark's
group grid take, first and again, on one results folder (the demo's, `make demo`).

Through the app's own request handling (Starlette's test client, no network), in one process, each round in a fresh
app: the index (one column per model, a row for every task and group the results hold), each benchmark's top group
(its grid of category x length, every cell the results' group of exactly those tasks), and the same group with a
second model beside (`&vs=`), where both models ran it. `first`: the round's first request of the page (the results
files read, the journals indexed); `again`: the same request at once. Median of --repeat rounds; wall and CPU time of
the process.

Usage: .venv/bin/python bench/view_pages.py [DEMO_RESULTS] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from view_index import timed  # noqa: E402 - the sibling benchmark's timer, wall and CPU

# (page, query): the demo's models are `random` (every benchmark) and `constant` (MMNeedle).
PAGES = (
    ("index", "/", {}),
    ("mmlongbench grid", "/samples", {"model": "random", "task": "mmlongbench"}),
    ("milebench grid", "/samples", {"model": "random", "task": "milebench"}),
    ("locovqa grid", "/samples", {"model": "random", "task": "locovqa"}),
    ("mmneedle grid", "/samples", {"model": "random", "task": "mmneedle"}),
    ("mmneedle grid, two models", "/samples", {"model": "random", "task": "mmneedle", "vs": "constant"}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="?", default=Path("demo_out/results"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from harness.view.app import create_app, served_hosts

    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    sizes: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, path, params in PAGES:
            app = create_app(args.results, hosts=served_hosts("127.0.0.1", 8765))
            client = TestClient(app, base_url="http://127.0.0.1:8765")
            for when in ("first", "again"):
                wall, cpu, response = timed(lambda c=client, p=path, q=params: c.get(p, params=q))
                assert response.status_code == 200, (name, response.text[:500])
                times.setdefault((name, when), []).append((wall, cpu))
                sizes[name] = len(response.content)
    print(f"{args.results}, median of {args.repeat} fresh apps:")
    print(
        "| page | bytes | first: wall (s) | first: CPU (s) | again: wall (s) | again: CPU (s) |\n|---|---|---|---|---|---|"
    )
    for name, _, _ in PAGES:
        first, again = times[(name, "first")], times[(name, "again")]
        cells = [statistics.median(x[i] for x in runs) for runs in (first, again) for i in (0, 1)]
        print(f"| {name} | {sizes[name]:,} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
