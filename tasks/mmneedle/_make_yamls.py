"""Regenerate the MMNeedle task and group YAMLs of this folder: `python tasks/mmneedle/_make_yamls.py`.

The YAMLs are committed; this script only keeps the 42 task files and 4 groups consistent.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
MN = [(1, 2), (1, 4), (1, 8), (10, 1), (10, 2), (10, 4), (10, 8)]
KS = [1, 2, 5]


def metric(name: str, aggregation: str = "mean", higher_is_better: bool = True) -> str:
    return (f"  - metric: {name}\n    aggregation: {aggregation}\n"
            f"    higher_is_better: {'true' if higher_is_better else 'false'}\n")


POS_COMMON = ["existence_acc", "index_acc", "exact_acc", "lenient_existence_acc", "lenient_index_acc",
              "lenient_exact_acc", "format_valid_rate"]
BREAKDOWNS = ("  # Breakdowns (written under `breakdowns` in the results, plotted by `harness report`):\n"
              "  # exact accuracy per needle cell (row, column) pooled over images (paper Fig. 2), and per\n"
              "  # image index m (the depth analysis of Fig. 5, computed per depth, not aliased as in evaluate.py).\n"
              + metric("exact_acc_by_cell", "mean_by_key") + metric("exact_acc_by_depth", "mean_by_key"))

TEMPLATES = {
    "_pos_k1.yaml": (
        "# Positive samples, one needle: the metrics of the official evaluate.py, then lenient variants.\n"
        "include: _default.yaml\ntag: mmneedle_pos\nprocess_docs: !function utils.positives\n"
        "process_results: !function utils.process_results_pos\nmetric_list:\n"
        + "".join(metric(m) for m in POS_COMMON) + BREAKDOWNS
    ),
    "_pos_multi.yaml": (
        "# Positive samples, K > 1 needles: evaluate_multi.py's metrics. The individual accuracies are a ratio\n"
        "# of sums: correct positions / sum over samples of min(K, parts answered), exactly as the official code.\n"
        "include: _default.yaml\ntag: mmneedle_pos\nprocess_docs: !function utils.positives\n"
        "process_results: !function utils.process_results_pos\nmetric_list:\n"
        + "".join(metric(m) for m in POS_COMMON)
        + metric("individual_index_acc", "ratio_of_sums") + metric("individual_exact_acc", "ratio_of_sums")
        + "  # Lenient parse, and every one of the K needles in the denominator.\n"
        + metric("lenient_individual_exact_acc") + BREAKDOWNS
    ),
    "_neg.yaml": (
        "# Negative samples: existence accuracy (answering \"no needle\") is the paper's only negative metric;\n"
        "# hallucination_rate = 1 - existence_acc is derived, not a paper metric.\n"
        "include: _default.yaml\ntag: mmneedle_neg\nprocess_docs: !function utils.negatives\n"
        "process_results: !function utils.process_results_neg\nmetric_list:\n"
        + metric("existence_acc") + metric("hallucination_rate", higher_is_better=False)
        + metric("lenient_existence_acc") + metric("format_valid_rate")
    ),
}


def main() -> None:
    for name, text in TEMPLATES.items():
        (HERE / name).write_text(text)
    for k in KS:
        members = []
        for m, n in MN:
            config = f"m{m}_n{n}_k{k}"
            for polarity in ("pos", "neg"):
                task = f"mmneedle_{config}_{polarity}"
                template = "_neg.yaml" if polarity == "neg" else ("_pos_k1.yaml" if k == 1 else "_pos_multi.yaml")
                (HERE / f"{task}.yaml").write_text(f"include: {template}\ntask: {task}\ndataset_name: {config}\n")
                members.append(task)
        (HERE / f"_group_mmneedle_k{k}.yaml").write_text(
            f"# All K={k} configs, positives and negatives. The paper never pools positives with negatives or\n"
            "# configs, so this group has no aggregate: it reports each member task.\n"
            f"group: mmneedle_k{k}\ntask:\n" + "".join(f"  - {t}\n" for t in members)
            + "metadata:\n  version: 1.0\n"
        )
    (HERE / "_group_mmneedle.yaml").write_text(
        "# Every MMNeedle task (21 configs x positives/negatives); no pooled score, as in the paper.\n"
        "group: mmneedle\ntask:\n" + "".join(f"  - mmneedle_k{k}\n" for k in KS) + "metadata:\n  version: 1.0\n"
    )


if __name__ == "__main__":
    main()
