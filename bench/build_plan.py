"""Benchmark: how close the plan `builders build` prints (`--dry-run`) comes to the build it then makes.

For each case (a source, configs, a limit, an image storage) it runs `builders build ... --dry-run` and
reads the plan's size and time, then runs the same build and measures its Parquet bytes and wall time
(the build command's own process, interpreter start included, as a user would time it). Sources: the
synthetic one, and a COCO-format folder of 640 x 480 JPEGs (`build_mmneedle.make_coco`), whose decoding
costs what real COCO's does.

    .venv/bin/python bench/build_plan.py                   # prints a Markdown section
    .venv/bin/python bench/build_plan.py --write-results   # also updates bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import RESULTS, write_section

sys.path.insert(0, str(Path(__file__).parent))
from build_mmneedle import make_coco  # noqa: E402

SECTION = "## Build plan accuracy"
K1 = "m1_n2_k1,m1_n4_k1,m1_n8_k1,m10_n1_k1,m10_n2_k1,m10_n4_k1,m10_n8_k1"
CASES = (  # source ("coco" = the made folder), configs, limit, image storage
    ("synthetic", "m10_n8_k1", 50, "embedded"),
    ("synthetic", K1, 50, "embedded"),
    ("synthetic", K1, 50, "shared"),
    ("coco", "m10_n8_k1", 50, "embedded"),
    ("coco", K1, 30, "shared"),
)
PLAN = re.compile(r"about ([\d.]+) (B|kB|MB|GB) and ([\d.]+) (s|min|h) on")
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "s": 1, "min": 60, "h": 3600}


def builders(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builders.cli", "build", "mmneedle", *argv], capture_output=True, text=True, check=True
    )


def measure(source: str, configs: str, limit: int, storage: str, workdir: Path) -> dict:
    out = workdir / "out"
    argv = [
        "--source",
        source,
        "--configs",
        configs,
        "--limit",
        str(limit),
        "--image-storage",
        storage,
        "--out",
        str(out),
        "--overwrite",
    ]
    plan = PLAN.search(builders(*argv, "--dry-run").stderr)
    assert plan, "no plan line"
    start = time.perf_counter()
    builders(*argv, "--quiet")
    wall = time.perf_counter() - start
    built = sum(p.stat().st_size for p in (out / "mmneedle").rglob("*.parquet"))
    return {
        "planned_bytes": float(plan[1]) * UNITS[plan[2]],
        "planned_s": float(plan[3]) * UNITS[plan[4]],
        "bytes": built,
        "wall_s": wall,
    }


def run_all(coco: Path) -> str:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-plan-", dir=os.environ.get("BENCH_TMP")) as tmp:
        for source, configs, limit, storage in CASES:
            spec = f"coco={coco}" if source == "coco" else source
            r = measure(spec, configs, limit, storage, Path(tmp))
            print(f"{source} {configs[:20]} {storage}: {r}", file=sys.stderr)
            which = "7 K = 1 configs" if configs == K1 else f"`{configs}`"
            rows.append(
                f"| {source} | {which} | {limit} + {limit} | {storage} | {r['planned_bytes'] / 1e6:.1f} | "
                f"{r['bytes'] / 1e6:.1f} | {r['planned_bytes'] / r['bytes']:.2f} | {r['planned_s']:.0f} | "
                f"{r['wall_s']:.1f} | {r['planned_s'] / r['wall_s']:.2f} |"
            )
    return "\n".join(
        [
            SECTION,
            "",
            "Command: `.venv/bin/python bench/build_plan.py --write-results` (a few minutes). The plan is what "
            "`builders build ... --dry-run` prints (scaled from a few stitched images made on the spot); the build is "
            "the same command without `--dry-run`, 2 worker threads, timed as a whole process. "
            f"{os.cpu_count()} vCPU, shared with other work.",
            "",
            "| source | configs | rows per config | storage | planned MB | built MB | ratio | planned s | built s | ratio |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--coco",
        type=Path,
        default=Path(".scratch/bench_coco"),
        help="the COCO-format folder to make (once) and build from (default .scratch/bench_coco)",
    )
    parser.add_argument(
        "--write-results", action="store_true", help=f"replace the '{SECTION}' section of {RESULTS.name}"
    )
    args = parser.parse_args()
    make_coco(args.coco, 10_000)
    text = run_all(args.coco.resolve())
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
