"""`harness report`'s MMLongBench sections of the other versions a model ran (`references.VERSIONS`: V1.1, VLMEvalKit's
sets as VLMEvalKit and as the paper's harness score them), each declared by its own tasks and groups
(`benchmark.V1_1`, `benchmark.VLMEVALKIT`, `benchmark.VLMEVALKIT_AS_PAPER`), and of our lengths past 128K (part of
the paper's section): each table says, for every cell, the reference beside it, and gives a verdict only where that
reference ran the same version.

- A same-version reference (`references/v1_1.csv`, `references/vlmevalkit.csv`) for the model: in parentheses, then
  the difference and the verdict (`harness.outputs.report.verdict.compare`, as the paper's section: the same items, the
  release's official sample of that version, within the paper's tolerance).
- Otherwise, for V1.1 and the paper-scored VLMEvalKit rows, whose groups are the paper's: the paper's number for the
  model in brackets with a dagger, context only (another version: no verdict).
- VLMEvalKit's own groups (rows averaged, its task names) have no paper counterpart, and our past-128K sets no
  reference at all: their cells are ours alone, and say so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from harness.outputs.report.figures import run_names
from harness.outputs.report.verdict import Paper, VerdictRule, compare, explanation, mode_of
from harness.outputs.report.verdict_family import Family
from harness.outputs.results.estimates import estimate_of, interval_text
from harness.outputs.results.model_results import ModelResults
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES, load_paper_results
from tasks.mmlongbench.references import (
    AS_PAPER,
    UNKNOWN,
    V1_1,
    VLMEVALKIT,
    Figure,
    Reference,
    Version,
    length_of,
    load_figures,
    load_reference,
)
from tasks.mmlongbench.scores import DATASET_ORDER, category_of, metric_value, paper_model_for

ORDER = ("8k", "16k", "32k", "64k", "128k", "256k", "512k", "1m")
TOKENS = {"8k": 8192, "16k": 16384, "32k": 32768, "64k": 65536, "128k": 131072, "256k": 262144, "512k": 524288}
VLMEVALKIT_ROWS = {
    "overall": "",
    "vrag": "vrag_",
    "NIAH": "niah_",
    "ICL": "icl_",
    "summ": "summ_",
    "documentQA": "docvqa_",
}
OTHER_VERSION = "†"
Cell = Callable[[str, str, str | None], str]  # (row, length, our task or group) -> the cell's text


def _release_sample(origin: object) -> str | None:
    return "the version's release as published, the rows its reference ran"


# The same version's reference ran the same release: its cells are judged as the paper's section judges its own.
VERSION_VERDICTS = VerdictRule(5.0, "5 points on the 0-100 scale", _release_sample, "")


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c) for c in r) + " |" for r in rows),
    ]


def _length(tokens: int | None) -> str:
    """A figure's length as our tasks name it (`128k`), or unknown."""
    if tokens is None:
        return UNKNOWN
    return next((name for name, value in TOKENS.items() if value == tokens), str(tokens))


def _lengths(names: list[str]) -> list[str]:
    found = {length_of(name) for name in names}
    return [length for length in ORDER if length in found]


