"""The configs of MMLongBench's versions as a build names and records them: a set name for each version and length
(`--configs v1_1_128k` is V1.1's 19 configs at 128K, `vlmevalkit_256k` VLMEvalKit's at 256K: the names of their task
groups), and what a config's manifest entry says of its version.
"""

from __future__ import annotations

from pathlib import Path

from builders.mmlongbench.leaves import (
    TEXT_ARCHIVES,
    V1_1,
    V1_1_CONFIGS,
    VLMEVALKIT,
    VLMEVALKIT_CONFIGS,
    Config,
)
from builders.mmlongbench.release import TEXT_DIR

# What a config's manifest entry records of its version (the paper's entries say nothing new: they are as before).
VERSION_NOTES = {
    V1_1: "MMLongBench V1.1 (EdinburghNLP/MMLongBench@22b9f27): the paper's rows but for VRAG's sample without "
    "image paths holding a double quote and DocVQA's page labels without ' (page N)'",
    VLMEVALKIT: "VLMEvalKit's published set (ZhaoweiWang/MMLongBench vlmevalkit/, open-compass/VLMEvalKit PR #1592): "
    "rows, images and ids as published",
}


def config_sets() -> dict[str, list[str]]:
    """`v1_1_{length}` and `vlmevalkit_{length}` -> the names of that version's configs at that length."""
    sets: dict[str, list[str]] = {}
    for configs in (V1_1_CONFIGS, VLMEVALKIT_CONFIGS):
        for name, cfg in configs.items():
            prefix = "v1_1" if cfg.version == V1_1 else "vlmevalkit"
            sets.setdefault(f"{prefix}_{cfg.length}", []).append(name)
    return sets


def expand_config_sets(names: list[str] | None) -> list[str] | None:
    """Config names as given, with each version set (`v1_1_128k`, `vlmevalkit_256k`) replaced by its configs."""
    if not names:
        return names
    sets = config_sets()
    out = []
    for item in names:
        for part in item.split(","):
            key = part.strip().lower()
            out.extend(sets.get(key, [part]))
    return out


def has_release_text(root: Path) -> bool:
    """Whether a folder holds the release's test files (`mmlb_data/` or its archive), not only VLMEvalKit's sets."""
    return (root / TEXT_DIR).is_dir() or any((root / name).is_file() for name in TEXT_ARCHIVES)


def version_fields(cfg: Config) -> dict[str, str]:
    return {"version": VERSION_NOTES[cfg.version]} if cfg.version in VERSION_NOTES else {}
