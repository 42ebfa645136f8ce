"""The plan a build prints before its long stages: what it will write, and roughly how big and how long.

A benchmark measures a few of its own items (encode a handful of images, say) and scales up; the figures
are a guide for deciding whether to start (a full MMNeedle build is hours and tens of GB), not a promise.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

# Rows are assembled into Arrow tables, written as Parquet and hashed at about this rate on one core
# (bench/build_mmneedle.py, write stage); images dominate the bytes.
WRITE_BYTES_PER_SECOND = 250e6


@dataclass(frozen=True)
class BuildEstimate:
    configs: list[str]  # the configs this build writes (not those it keeps from the build in place)
    rows: int
    num_bytes: float
    seconds: float
    work: str  # the benchmark's own words for the work, e.g. "1,200 source images to decode"
    basis: str  # what the figures were scaled from, e.g. "measured on 6 sample images"
    kept: int = 0  # configs carried over from the build in place
    peak_memory: float | None = None  # the build process's most resident memory, where the benchmark works it out
    scratch_bytes: float | None = None  # temporary files while it builds (spools, spills), besides the output

    def text(self, workers: int) -> str:
        kept = f", keeping {self.kept} built config(s)" if self.kept else ""
        extra = "".join(
            [
                f", peak memory about {human_bytes(self.peak_memory)}" if self.peak_memory else "",
                f", {human_bytes(self.scratch_bytes)} of temporary disk" if self.scratch_bytes is not None else "",
            ]
        )
        return (
            f"plan: {len(self.configs)} config(s){kept}, {self.rows:,} rows ({self.work}); about "
            f"{human_bytes(self.num_bytes)} and {human_duration(self.seconds)} on {workers} worker(s){extra} "
            f"({self.basis}; a rough guide)"
        )


def print_plan(estimate: BuildEstimate, workers: int, stream: TextIO | None = None) -> None:
    print(estimate.text(workers), file=stream or sys.stderr, flush=True)


def human_bytes(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def human_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
