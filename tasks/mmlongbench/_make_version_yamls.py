"""Regenerate the tasks and groups of MMLongBench's other versions, one subfolder each (run by `_make_yamls.py`):

- `v1_1/`: V1.1 (22b9f27) on V1.1's rows (`v1_1_*` configs), `mmlongbench_v1_1_{category}_{dataset}_{length}`, grouped
  as the paper groups (MM-NIAH pairs first, categories, the length's average: unweighted, `strict_mean`);
- `vlmevalkit/`: VLMEvalKit's published 32K-512K rows (`vlmevalkit_*` configs) as VLMEvalKit scores them,
  `mmlongbench_vlmevalkit_{category}_{dataset}_{length}`, grouped as VLMEvalKit's `evaluate` averages (per task and
  overall, row-weighted: `utils_vlmevalkit.row_weighted_mean`);
- `vlmevalkit_as_paper/`: the same rows as the paper's harness runs them, `mmlongbench_vlmevalkit_as_paper_...`,
  grouped as the paper groups.

A leaf's YAML includes the template of its metric family in this folder and the version's own template last; a
group's, its version's group template: each names the version's benchmark declaration (`benchmark.py`: `V1_1`,
`VLMEVALKIT`, `VLMEVALKIT_AS_PAPER`), whose report section is the version's own.
"""

from __future__ import annotations

from pathlib import Path

from builders.mmlongbench.leaves import LEAVES, LENGTHS, VLMEVALKIT_LENGTHS
from tasks.mmlongbench.aggregation import CATEGORIES, MMNIAH_PAIRS

HERE = Path(__file__).resolve().parent
# The paper's template of each metric family (`scoring.METRIC_OF_DATASET`), written by hand beside this script.
FAMILY_TEMPLATE = {
    "sub_em": "_sub_em.yaml",
    "mc_acc": "_mc_acc.yaml",
    "count_acc": "_count_acc.yaml",
    "cls_acc": "_cls_acc.yaml",
    "docvqa_score": "_docvqa_score.yaml",
    "vh_acc_folded": "_vh.yaml",
    "fluency_f1": "_summ.yaml",
}
# V1.1's own template of a family whose judge V1.1 scores its own way (DocVQA's judge; Summ's rows left out on V1.1's
# parse).
V1_1_OWN_TEMPLATE = {"docvqa_score": "../_v1_1_docvqa.yaml", "fluency_f1": "../_v1_1_summ.yaml"}
# The paper's groups: `score` and `score_nonempty` (the API models' averages, eval_api.py:97-104), each `strict_mean`.
STRICT = "aggregate_metric_list:\n" + "".join(
    f"  - metric: {metric}\n    aggregation: strict_mean\n" for metric in ("score", "score_nonempty")
)
VLMEVALKIT_FAMILY = {  # our metric family -> VLMEvalKit's template (its metric's score key)
    "sub_em": "_vlmevalkit_sub_em.yaml",
    "vh_acc_folded": "_vlmevalkit_acc.yaml",
    "count_acc": "_vlmevalkit_soft_acc.yaml",
    "mc_acc": "_vlmevalkit_mc_acc.yaml",
    "cls_acc": "_vlmevalkit_cls_acc.yaml",
    "fluency_f1": "_vlmevalkit_rougeLsum_f1.yaml",
    "docvqa_score": "_vlmevalkit_docvqa.yaml",
}
CATEGORY_OF = {leaf.dataset: leaf.category for leaf in LEAVES}


def _write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.yaml").write_text(text)


def _group(folder: Path, name: str, members: list[str], comment: str, template: str, aggregate: str = STRICT) -> None:
    text = f"# {comment}\ninclude: ../{template}\ngroup: {name}\ntask:\n" + "".join(f"  - {m}\n" for m in members)
    _write(folder, f"_group_{name}", text + aggregate + "metadata:\n  version: 1.0\n")


def _paper_groups(folder: Path, prefix: str, length: str, what: str, template: str) -> None:
    """The paper's groups at one length over `{prefix}{category}_{dataset}_{length}` leaves (`template`: the
    version's group template, which names its benchmark declaration)."""
    pair_of = {files: pair for pair, files in MMNIAH_PAIRS.items()}

    def member(item: str | tuple[str, str]) -> str:
        if isinstance(item, tuple):
            return f"{prefix}{pair_of[item]}_{length}"
        return f"{prefix}{CATEGORY_OF[item]}_{item}_{length}"

    for pair, files in MMNIAH_PAIRS.items():
        _group(
            folder,
            f"{prefix}{pair}_{length}",
            [member(f) for f in files],
            f"{what}: MM-NIAH {pair.split('_')[1]} at {length}, text and image needles averaged first.",
            template,
        )
    categories = []
    for category, items in CATEGORIES.items():
        name = f"{prefix}{category.lower()}_{length}"
        _group(
            folder,
            name,
            [member(item) for item in items],
            f"{what}: {category} at {length}, the unweighted mean of its datasets; N/A if any is N/A.",
            template,
        )
        categories.append(name)
    _group(
        folder,
        f"{prefix}{length}",
        categories,
        f"{what}: MMLongBench at {length}, the average of the five categories (as the paper's Avg.).",
        template,
    )


