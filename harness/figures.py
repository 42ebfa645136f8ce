"""A report figure written twice: the PNG the markdown shows, and an SVG beside it for papers and reviews
(vector, its text kept as text so that captions, labels and legends can be searched and edited)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def vector_path(png: Path) -> Path:
    """Where the vector copy of a figure's PNG goes."""
    return png.with_suffix(".svg")


def save_figure(fig: Any, png: Path, dpi: int) -> None:
    """Write `fig` to `png` and, as SVG, to `vector_path(png)`; then close it (a report draws many)."""
    import matplotlib
    import matplotlib.pyplot as plt

    try:
        fig.savefig(png, dpi=dpi)
        # A fixed hash salt and no date keep the SVG the same bytes for the same figure.
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mmlongeval"}):
            fig.savefig(vector_path(png), format="svg", metadata={"Date": None})
    finally:
        plt.close(fig)
