"""The published numbers a run's MMLongBench scores are set beside, one table per version, and which version each of
our tasks ran: the report names, for every cell, the reference it shows and gives a verdict only where that reference
ran the same version.

- `paper`: the paper's Figures 22-26 (`paper_results.csv`; EdinburghNLP/MMLongBench at 26197d2), for the paper's tasks;
- `v1.1`: the numbers published since the paper (`references/v1_1.csv`), for `mmlongbench_v1_1_*`: a cell is
  compared with a figure of V1.1 alone; a figure whose version is another or unknown is listed apart;
- `vlmevalkit`: numbers of VLMEvalKit's sets scored by VLMEvalKit (`references/vlmevalkit.csv`, OpenCompass-style),
  for `mmlongbench_vlmevalkit_*`, alike;
- VLMEvalKit's rows scored as the paper's harness would (`mmlongbench_vlmevalkit_as_paper_*`) have no published
  reference: neither the paper (another sample, other prompts) nor VLMEvalKit (other scoring) ran them;
- our own lengths past 128K (`builders/mmlongbench/extend.py`) have none either: they are ours.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

REFERENCES = Path(__file__).with_name("references")


@dataclass(frozen=True)
class Version:
    """One version of MMLongBench as the report sets it out: its task prefix, what it is, and its reference."""

    key: str
    prefix: str  # `mmlongbench_{prefix}{category}_{dataset}_{length}` and its groups
    title: str
    reference: str | None  # the published table, or None: no reference exists
    reference_file: Path | None


V1_1 = Version(
    "v1.1",
    "v1_1_",
    "MMLongBench V1.1 (EdinburghNLP/MMLongBench at 22b9f27: V1.1's rows, parser and DocVQA judge)",
    "V1.1's published numbers (tasks/mmlongbench/references/v1_1.csv)",
    REFERENCES / "v1_1.csv",
)
VLMEVALKIT = Version(
    "vlmevalkit",
    "vlmevalkit_",
    "MMLongBench, VLMEvalKit's published sets as VLMEvalKit scores them (no prefill, DocVQA by its judge, Summ by "
    "ROUGE-Lsum, rows averaged)",
    "VLMEvalKit/OpenCompass-style numbers (tasks/mmlongbench/references/vlmevalkit.csv)",
    REFERENCES / "vlmevalkit.csv",
)
AS_PAPER = Version(
    "vlmevalkit_as_paper",
    "vlmevalkit_as_paper_",
    "MMLongBench, VLMEvalKit's published sets as the paper's harness scores them (its prefill, scorers and averages)",
    None,
    None,
)
VERSIONS = (V1_1, VLMEVALKIT, AS_PAPER)

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Figure:
    """One published number: whose, which row (a category, Avg, a dataset key, or VLMEvalKit's task) at which length
    (None: the source does not say), 0-100, on how many rows (None: unknown), of which version of the benchmark
    (`Version.key`, or "unknown") and scored by which judge ("unknown" where the source does not say), when and
    where it was published."""

    model: str
    row: str
    length_tokens: int | None
    score: float
    samples: int | None
    version: str
    judge: str
    date: str
    source: str


# A version's comparable figures: (model, row, length tokens) -> the figure
Reference = dict[tuple[str, str, int], Figure]
COLUMNS = ("model", "row", "length_tokens", "score", "samples", "version", "judge", "date", "source")


def _count(value: str) -> int | None:
    return None if value == UNKNOWN else int(value)


def load_figures(path: Path) -> list[Figure]:
    """A reference CSV (`#` lines are its notes): model, row, length_tokens, score, samples, version, judge, date,
    source, a length or sample size "unknown" where the source does not give it; a malformed line is a ValueError
    naming the file and the line."""
    with open(path, encoding="utf-8", newline="") as handle:
        lines = [line for line in handle if not line.startswith("#")]
    reader = csv.DictReader(lines)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (expected {','.join(COLUMNS)})")
    out = []
    for number, row in enumerate(reader, start=2):
        try:
            out.append(
                Figure(
                    row["model"],
                    row["row"],
                    _count(row["length_tokens"]),
                    float(row["score"]),
                    _count(row["samples"]),
                    row["version"] or UNKNOWN,
                    row["judge"] or UNKNOWN,
                    row["date"],
                    row["source"],
                )
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}: data line {number}: {err}") from None
    return out


def load_reference(path: Path, version: str) -> Reference:
    """The figures of `path` that a run of `version` is compared with: that version's, at a known length."""
    return {
        (f.model, f.row, f.length_tokens): f
        for f in load_figures(path)
        if f.version == version and f.length_tokens is not None
    }


def version_of(task: str) -> Version | None:
    """The version a task or group of ours ran, None for the paper's (and the ablations, ours past 128K)."""
    for version in sorted(VERSIONS, key=lambda v: -len(v.prefix)):  # vlmevalkit_as_paper_ before vlmevalkit_
        if task.startswith(f"mmlongbench_{version.prefix}"):
            return version
    return None


_LENGTH = re.compile(r"_(\d+k|1m)$")


def length_of(task: str) -> str | None:
    found = _LENGTH.search(task)
    return found.group(1) if found else None
