"""LoCoVQA's configs: one per (task, mode, context length), named `{task}_{mode}_{n}` (e.g. `okvqa_cmp_9`).

The default lengths are the paper's plotted ones, the perfect squares 1..36 (spec §1.1); any n >= 1 is a
config too (`okvqa_int_7`), built when asked for by name. A config's rows do not depend on which other
configs are built beside it (every decision is drawn from a key that names its task, item and length).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from builders.core.errors import BuildError

TASKS = ("okvqa", "mmstar", "mnist", "needle")
MODES = ("cmp", "int")
DEFAULT_LENGTHS = (1, 4, 9, 16, 25, 36)
MAX_DIGITS = 8  # MNIST transcription: 1..8 digits per context (spec §1.5)
TASK_TITLES = {
    "okvqa": "OK-VQA, in-distribution distractors",
    "mmstar": "MMStar, in-distribution distractors",
    "mnist": "MNIST transcription among COCO distractors",
    "needle": "one MNIST digit at every position",
}
_NAME = re.compile(r"^(okvqa|mmstar|mnist|needle)_(cmp|int)_([1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class LocoConfig:
    task: str  # okvqa | mmstar | mnist | needle
    mode: str  # cmp (one composed grid image) | int (the images interleaved)
    length: int  # the visual context length: images in the context, content included

    @property
    def name(self) -> str:
        return f"{self.task}_{self.mode}_{self.length}"

    @property
    def family(self) -> str:
        return f"{self.task}_{self.mode}"

    @property
    def grid_side(self) -> int:
        """Cells per side of the composed grid: the smallest square that holds `length` images."""
        side = 1
        while side * side < self.length:
            side += 1
        return side

    @property
    def digit_counts(self) -> list[int]:
        """MNIST transcription: the digit counts this length holds (1..min(8, n))."""
        return list(range(1, min(MAX_DIGITS, self.length) + 1))


def default_configs() -> dict[str, LocoConfig]:
    """Every task and mode at the default lengths, in canonical order (task, mode, length)."""
    out = {}
    for task in TASKS:
        for mode in MODES:
            for length in DEFAULT_LENGTHS:
                cfg = LocoConfig(task, mode, length)
                out[cfg.name] = cfg
    return out


CONFIGS = default_configs()


def parse_config(name: str) -> LocoConfig | None:
    """The config a name stands for, any length n >= 1, or None."""
    match = _NAME.match(name.strip().lower())
    if match is None:
        return None
    return LocoConfig(match.group(1), match.group(2), int(match.group(3)))


def parse_configs(names: list[str] | None) -> list[LocoConfig]:
    """Config names (None: every default config) -> configs in canonical order; an unknown name is a
    `BuildError` saying the pattern."""
    if not names:
        return list(CONFIGS.values())
    out = []
    for name in names:
        cfg = parse_config(name)
        if cfg is None:
            raise BuildError(
                f"unknown LoCoVQA config {name!r}: expected TASK_MODE_N with TASK one of "
                f"{', '.join(TASKS)}, MODE cmp or int and N >= 1 (e.g. okvqa_cmp_9)"
            )
        out.append(cfg)
    return sorted(set(out), key=lambda c: (TASKS.index(c.task), MODES.index(c.mode), c.length))
