"""Regenerate the LoCoVQA task leaves and groups of this folder: `python tasks/locovqa/_make_yamls.py`.

The templates (`_default.yaml` and one per task: `_okvqa.yaml`, `_mmstar.yaml`, `_mnist.yaml`, `_needle.yaml`)
are written by hand; this script writes one leaf per builder config (`locovqa_{config}`) and the groups:

- `locovqa_{task}_{mode}`: the task in one mode at every default length (the decay curve);
- `locovqa_{task}`: both modes; `locovqa`: every task.

No group pools lengths into one number (the paper reports each length and fits the decay; `harness report`
does both). Other lengths are configs too (`builders build locovqa --configs okvqa_cmp_7`); their leaves go to a
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


def group(name: str, members: list[str], comment: str) -> None:
    text = f"# {comment}\ngroup: {name}\ntask:\n" + "".join(f"  - {m}\n" for m in members)
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
                f"LoCoVQA {task} ({mode}) at every default context length; no pooled score.",
            )
        group(
            f"locovqa_{task}",
            [f"locovqa_{task}_{mode}" for mode in MODES],
            f"LoCoVQA {task}, composed and interleaved.",
        )
    group("locovqa", [f"locovqa_{task}" for task in TASKS], "Every LoCoVQA task, mode and default length.")


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