def _clear(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()


def v1_1() -> None:
    from tasks.mmlongbench.scoring import METRIC_OF_DATASET

    folder = HERE / "v1_1"
    _clear(folder)
    what = "MMLongBench V1.1 (22b9f27)"
    for length in LENGTHS:
        for leaf in LEAVES:
            config = f"v1_1_{leaf.name}_{length}"
            metric = METRIC_OF_DATASET[leaf.dataset]
            include = V1_1_OWN_TEMPLATE.get(metric) or f"[../{FAMILY_TEMPLATE[metric]}, ../_v1_1.yaml]"
            _write(
                folder,
                f"mmlongbench_{config}",
                f"include: {include}\ntask: mmlongbench_{config}\ndataset_name: {config}\n",
            )
        _paper_groups(folder, "mmlongbench_v1_1_", length, what, "_v1_1_group.yaml")
    _group(
        folder,
        "mmlongbench_v1_1",
        [f"mmlongbench_v1_1_{length}" for length in LENGTHS],
        f"{what}: every length, side by side; no pooled score.",
        "_v1_1_group.yaml",
        aggregate="",
    )


def vlmevalkit() -> None:
    from tasks.mmlongbench.scoring import METRIC_OF_DATASET

    folder = HERE / "vlmevalkit"
    _clear(folder)
    what = "VLMEvalKit's MMLongBench set, as VLMEvalKit scores it"
    for length in VLMEVALKIT_LENGTHS:
        by_category: dict[str, list[str]] = {}
        for leaf in LEAVES:
            config = f"vlmevalkit_{leaf.name}_{length}"
            template = VLMEVALKIT_FAMILY[METRIC_OF_DATASET[leaf.dataset]]
            _write(
                folder,
                f"mmlongbench_{config}",
                f"include: ../{template}\ntask: mmlongbench_{config}\ndataset_name: {config}\n",
            )
            by_category.setdefault(leaf.category, []).append(f"mmlongbench_{config}")
        categories = []
        for category, members in by_category.items():
            name = f"mmlongbench_vlmevalkit_{category}_{length}"
            _group(
                folder,
                name,
                members,
                f"{what}: {category} at {length}, the mean of its rows.",
                "_vlmevalkit_group.yaml",
                "",
            )
            categories.append(name)
        _group(
            folder,
            f"mmlongbench_vlmevalkit_{length}",
            categories,
            f"{what}: every row at {length} (VLMEvalKit's overall score: rows weighted, not datasets).",
            "_vlmevalkit_group.yaml",
            "",
        )
    _group(
        folder,
        "mmlongbench_vlmevalkit",
        [f"mmlongbench_vlmevalkit_{length}" for length in VLMEVALKIT_LENGTHS],
        f"{what}: every length, side by side; no pooled score.",
        "_vlmevalkit_declared.yaml",
        aggregate="",
    )


def vlmevalkit_as_paper() -> None:
    from tasks.mmlongbench.scoring import METRIC_OF_DATASET

    folder = HERE / "vlmevalkit_as_paper"
    _clear(folder)
    what = "VLMEvalKit's MMLongBench set, as the paper's harness scores it"
    for length in VLMEVALKIT_LENGTHS:
        for leaf in LEAVES:
            config = f"vlmevalkit_{leaf.name}_{length}"
            task = f"mmlongbench_vlmevalkit_as_paper_{leaf.name}_{length}"
            metric = METRIC_OF_DATASET[leaf.dataset]
            include = (
                "../_vlmevalkit_as_paper_summ.yaml"
                if metric == "fluency_f1"
                else f"[../{FAMILY_TEMPLATE[metric]}, ../_vlmevalkit_as_paper.yaml]"
            )
            _write(folder, task, f"include: {include}\ntask: {task}\ndataset_name: {config}\n")
        _paper_groups(folder, "mmlongbench_vlmevalkit_as_paper_", length, what, "_vlmevalkit_as_paper_group.yaml")
    _group(
        folder,
        "mmlongbench_vlmevalkit_as_paper",
        [f"mmlongbench_vlmevalkit_as_paper_{length}" for length in VLMEVALKIT_LENGTHS],
        f"{what}: every length, side by side; no pooled score.",
        "_vlmevalkit_as_paper_group.yaml",
        aggregate="",
    )


def main() -> None:
    v1_1()
    vlmevalkit()
    vlmevalkit_as_paper()


if __name__ == "__main__":
    main()
