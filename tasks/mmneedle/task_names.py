"""MMNeedle's task names read as their configs, and the order the paper's tables give the configs."""

from __future__ import annotations

import re

_CONFIG = re.compile(r"mmneedle_m(\d+)_n(\d+)_k(\d+)_(pos|neg)$")


def config_of(task: str) -> tuple[int, int, int, str] | None:
    """(M, N, K, "pos" or "neg") of an MMNeedle task name."""
    match = _CONFIG.match(task)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)), match.group(4)) if match else None


def paper_order(m: int, n: int, k: int) -> tuple[int, int, int]:
    """The paper's tables go by K, then N (stitching), then M: 1x1 M=10, 2x2 M=1, 2x2 M=10, ..."""
    return k, n, m