class Beside:
    """A model's numbers of one version beside its references: the same version's (with verdicts), the paper's
    (context only), or none."""

    def __init__(self, model: str, data: ModelResults, version: Version | None) -> None:
        names = run_names(model, data)
        self.data, self.mode = data, mode_of(VERSION_VERDICTS, data.data())
        self.reference: Reference = {}
        self.reference_model: str | None = None
        self.figures: list[Figure] = []  # every published figure of the version's file, whatever its version
        if version is not None and version.reference_file is not None:
            self.reference = load_reference(version.reference_file, version.key)
            self.figures = load_figures(version.reference_file)
            models = list(dict.fromkeys(m for m, _, _ in self.reference))
            self.reference_model = paper_model_for(*names, models=models) if models else None
        context = version in (V1_1, AS_PAPER)
        self.paper_model = paper_model_for(*names) if context else None
        self.paper = load_paper_results() if self.paper_model else {}
        self.family = Family(self.mode)
        self.context_shown = False  # whether a cell showed the paper's number

    def cell(self, name: str, row: str, length: str, paper_row: str | None = None) -> object:
        """The cell of our task or group `name`: beside the same version's reference (with the verdict), or the
        paper's number (context only), or ours alone with its interval."""
        ours = estimate_of(self.data, name, "score", 100)
        tokens = TOKENS.get(length, 0)
        if self.reference_model is not None:
            found = self.reference.get((self.reference_model, row, tokens))
            if found is not None:
                return self.family.add(compare(ours, Paper(found.score, found.samples), self.mode))
        if self.paper_model is not None and paper_row is not None:
            published = self.paper.get((self.paper_model, paper_row, tokens))
            if published is not None:
                self.context_shown = True
                value = "N/A" if ours.value is None else f"{ours.value:.1f}"
                return f"{value} [{published:.1f}{OTHER_VERSION}]"
        return interval_text(ours)

    def intro(self, version: Version) -> list[str]:
        if version.reference is None:
            lines = [f"Reference: none. No one published numbers of these rows scored this way; {_why(version)}"]
        elif self.reference_model is None:
            lines = [f"Reference: {version.reference}; it holds no number for this model (no verdict)."]
        else:
            lines = [f"Reference: {version.reference}, for **{self.reference_model}**. {explanation(self.mode)}"]
        if self.context_shown:
            lines.append(
                f"In brackets with {OTHER_VERSION}: the paper's number for **{self.paper_model}** (Figures 22-26, "
                "MMLongBench at 26197d2), another version: context only, no verdict."
            )
        return [" ".join(lines), "", *self.published(version)]

    def published(self, version: Version) -> list[str]:
        """Every figure published since the paper that the version's file holds, with its source: those of this
        version at a known length are the ones a cell is compared with; the others are listed apart, never judged."""
        if not self.figures:
            return []
        rows = [
            [
                f.model,
                f.row,
                _length(f.length_tokens),
                f"{f.score:.1f}",
                UNKNOWN if f.samples is None else f.samples,
                f.version,
                f.judge,
                f.date,
                f.source,
                "compared" if f.version == version.key and f.length_tokens is not None else "apart",
            ]
            for f in self.figures
        ]
        header = ["model", "row", "length", "score", "rows", "version", "judge", "date", "source", "here"]
        return [
            f"Published since the paper ({version.reference}): a cell is compared with a figure of {version.key} "
            "at its length alone (`compared`); a figure of another or unknown version, or of no stated length, is "
            "listed apart (`apart`), never judged.",
            "",
            *_table(header, rows),
            "",
        ]

    def tally(self) -> list[str]:
        family, self.family = self.family, Family(self.mode)
        return family.tally() if family.comparisons else []


def _why(version: Version) -> str:
    if version is AS_PAPER:
        return "the paper ran its own sample (the release's 8K-128K files) and VLMEvalKit scores these rows its way."
    return "they are ours."


def _paper_shaped(model: str, data: ModelResults, version: Version) -> list[str]:
    """V1.1's or the paper-scored VLMEvalKit rows: the paper's categories and Avg, then each dataset."""
    prefix = f"mmlongbench_{version.prefix}"
    names = [n for n in [*data.results, *data.groups] if n.startswith(prefix)]
    lengths = _lengths(names)
    beside = Beside(model, data, version)
    rows = []
    for row in [*CATEGORIES, AVERAGE]:
        group = f"{prefix}{row.lower()}_" if row != AVERAGE else prefix
        cells = [
            beside.cell(f"{group}{n}", row, n, row) if f"{group}{n}" in data.groups else "not run" for n in lengths
        ]
        rows.append([row, *cells])
    categories = [*_table(["category", *lengths], rows), "", *beside.tally()]
    datasets = []
    for dataset in DATASET_ORDER:
        tasks = {n: f"{prefix}{category_of(dataset)}_{dataset}_{n}" for n in lengths}
        if not any(t in data.results for t in tasks.values()):
            continue
        cells = [_dataset_cell(beside, data, task, dataset, length) for length, task in tasks.items()]
        datasets.append([dataset, *cells])
    table = [*_table(["dataset", *lengths], datasets), "", *beside.tally()]
    return [f"### {version.title}", "", *beside.intro(version), *categories, *table]


