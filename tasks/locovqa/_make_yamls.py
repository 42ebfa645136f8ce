"""Regenerate the LoCoVQA task leaves and groups of this folder: `python tasks/locovqa/_make_yamls.py`.

The templates (`_default.yaml` and one per task: `_okvqa.yaml`, `_mmstar.yaml`, `_mnist.yaml`, `_needle.yaml`)
are written by hand; this script writes one leaf per builder config (`locovqa_{config}`) and the groups:

- `locovqa_{task}_{mode}`: the task in one mode at every default length (the decay curve), with its headline
  metric's unweighted mean over the six lengths (`strict_mean`: N/A unless every length ran): one number per series
  and mode for the report's summary and the viewer's index. It is a summary of ours, not the paper's (the paper
  plots each length and fits the decay; `harness report` shows both), as MMNeedle's `mmneedle_k1` is;
- `locovqa_{task}`: both modes; `locovqa`: every task. These pool nothing: the paper keeps the modes and the
  series apart, and their metrics differ (OK-VQA's exact match, the others' accuracy). Other lengths are configs too (`builders build locovqa --configs okvqa_cmp_7`); their leaves go to a
folder of your own for `--include_path`:

    python tasks/locovqa/_make_yamls.py --lengths 7,49 --out my_tasks/
    harness --tasks locovqa_okvqa_cmp_7 --include_path my_tasks/ ...
"""

from __future__ import annotations

import argparse
from pathlib import Path

from builders.locovqa.configs import CONFIGS, DEFAULT_LENGTHS, MODES, TASKS, LocoConfig

HERE = Path(__file__).resolve().parent


def leaf_task(config: str) -> str:
    return f"locovqa_{config}"


def write_leaf(folder: Path, cfg: LocoConfig, template: str) -> None:
    (folder / f"{leaf_task(cfg.name)}.yaml").write_text(
        f"include: {template}\ntask: {leaf_task(cfg.name)}\ndataset_name: {cfg.name}\n"
    )


# The metric each task's series is summarised by: its first, the one the report's tables lead with.
HEADLINE = {"okvqa": "exact_match", "mmstar": "accuracy", "mnist": "accuracy", "needle": "accuracy"}


def group(name: str, members: list[str], comment: str, metric: str | None = None) -> None:
    text = f"# {comment}\ngroup: {name}\ntask:\n" + "".join(f"  - {m}\n" for m in members)
    if metric is not None:
        text += f"aggregate_metric_list:\n  - metric: {metric}\n    aggregation: strict_mean\n"
    (HERE / f"_group_{name}.yaml").write_text(
        text + "benchmark: !function benchmark.BENCHMARK\nmetadata:\n  version: 1.0\n"
    )


def main() -> None:
    for old in [*HERE.glob("locovqa_*.yaml"), *HERE.glob("_group_*.yaml")]:
        old.unlink()
    for cfg in CONFIGS.values():
        write_leaf(HERE, cfg, f"_{cfg.task}.yaml")
    for task in TASKS:
        for mode in MODES:
            group(
                f"locovqa_{task}_{mode}",
                [leaf_task(f"{task}_{mode}_{n}") for n in DEFAULT_LENGTHS],
                f"LoCoVQA {task} ({mode}) at every default context length; its {HEADLINE[task]} averaged over the "
                "lengths (unweighted; N/A unless every length ran): a summary, not the paper's (it plots each length).",
                HEADLINE[task],
            )
        group(
            f"locovqa_{task}",
            [f"locovqa_{task}_{mode}" for mode in MODES],
            f"LoCoVQA {task}, composed and interleaved; no pooled score (the paper keeps the modes apart).",
        )
    group(
        "locovqa",
        [f"locovqa_{task}" for task in TASKS],
        "Every LoCoVQA task, mode and default length; no pooled score (the series' metrics differ).",
    )


def extra_leaves(lengths: list[int], out: Path) -> None:
    """Leaves for lengths outside the defaults, in `out`, including this folder's templates by absolute path."""
    out.mkdir(parents=True, exist_ok=True)
    for task in TASKS:
        for mode in MODES:
            for n in lengths:
                write_leaf(out, LocoConfig(task, mode, n), str(HERE / f"_{task}.yaml"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", help="comma-separated context lengths: write their leaves to --out instead")
    parser.add_argument("--out", type=Path, help="the folder for --lengths leaves (use it as --include_path)")
    args = parser.parse_args()
    if args.lengths:
        if args.out is None:
            parser.error("--lengths needs --out")
        extra_leaves([int(n) for n in args.lengths.split(",") if int(n) >= 1], args.out)
    else:
        main()
