"""Regenerate the MMLongBench task leaves and groups of this folder: `python tasks/mmlongbench/_make_yamls.py`.

The templates (`_default.yaml` and one per metric family) are written by hand; this script writes the 95
leaves (one task per builder config, `mmlongbench_{config}`) and the groups, from the builder's own config
list and the paper's aggregation (`aggregation.py`), so the three cannot drift apart:

- `mmlongbench_mmniah_{ret,count,reason}_{L}`: the text- and image-needle files of one MM-NIAH task,
  averaged first (spec §5.8);
- `mmlongbench_{vrag,niah,icl,summ,docvqa}_{L}`: a category at one length;
- `mmlongbench_{L}`: the length's average of the five categories;
- `mmlongbench`: every paper length, reported side by side (no pooled score: the paper has none);
- the same leaves and groups at 256K, 512K and 1M (ours, not the paper's: configs grown from the 128K rows,
  `builders.mmlongbench.extend`), without Summarization, which has no config past 128K: there the length's average
  is over the four other categories; `mmlongbench_extended` reports the three side by side;
- `mmlongbench_ablation_{L}` and `mmlongbench_ablation`: the ablation sets (one task per ablation config,
  `mmlongbench_{config}`), reported by `ablation_report.py` beside the paper's Figures 9-10, no pooled score; the
  text-only sets (`triviaqa`, `text_doc`) say where their context stands (`fit_context`, `context.py`), for the
  text-only LLM that cuts it as the official wrapper did.

Every aggregate is `strict_mean` of `score`, and of `score_nonempty` (the paper's API models' averages,
eval_api.py:97-104): unweighted, and N/A when any member is N/A.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from builders.mmlongbench.leaves import (
    ABLATION_CONFIGS,
    CONFIGS,
    EXTENDED_CONFIGS,
    EXTENDED_LENGTHS,
    LEAVES,
    LENGTHS,
    LOADER_IMAGES,
)
from tasks.mmlongbench._make_version_yamls import FAMILY_TEMPLATE, STRICT
from tasks.mmlongbench._make_version_yamls import main as version_yamls
from tasks.mmlongbench.aggregation import CATEGORIES, MMNIAH_PAIRS

HERE = Path(__file__).resolve().parent
ABLATION_REPORT = "benchmark: !function benchmark.ABLATIONS\n"
# The text-only ablation sets: where their context stands, for the text-only LLM that cuts it at its end (`context.py`).
FIT_CONTEXT = "fit_context: !function context.fit_context\n"
OURS = "# Ours, not the paper's: the 128K rows grown past the paper's lengths (builders/mmlongbench/extend.py).\n"
NO_CONFIG = {
    "Summ": "its rows are documents cut from the end, the release holds each only up to its 128K row, and "
    "the paper dropped every document longer than 128K + 24K tokens, so none fills this length."
}


def leaf_task(config: str) -> str:
    return f"mmlongbench_{config}"


def group(
    name: str,
    members: list[str],
    comment: str,
    aggregate: bool = True,
    report: str = "benchmark: !function benchmark.BENCHMARK\n",
) -> None:
    text = f"# {comment}\ngroup: {name}\ntask:\n" + "".join(f"  - {m}\n" for m in members)
    text += (STRICT if aggregate else "") + report + "metadata:\n  version: 1.0\n"
    (HERE / f"_group_{name}.yaml").write_text(text)


def length_groups(length: str, configs: Mapping[str, object]) -> None:
    """The MM-NIAH pairs, the categories and the average at one length, over the leaves with a config there."""
    category_of = {leaf.dataset: leaf.category for leaf in LEAVES}
    pair_of = {files: pair for pair, files in MMNIAH_PAIRS.items()}
    ours = length in EXTENDED_LENGTHS

    def member(item: str | tuple[str, str]) -> str:
        if isinstance(item, tuple):
            return f"mmlongbench_{pair_of[item]}_{length}"
        return leaf_task(f"{category_of[item]}_{item}_{length}")

    def exists(item: str | tuple[str, str]) -> bool:
        return all(f"{category_of[d]}_{d}_{length}" in configs for d in (item if isinstance(item, tuple) else (item,)))

    note = " Ours, not the paper's: rows grown from the 128K rows." if ours else ""
    for pair, files in MMNIAH_PAIRS.items():
        group(
            f"mmlongbench_{pair}_{length}",
            [member(f) for f in files],
            f"MM-NIAH {pair.split('_')[1]} at {length}: text and image needles averaged first (spec §5.8).{note}",
        )
    categories, absent = [], []
    for category, items in CATEGORIES.items():
        if not all(exists(item) for item in items):
            absent.append(category)
            continue
        name = f"mmlongbench_{category.lower()}_{length}"
        group(
            name,
            [member(item) for item in items],
            f"{category} at {length}: the unweighted mean of its datasets; N/A if any is N/A.{note}",
        )
        categories.append(name)
    if not ours:
        group(
            f"mmlongbench_{length}",
            categories,
            f"MMLongBench at {length}: the average of the five categories (the paper's Avg. column).",
        )
        return
    group(
        f"mmlongbench_{length}",
        categories,
        f"MMLongBench at {length}, ours, not the paper's: the average of {len(categories)} categories. "
        + "".join(f"{c} has no config at this length: {NO_CONFIG[c]}" for c in absent),
    )


def main() -> None:
    from tasks.mmlongbench.scoring import METRIC_OF_DATASET

    for old in HERE.glob("mmlongbench_*.yaml"):
        old.unlink()
    for old in HERE.glob("_group_*.yaml"):
        old.unlink()
    for name, cfg in {**CONFIGS, **ABLATION_CONFIGS, **EXTENDED_CONFIGS}.items():
        template = FAMILY_TEMPLATE[METRIC_OF_DATASET[cfg.leaf.dataset]]
        (HERE / f"{leaf_task(name)}.yaml").write_text(
            (OURS if name in EXTENDED_CONFIGS else "")
            + f"include: {template}\ntask: {leaf_task(name)}\ndataset_name: {name}\n"
            + (ABLATION_REPORT if name in ABLATION_CONFIGS else "")
            + (FIT_CONTEXT if name in ABLATION_CONFIGS and LOADER_IMAGES[cfg.leaf.loader] is None else "")
        )
    for length in LENGTHS:
        length_groups(length, CONFIGS)
    group(
        "mmlongbench",
        [f"mmlongbench_{length}" for length in LENGTHS],
        "Every MMLongBench length, reported side by side; no pooled score, as in the paper.",
        aggregate=False,
    )
    for length in EXTENDED_LENGTHS:
        length_groups(length, EXTENDED_CONFIGS)
    group(
        "mmlongbench_extended",
        [f"mmlongbench_{length}" for length in EXTENDED_LENGTHS],
        "Our lengths past the paper's 128K (256K, 512K, 1M), reported side by side; no pooled score.",
        aggregate=False,
    )
    for length in LENGTHS:
        group(
            f"mmlongbench_ablation_{length}",
            [leaf_task(n) for n, c in ABLATION_CONFIGS.items() if c.length == length],
            f"The ablation sets at {length} (data.py's triviaqa, occ_vrag, text-haystack_retrieval-image, text_doc); "
            "each its own measurement, so no pooled score.",
            aggregate=False,
            report=ABLATION_REPORT,
        )
    group(
        "mmlongbench_ablation",
        [f"mmlongbench_ablation_{length}" for length in LENGTHS],
        "Every ablation set at every length, reported beside the paper's Figures 9-10.",
        aggregate=False,
        report=ABLATION_REPORT,
    )
    version_yamls()  # V1.1's and VLMEvalKit's tasks and groups, each version in its own subfolder


if __name__ == "__main__":
    main()
