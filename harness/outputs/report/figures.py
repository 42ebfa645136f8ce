"""What the benchmarks' report sections share in their figures: the line colours and markers, a file name for a
model, the names a model ran under (to match it with a paper's model), and saving a figure twice: the PNG the
markdown shows, and an SVG beside it for papers and reviews (vector, its text kept as text so that captions, labels
and legends can be searched and edited)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.file_writing import write_atomically

# Okabe-Ito: colour-blind-safe
LINE_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def run_names(model: str, data: Any) -> list[str]:
    """The model's name in the results and each checkpoint it ran (`pretrained=`), for matching with a paper's
    model names."""
    names = [model.split(" (")[0]]
    for source in data.sources.values():
        args = source.get("config", {}).get("model_args")
        if isinstance(args, dict):
            names += [str(args.get("pretrained", ""))]
        elif isinstance(args, str):
            names += re.findall(r"pretrained=([^,]+)", args)
    return names


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def vector_path(png: Path) -> Path:
    """Where the vector copy of a figure's PNG goes."""
    return png.with_suffix(".svg")


PNG_DPI = 110


def save_figure(fig: Any, png: Path, dpi: int = PNG_DPI) -> None:
    """Write `fig` to `png` and, as SVG, to `vector_path(png)`; then close it (a report draws many). A report
    section asks for its figures through `harness.outputs.report.figure_batch.figure` instead (drawn once, in parallel)."""
    import matplotlib.pyplot as plt

    try:
        _save(fig, png, "png", dpi)
        _save(fig, vector_path(png), "svg", dpi)
    finally:
        plt.close(fig)


def _save(fig: Any, path: Path, fmt: str, dpi: int) -> None:
    """Drawn into a temporary file renamed over `path`: a link planted at `path` is replaced, never written through."""
    import matplotlib

    if fmt == "png":
        write_atomically(path, lambda handle: fig.savefig(handle, format="png", dpi=dpi))
        return
    # A fixed hash salt and no date keep the SVG the same bytes for the same figure.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mmlongeval"}):
        write_atomically(path, lambda handle: fig.savefig(handle, format="svg", metadata={"Date": None}))
