"""Regenerate the MMNeedle task leaves and groups of this folder: `python tasks/mmneedle/_make_yamls.py`.

The templates (`_default.yaml`, `_pos_k1.yaml`, `_pos_multi.yaml`, `_neg.yaml`) are written by hand; this
script writes only the 42 leaves (one positive and one negative task per builder config) and the 4
groups (with their summary scores), from the builder's own config list, so the two cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path

from builders.mmneedle.configs import CONFIGS, NEEDLE_COUNTS

HERE = Path(__file__).resolve().parent


def template(k: int, polarity: str) -> str:
    return "_neg.yaml" if polarity == "neg" else ("_pos_k1.yaml" if k == 1 else "_pos_multi.yaml")


def main() -> None:
    for k in NEEDLE_COUNTS:
        members = []
        for name, cfg in CONFIGS.items():
            if cfg.K != k:
                continue
            for polarity in ("pos", "neg"):
                task = f"mmneedle_{name}_{polarity}"
                (HERE / f"{task}.yaml").write_text(
                    f"include: {template(k, polarity)}\ntask: {task}\ndataset_name: {name}\n"
                )
                members.append(task)
        positives = [t for t in members if t.endswith("_pos")]
        negatives = [t for t in members if t.endswith("_neg")]
        (HERE / f"_group_mmneedle_k{k}.yaml").write_text(
            f"# All K={k} configs, positives and negatives. The paper never pools positives with negatives, so the\n"
            "# group's scores keep them apart: exact accuracy over the positive configs, existence accuracy over the\n"
            "# negative ones, each the unweighted mean over configs (a summary; the paper reports configs only).\n"
            f"group: mmneedle_k{k}\ntask:\n"
            + "".join(f"  - {t}\n" for t in members)
            + _pooled(positives, negatives)
            + "metadata:\n  version: 1.0\n"
        )
    groups = [f"mmneedle_k{k}" for k in NEEDLE_COUNTS]
    (HERE / "_group_mmneedle.yaml").write_text(
        "# Every MMNeedle task (21 configs x positives/negatives); positives and negatives never pooled together,\n"
        "# each score the unweighted mean over the K groups (equal config counts: the mean over all configs).\n"
        "group: mmneedle\ntask:\n"
        + "".join(f"  - {g}\n" for g in groups)
        + _pooled([], [], pooled=True)
        + "metadata:\n  version: 1.0\n"
    )


def _pooled(positives: list[str], negatives: list[str], pooled: bool = False) -> str:
    """The group's two summary scores; `pooled`: its members are groups that already wrote them."""
    if pooled:
        return "aggregate_metric_list:\n" + "".join(
            f"  - metric: {m}\n    aggregation: strict_mean\n" for m in ("exact_acc_pos", "existence_acc_neg")
        )
    return (
        "aggregate_metric_list:\n"
        f"  - metric: exact_acc\n    aggregation: strict_mean\n    members: [{', '.join(positives)}]\n"
        "    as: exact_acc_pos\n"
        f"  - metric: existence_acc\n    aggregation: strict_mean\n    members: [{', '.join(negatives)}]\n"
        "    as: existence_acc_neg\n"
    )


if __name__ == "__main__":
    main()
