"""MileBench's entry in `builders list` and `builders build milebench` (its flags are `MileBenchOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import BuilderSpec
from builders.milebench.build import MileBenchBuild
from builders.milebench.subsets import ADV, COMBINED, CONFIGS


def _config_line(name: str) -> str:
    cfg = CONFIGS[name]
    how = "combined image" if cfg.mode == COMBINED else "adversarial" if cfg.split == ADV else "interleaved"
    return f"{cfg.subset.task_id:<4} {cfg.subset.name:<24} {how:<15} {cfg.subset.samples} rows"


def _describe(info: Mapping[str, object]) -> str:
    return f"{info['rows']} rows, {info.get('mean_images', 0)} images per row"


BENCHMARK = BuilderSpec(
    MileBenchBuild,
    summary="29 multi-image subsets (realistic, diagnostic), interleaved, combined into one image, adversarial",
    config_lines={name: _config_line(name) for name in CONFIGS},
    describe=_describe,
)
