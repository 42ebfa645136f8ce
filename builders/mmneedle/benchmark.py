"""MMNeedle's entry in `builders list` and `builders build mmneedle` (its flags are `MMNeedleOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import BuilderSpec
from builders.mmneedle.build import MMNeedleBuild
from builders.mmneedle.configs import CONFIGS


def _describe(info: Mapping[str, object]) -> str:
    return f"{info['rows']} rows ({info['positives']} positive, {info['negatives']} negative)"


BENCHMARK = BuilderSpec(
    MMNeedleBuild,
    summary="M images of N x N sub-images, K needles",
    config_lines={
        name: f"M={cfg.M:<2} N={cfg.N} K={cfg.K}  paper subset {cfg.paper_count}+{cfg.paper_count} rows"
        for name, cfg in CONFIGS.items()
    },
    describe=_describe,
)
