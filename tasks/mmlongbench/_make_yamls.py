"""Regenerate the MMLongBench task leaves and groups of this folder: `python tasks/mmlongbench/_make_yamls.py`.

The templates (`_default.yaml` and one per metric family) are written by hand; this script writes the 95
leaves (one task per builder config, `mmlongbench_{config}`) and the groups, from the builder's own config
list and the paper's aggregation (`aggregation.py`), so the three cannot drift apart:

- `mmlongbench_mmniah_{ret,count,reason}_{L}`: the text- and image-needle files of one MM-NIAH task,
  averaged first (spec §5.8);
- `mmlongbench_{vrag,niah,icl,summ,docvqa}_{L}`: a category at one length;
- `mmlongbench_{L}`: the length's average of the five categories;
- `mmlongbench`: every length, reported side by side (no pooled score: the paper has none);
- `mmlongbench_ablation_{L}` and `mmlongbench_ablation`: the ablation sets (one task per ablation config,
  `mmlongbench_{config}`), reported by `ablation_report.py` beside the paper's Figures 9-10, no pooled score.

Every aggregate is `strict_mean` of `score`: unweighted, and N/A when any member is N/A.
"""

from __future__ import annotations

from pathlib import Path

from builders.mmlongbench.leaves import ABLATION_CONFIGS, CONFIGS, LEAVES, LENGTHS
from tasks.mmlongbench.aggregation import CATEGORIES, MMNIAH_PAIRS

HERE = Path(__file__).resolve().parent
FAMILY_TEMPLATE = {"sub_em": "_sub_em.yaml", "mc_acc": "_mc_acc.yaml", "count_acc": "_count_acc.yaml",
                   "cls_acc": "_cls_acc.yaml", "docvqa_score": "_docvqa_score.yaml", "vh_acc_folded": "_vh.yaml",
                   "fluency_f1": "_summ.yaml"}
STRICT_SCORE = "aggregate_metric_list:\n  - metric: score\n    aggregation: strict_mean\n"
ABLATION_REPORT = "report: !function ablation_report.section\n"


def leaf_task(config: str) -> str:
    return f"mmlongbench_{config}"


def group(name: str, members: list[str], comment: str, aggregate: bool = True,
          report: str = "report: !function report.section\n") -> None:
    text = f"# {comment}\ngroup: {name}\ntask:\n" + "".join(f"  - {m}\n" for m in members)
    text += (STRICT_SCORE if aggregate else "") + report + "metadata:\n  version: 1.0\n"
    (HERE / f"_group_{name}.yaml").write_text(text)


def main() -> None:
    from tasks.mmlongbench.scoring import METRIC_OF_DATASET

    for old in HERE.glob("mmlongbench_*.yaml"):
        old.unlink()
    for old in HERE.glob("_group_*.yaml"):
        old.unlink()
    for name, cfg in {**CONFIGS, **ABLATION_CONFIGS}.items():
        template = FAMILY_TEMPLATE[METRIC_OF_DATASET[cfg.leaf.dataset]]
        (HERE / f"{leaf_task(name)}.yaml").write_text(
            f"include: {template}\ntask: {leaf_task(name)}\ndataset_name: {name}\n"
            + (ABLATION_REPORT if name in ABLATION_CONFIGS else ""))
    category_of = {leaf.dataset: leaf.category for leaf in LEAVES}
    pair_of = {files: pair for pair, files in MMNIAH_PAIRS.items()}
    for length in LENGTHS:
        def member(item: str | tuple[str, str], length: str = length) -> str:
            if isinstance(item, tuple):
                return f"mmlongbench_{pair_of[item]}_{length}"
            return leaf_task(f"{category_of[item]}_{item}_{length}")

        for pair, files in MMNIAH_PAIRS.items():
            group(f"mmlongbench_{pair}_{length}", [member(f) for f in files],
                  f"MM-NIAH {pair.split('_')[1]} at {length}: text and image needles averaged first (spec §5.8).")
        categories = []
        for category, items in CATEGORIES.items():
            name = f"mmlongbench_{category.lower()}_{length}"
            group(name, [member(item) for item in items],
                  f"{category} at {length}: the unweighted mean of its datasets; N/A if any is N/A.")
            categories.append(name)
        group(f"mmlongbench_{length}", categories,
              f"MMLongBench at {length}: the average of the five categories (the paper's Avg. column).")
    group("mmlongbench", [f"mmlongbench_{length}" for length in LENGTHS],
          "Every MMLongBench length, reported side by side; no pooled score, as in the paper.", aggregate=False)
    for length in LENGTHS:
        group(f"mmlongbench_ablation_{length}", [leaf_task(n) for n, c in ABLATION_CONFIGS.items() if c.length == length],
              f"The ablation sets at {length} (data.py's triviaqa, occ_vrag, text-haystack_retrieval-image, text_doc); "
              "each its own measurement, so no pooled score.", aggregate=False, report=ABLATION_REPORT)
    group("mmlongbench_ablation", [f"mmlongbench_ablation_{length}" for length in LENGTHS],
          "Every ablation set at every length, reported beside the paper's Figures 9-10.", aggregate=False,
          report=ABLATION_REPORT)


if __name__ == "__main__":
    main()
