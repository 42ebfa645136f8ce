"""Helpers of the report tests: evaluate with the in-process `harness` fixture, write the report, read the text of
an SVG figure (as `harness.outputs.report.figures.save_figure` writes it, text kept as text)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

TASKS = "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg,mmneedle_m10_n1_k2_pos"
SVG = "{http://www.w3.org/2000/svg}"


def evaluate(harness, out: Path, data_dir: Path, model: str, *args: Any, tasks: str = TASKS) -> dict[str, Any]:
    """Run `tasks` with `model` into `out`; its results file."""
    run = harness("--tasks", tasks, "--model", model, *args, "--data_dir", data_dir, "--output_path", out)
    assert run.code == 0, run.err
    return run.results(model)


def report_text(harness, out: Path) -> str:
    """`harness report out`; the report.md it wrote."""
    report = harness("report", out)
    assert report.code == 0, report.err
    return (out / "report.md").read_text()


def svg_texts(path: Path) -> list[str]:
    """The text elements of an SVG figure, each joined across its spans."""
    root = ET.parse(path).getroot()
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]
