"""The text of an SVG figure, as `harness.figures.save_figure` writes it (text kept as text)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(path: Path) -> list[str]:
    """The text elements of an SVG figure, each joined across its spans."""
    root = ET.parse(path).getroot()
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]
