"""Regenerate the MileBench task leaves and groups of this folder: `python tasks/milebench/_make_yamls.py`.

The templates (`_default.yaml` and one per scorer family) are written by hand; this script writes one leaf per
builder config (`milebench_{config}`, 87) and, for each of the three sets (the test set of Table 2, the
Combined-image Set, the adversarial set), the paper's groups from the builder's own subset table, so they cannot
drift apart:

- `milebench{set}_{t1 ... i1}`: one of Table 2's 12 task columns, the unweighted mean of its subsets;
- `milebench{set}_realistic`: Overall Real., the mean of the nine realistic tasks T-1 ... S-5;
- `milebench{set}_diagnostic`: Overall Diag., the mean of N-1, N-2 and I-1;
- `milebench{set}_{few,medium,many}`: the mean over the subsets of their rows at one image-count level (subsets
  without such rows left out);
- `milebench{set}`: all of these side by side (no pooled score: Table 2 has none);
- `milebench_all`: the three sets.

`{set}` is empty for the test set, `_combined` and `_adv` for the others. Task and overall groups are
`strict_mean` of `score` (N/A when a member is missing); the level groups are lm-eval's `mean`.
"""

from __future__ import annotations

from pathlib import Path

from builders.milebench.subsets import (
    ADV,
    COMBINED,
    CONFIGS,
    DIAGNOSTIC_TASKS,
    LEVELS,
    REALISTIC_TASKS,
    TASK_IDS,
)

HERE = Path(__file__).resolve().parent
SETS = {"": "the test set (Table 2)", "_combined": "the Combined-image Set", "_adv": "the adversarial set"}
STRICT_SCORE = "aggregate_metric_list:\n  - metric: score\n    aggregation: strict_mean\n"


def leaf_task(config: str) -> str:
    return f"milebench_{config}"


def set_of(config: str) -> str:
    cfg = CONFIGS[config]
    return "_combined" if cfg.mode == COMBINED else "_adv" if cfg.split == ADV else ""


def task_group(task_id: str, suffix: str = "") -> str:
    return f"milebench{suffix}_{task_id.replace('-', '').lower()}"


def group(name: str, members: list[str], comment: str, aggregate: str = STRICT_SCORE) -> None:
    text = f"# {comment}\ngroup: {name}\ntask:\n" + "".join(f"  - {m}\n" for m in members)
    text += aggregate + "benchmark: !function benchmark.BENCHMARK\nmetadata:\n  version: 1.0\n"
    (HERE / f"_group_{name}.yaml").write_text(text)


def main() -> None:
    for old in [*HERE.glob("milebench_*.yaml"), *HERE.glob("_group_*.yaml")]:
        old.unlink()
    for name, cfg in CONFIGS.items():
        (HERE / f"{leaf_task(name)}.yaml").write_text(
            f"include: _{cfg.subset.family}.yaml\ntask: {leaf_task(name)}\ndataset_name: {name}\n"
        )
    for suffix, what in SETS.items():
        leaves = [leaf_task(name) for name in CONFIGS if set_of(name) == suffix]
        for task_id in TASK_IDS:
            members = [
                leaf_task(name)
                for name in CONFIGS
                if set_of(name) == suffix and CONFIGS[name].subset.task_id == task_id
            ]
            group(task_group(task_id, suffix), members, f"{task_id} on {what}: the unweighted mean of its subsets.")
        group(
            f"milebench{suffix}_realistic",
            [task_group(t, suffix) for t in REALISTIC_TASKS],
            f"Overall Real. on {what}: the mean of the nine realistic tasks.",
        )
        group(
            f"milebench{suffix}_diagnostic",
            [task_group(t, suffix) for t in DIAGNOSTIC_TASKS],
            f"Overall Diag. on {what}: the mean of N-1, N-2 and I-1.",
        )
        for level in LEVELS:
            metric = f"score_{level.lower()}"
            group(
                f"milebench{suffix}_{level.lower()}",
                leaves,
                f"{level} images on {what}: the mean over subsets of their {level} rows (subsets without any left "
                "out).",
                f"aggregate_metric_list:\n  - metric: {metric}\n    aggregation: mean\n",
            )
        # Table 2's columns written as the set's own metrics (each the value of the one member that has it), so
        # lm-eval's group table shows them on the set's row.
        side_by_side = [
            ("realistic", "score", "overall_realistic"),
            ("diagnostic", "score", "overall_diagnostic"),
            *((level.lower(), f"score_{level.lower()}", f"score_{level.lower()}") for level in LEVELS),
        ]
        group(
            f"milebench{suffix}",
            [f"milebench{suffix}_{part}" for part, _, _ in side_by_side],
            f"MileBench on {what}: Overall Real., Overall Diag. and the image-count levels side by side.",
            "aggregate_metric_list:\n"
            + "".join(
                f"  - metric: {metric}\n    aggregation: strict_mean\n    members: [milebench{suffix}_{part}]\n"
                + (f"    as: {written}\n" if written != metric else "")
                for part, metric, written in side_by_side
            ),
        )
    group(
        "milebench_all",
        [f"milebench{suffix}" for suffix in SETS],
        "MileBench: the test set, the Combined-image Set and the adversarial set.",
        "",
    )


if __name__ == "__main__":
    main()
