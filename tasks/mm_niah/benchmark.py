"""MM-NIAH, declared once (`harness.config.benchmark`): its section of `harness report` (the paper's per-task scores
and heat maps by context length and needle depth), its hooks for `harness view` and its paper's models. Every task
and group of the folder names it (`benchmark: !function benchmark.BENCHMARK`)."""

from __future__ import annotations

from harness.config.benchmark import Benchmark

BENCHMARK = Benchmark("MM-NIAH")
