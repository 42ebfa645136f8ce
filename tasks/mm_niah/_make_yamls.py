"""Regenerate the MM-NIAH task leaves and groups of this folder: `python tasks/mm_niah/_make_yamls.py`.

The templates (`_default.yaml`, `_counting.yaml`) are written by hand; this script writes the 12 leaves (one per
builder config, named `mm_niah_{config}`) and the two split groups from the builder's own config list.
"""

from __future__ import annotations

from pathlib import Path

from builders.mm_niah.configs import CONFIGS, SPLITS

HERE = Path(__file__).resolve().parent


def main() -> None:
    for split in SPLITS:
        members = []
        for name, cfg in CONFIGS.items():
            if cfg.split != split:
                continue
            task = f"mm_niah_{name}"
            template = "_counting.yaml" if cfg.task == "counting" else "_default.yaml"
            (HERE / f"{task}.yaml").write_text(f"include: {template}\ntask: {task}\ndataset_name: {name}\n")
            members.append(task)
        (HERE / f"_group_mm_niah_{split}.yaml").write_text(
            f"# The six official tasks of the {split} split. `overall`, as calculate_scores.py's `save`: the mean of\n"
            "# the six tasks' scores (N/A unless all six ran); `acc` likewise over the per-row decisions.\n"
            f"group: mm_niah_{split}\ntask:\n"
            + "".join(f"  - {t}\n" for t in members)
            + "aggregate_metric_list:\n"
            + "  - metric: score\n    aggregation: strict_mean\n"
            + "  - metric: acc\n    aggregation: strict_mean\n"
            + "benchmark: !function benchmark.BENCHMARK\nmetadata:\n  version: 1.0\n"
        )


if __name__ == "__main__":
    main()
