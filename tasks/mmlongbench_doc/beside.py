"""MMLongBench-Doc beside MMLongBench's DocVQA rows drawn from it (issue 65, item 4): where the same model's results
also hold MMLongBench's `*docvqa_mmlongbench_doc_<length>` tasks, the report sets their scores beside this
benchmark's accuracy. They are not the same measurement: MMLongBench samples some of these questions and fits each
document to a token length, and scores with its own rule parse (`score`, 0-100) or, in V1.1, an LLM judge; here every
question sees its whole document (up to 120 pages) and is scored by the paper's three stages. The table says so."""

from __future__ import annotations

import math
import re
from typing import Any

from harness.outputs.results.model_results import ModelResults

DOCVQA_TASK = re.compile(r"^mmlongbench_(?:(v1_1|vlmevalkit)_)?docvqa_mmlongbench_doc_(\d+[km])$")
VERSIONS = {None: "MMLongBench (paper)", "v1_1": "MMLongBench V1.1", "vlmevalkit": "MMLongBench (VLMEvalKit)"}


def _length_key(length: str) -> int:
    return int(length[:-1]) * (1024 if length.endswith("m") else 1)


def docvqa_scores(data: ModelResults) -> dict[tuple[str, str], float]:
    """(MMLongBench set, length) -> its `score` (0-100), from the newest run that has it."""
    found: dict[tuple[str, str], float] = {}
    for _, run in data.runs:  # oldest first: a later run's value replaces an earlier one
        results: dict[str, Any] = dict(run.get("results") or {})
        for task, entry in results.items():
            match = DOCVQA_TASK.match(task)
            value = entry.get("score,none") if isinstance(entry, dict) else None
            if match and isinstance(value, int | float) and not math.isnan(value):
                found[(VERSIONS[match.group(1)], match.group(2))] = float(value)
    return found


def beside_lines(data: ModelResults, ours: float | None, scored: str) -> list[str]:
    """The side-by-side table, or nothing where the model has no MMLongBench DocVQA run."""
    found = docvqa_scores(data)
    if not found:
        return []
    lines = [
        "Beside MMLongBench's DocVQA rows drawn from MMLongBench-Doc (same model; other inputs and scorers: "
        "MMLongBench samples the questions, fits each document to the length and scores its own way):",
        "",
        "| set | input | score |",
        "|---|---|---|",
        f"| MMLongBench-Doc | whole document, up to 120 pages | {'N/A' if ours is None else f'{100 * ours:.1f}'} ({scored}) |",
    ]
    for (version, length), value in sorted(found.items(), key=lambda item: (item[0][0], _length_key(item[0][1]))):
        lines.append(f"| {version} | fitted to {length.upper()} tokens | {value:.1f} (`score`) |")
    return [*lines, ""]
