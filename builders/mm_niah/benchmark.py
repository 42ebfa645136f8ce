"""MM-NIAH's entry in `builders list` and `builders build mm_niah` (its flags are `MMNiahOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import BuilderSpec
from builders.mm_niah.build import MMNiahBuild
from builders.mm_niah.configs import CONFIGS


def _describe(info: Mapping[str, object]) -> str:
    return f"{info['rows']} rows ({info.get('official_task', '')})"


BENCHMARK = BuilderSpec(
    MMNiahBuild,
    summary="needles in interleaved documents of 1K-72K tokens: retrieval, counting, reasoning; text or image needles",
    config_lines={name: f"{cfg.official_name:<22} {cfg.annotation}" for name, cfg in CONFIGS.items()},
    describe=_describe,
)
