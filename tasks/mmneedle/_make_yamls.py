"""Regenerate the MMNeedle task leaves and groups of this folder: `python tasks/mmneedle/_make_yamls.py`.

The templates (`_default.yaml`, `_pos_k1.yaml`, `_pos_multi.yaml`, `_neg.yaml`) are written by hand; this
script writes only the 42 leaves (one positive and one negative task per builder config) and the 4
groups, from the builder's own config list, so the two cannot drift apart.
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
                (HERE / f"{task}.yaml").write_text(f"include: {template(k, polarity)}\ntask: {task}\ndataset_name: {name}\n")
                members.append(task)
        (HERE / f"_group_mmneedle_k{k}.yaml").write_text(
            f"# All K={k} configs, positives and negatives. The paper never pools positives with negatives or\n"
            "# configs, so this group has no aggregate: it reports each member task.\n"
            f"group: mmneedle_k{k}\ntask:\n" + "".join(f"  - {t}\n" for t in members)
            + "metadata:\n  version: 1.0\n"
        )
    (HERE / "_group_mmneedle.yaml").write_text(
        "# Every MMNeedle task (21 configs x positives/negatives); no pooled score, as in the paper.\n"
        "group: mmneedle\ntask:\n" + "".join(f"  - mmneedle_k{k}\n" for k in NEEDLE_COUNTS)
        + "metadata:\n  version: 1.0\n"
    )


if __name__ == "__main__":
    main()
