"""The MMLongBench ablation sets' section of `harness report` (`benchmark.ABLATIONS` declares it; every
`mmlongbench_ablation_*` task and group names that declaration).

For each model: every ablation set at every length it ran, with the paper's number in parentheses where the
paper gives one for that model (Figure 10: ViQuAE with the entity named, `triviaqa`; Figure 9: MMLongBench-Doc
as OCR text, `text_doc`, its "All" column), and the paper's score of the same model on the images (ViQuAE,
MMLongBench-Doc; Figures 23 and 26) for contrast. A vision-language model's run is read as the paper's "w/ name"
or "w/ OCR" row, a text-only model's (`Qwen2.5-7B-Instruct`, `Qwen2.5-32B-Instruct`) as its "w/ LLM" row.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from builders.mmlongbench.leaves import ABLATION_LEAVES, OFFICIAL_ABLATION_NAMES
from harness.outputs.report.figures import run_names
from harness.outputs.results.model_results import ModelResults
from tasks.mmlongbench.aggregation import load_paper_results
from tasks.mmlongbench.report import _cell
from tasks.mmlongbench.scores import LENGTHS, paper_model_for
from tasks.mmlongbench.scores import metric_value as _number
from tasks.mmlongbench.scoring import METRIC_OF_DATASET

PAPER_ABLATION_CSV = Path(__file__).with_name("paper_ablation_results.csv")
# Each ablation the paper reports, with the main dataset whose image-input score its figure shows beside it.
IMAGE_COUNTERPART = {"triviaqa": ("viquae", "ViQuAE"), "text_doc": ("mmlongbench_doc", "MMLongBench-Doc")}
FIGURE = {"triviaqa": "Figure 10", "text_doc": "Figure 9"}

AblationResults = dict[tuple[str, str, int], tuple[str, float]]


def load_ablation_results(path: Path | str | None = None) -> AblationResults:
    """(model, ablation, length_tokens) -> (the paper's setting, its score), from `paper_ablation_results.csv`."""
    results: AblationResults = {}
    with open(path or PAPER_ABLATION_CSV, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = (row["model"], row["task"], int(row["length_tokens"]))
            if key in results:
                raise ValueError(f"duplicate paper ablation result for {key}")
            results[key] = (row["setting"], float(row["score"]))
    return results


def _paper_score(published: AblationResults, key: tuple[str, str, int]) -> float | None:
    entry = published.get(key)
    return entry[1] if entry is not None else None


def ablation_scores(data: ModelResults) -> dict[tuple[str, str], float | None]:
    """(ablation, length) -> our score for every ablation task run."""
    out: dict[tuple[str, str], float | None] = {}
    for task, entry in data.results.items():
        match = re.fullmatch(r"mmlongbench_ablation_(\w+)_(\d+k)", task)
        if match:
            out[(match.group(1), match.group(2))] = _number(entry)
    return out


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """Markdown lines for one model's ablation tasks (no figure: a handful of numbers per set)."""
    ours = ablation_scores(data)
    if not ours:
        return []
    published = load_ablation_results()
    names = run_names(model, data)
    paper_model = paper_model_for(*names, models=dict.fromkeys(m for m, _, _ in published))
    main_model = paper_model_for(*names)
    paper_key = paper_model or ""  # no published model is named "": nothing beside a model the paper did not run
    lengths = [length for length in LENGTHS if any(key[1] == length for key in ours)]
    lines = ["### MMLongBench ablations", ""]
    if paper_model:
        lines += [
            f"Beside each score, in parentheses: the paper's for **{paper_model}** where it reports this set "
            f"({', '.join(sorted(set(FIGURE.values())))}).",
            "",
        ]
    else:
        lines += ["The paper reports no ablation numbers for this model.", ""]
    lines += [
        "| ablation | official set | metric | " + " | ".join(lengths) + " |",
        "|---|---|---|" + "---|" * len(lengths),
    ]
    for leaf in ABLATION_LEAVES:
        dataset = leaf.dataset
        if not any(key[0] == dataset for key in ours):
            continue
        settings = {
            published[(paper_key, dataset, LENGTHS[length])][0]
            for length in lengths
            if (paper_key, dataset, LENGTHS[length]) in published
        }
        cells = [
            _cell(
                ours[(dataset, length)], _paper_score(published, (paper_key, dataset, LENGTHS[length])), bool(settings)
            )
            if (dataset, length) in ours
            else ""
            for length in lengths
        ]
        official = f"`{OFFICIAL_ABLATION_NAMES[dataset]}`: {leaf.paper_name}"
        if settings:
            official += f" (paper: {', '.join(sorted(settings))}, {FIGURE[dataset]})"
        lines.append(f"| {dataset} | {official} | {METRIC_OF_DATASET[dataset]} | " + " | ".join(cells) + " |")
        if dataset in IMAGE_COUNTERPART and main_model:
            key, paper_name = IMAGE_COUNTERPART[dataset]
            main = load_paper_results()
            values = [main.get((main_model, key, LENGTHS[length])) for length in lengths]
            if any(v is not None for v in values):
                lines.append(
                    f"| ↳ paper, on the images | {paper_name}, {main_model} | | "
                    + " | ".join("" if v is None else f"({v:.1f})" for v in values)
                    + " |"
                )
    return [*lines, "", "Each set is its own measurement: the section pools nothing.", ""]