def _dataset_cell(beside: Beside, data: ModelResults, task: str, dataset: str, length: str) -> object:
    entry = data.results.get(task)
    if entry is None:
        return ""
    if "score,none" in entry:
        return beside.cell(task, dataset, length, dataset)
    # judged without its judge: the metric it has (ROUGE-Lsum, DocVQA's rule score), under its name, no reference
    found = [(k.split(",")[0], v) for k, v in entry.items() if k.endswith(",none") and "_stderr" not in k]
    name, value = found[0] if found else ("", None)
    return f"{name} {value:.1f}" if isinstance(value, int | float) else "N/A"


def _vlmevalkit(model: str, data: ModelResults) -> list[str]:
    """VLMEvalKit's own numbers: overall and per task (its names), rows averaged."""
    prefix = "mmlongbench_vlmevalkit_"
    names = [n for n in [*data.results, *data.groups] if n.startswith(prefix) and not n.startswith(AS_PAPER_PREFIX)]
    lengths = _lengths(names)
    beside = Beside(model, data, VLMEVALKIT)
    rows = []
    for row, part in VLMEVALKIT_ROWS.items():
        cells = [
            beside.cell(f"{prefix}{part}{n}", row, n) if f"{prefix}{part}{n}" in data.groups else "not run"
            for n in lengths
        ]
        rows.append([row, *cells])
    return [
        f"### {VLMEVALKIT.title}",
        "",
        *beside.intro(VLMEVALKIT),
        *_table(["task", *lengths], rows),
        "",
        "Scores x 100 (VLMEvalKit reports 0-1); `overall` and each task are means over their rows, as "
        "`MMLongBench.evaluate` averages; N/A where a member is (DocVQA needs its judge: `--judge_model`).",
        "",
        *beside.tally(),
    ]


AS_PAPER_PREFIX = f"mmlongbench_{AS_PAPER.prefix}"
EXTENDED = ("256k", "512k", "1m")


def _ours_past_128k(data: ModelResults) -> list[str]:
    """Our lengths past 128K (the 128K rows grown, `builders/mmlongbench/extend.py`): no reference exists."""
    rows = []
    for row in [*(c for c in CATEGORIES if c != "Summ"), AVERAGE]:
        group = f"mmlongbench_{row.lower()}_" if row != AVERAGE else "mmlongbench_"
        values = [
            metric_value(data.groups.get(f"{group}{n}")) if f"{group}{n}" in data.groups else None for n in EXTENDED
        ]
        if any(f"{group}{n}" in data.groups for n in EXTENDED):
            rows.append([row, *("N/A" if v is None else f"{v:.1f}" for v in values)])
    if not rows:
        return []
    return [
        "### MMLongBench past 128K (ours, not the paper's)",
        "",
        "Reference: none. These configs are ours: the release's 128K rows grown to 256K, 512K and 1M "
        "(builders/mmlongbench/extend.py); no one published numbers on them, and they are not VLMEvalKit's 256K/512K "
        "sets. Avg is the mean of the four categories (no Summ past 128K).",
        "",
        *_table(["category", *EXTENDED], rows),
        "",
    ]


def v1_1_section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """V1.1's section (`benchmark.V1_1`, declared by `v1_1/`'s tasks and groups)."""
    names = [*data.results, *data.groups]
    return _paper_shaped(model, data, V1_1) if any(n.startswith(f"mmlongbench_{V1_1.prefix}") for n in names) else []


def vlmevalkit_section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """VLMEvalKit's section, its own scoring (`benchmark.VLMEVALKIT`, declared by `vlmevalkit/`'s)."""
    names = [*data.results, *data.groups]
    if any(n.startswith("mmlongbench_vlmevalkit_") and not n.startswith(AS_PAPER_PREFIX) for n in names):
        return _vlmevalkit(model, data)
    return []


def as_paper_section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """VLMEvalKit's rows scored the paper's way (`benchmark.VLMEVALKIT_AS_PAPER`, declared by
    `vlmevalkit_as_paper/`'s)."""
    names = [*data.results, *data.groups]
    return _paper_shaped(model, data, AS_PAPER) if any(n.startswith(AS_PAPER_PREFIX) for n in names) else []


def past_128k(data: ModelResults) -> list[str]:
    """Our lengths past 128K, part of the paper's section (its tasks, grown)."""
    return _ours_past_128k(data)
