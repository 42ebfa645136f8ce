"""LoCoVQA's entry in `builders list` and `builders build locovqa` (its flags are `LocoVqaOptions`)."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.benchmark import BuilderSpec
from builders.locovqa.build import LocoVqaBuild
from builders.locovqa.configs import CONFIGS, TASK_TITLES, parse_config


def _describe(info: Mapping[str, object]) -> str:
    failed = f", {info['failed_rows']} failed" if info.get("failed_rows") else ""
    return f"{info['rows']} rows{failed}"


def _accepts_config(name: str) -> bool:
    """Any context length n >= 1 is a config (`okvqa_cmp_7`), not only the default ones."""
    return parse_config(name) is not None


BENCHMARK = BuilderSpec(
    LocoVqaBuild,
    summary="a content image among 0-35 distractors, composed (cmp) or interleaved (int): OK-VQA, MMStar, MNIST",
    config_lines={name: f"{TASK_TITLES[cfg.task]}, {cfg.mode}, {cfg.length} image(s)" for name, cfg in CONFIGS.items()},
    describe=_describe,
    accepts_config=_accepts_config,
)
