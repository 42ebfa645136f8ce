"""What the benchmarks' report sections share in their figures: the line colours and markers, a file name for a
model, saving a figure, and the names a model ran under (to match it with a paper's model)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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


def save_figure(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)
    plt.close(fig)
