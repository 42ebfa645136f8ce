"""The files of a results folder the viewer serves at `/report/NAME`: `report.md`, and the figures `harness report`
wrote beside it, as its manifest `.report_figures.json` lists them (`harness.outputs.figure_batch`), only while
their bytes are those it recorded. Any other file of the folder (a planted `.png`, an `.svg` the report did not
draw, a figure changed since) is answered 404, as is one leading out of the folder (`safe_files`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from harness.outputs.figure_batch import MANIFEST
from harness.view.safe_files import (
    FIGURE_MANIFEST_MOST,
    FIGURE_MOST,
    REPORT_MOST,
    SERVED,
    FileTooLarge,
    contained,
    inside,
    read_within,
)

REPORT = "report.md"


def report_file(root: Path, relative: str) -> tuple[bytes, str] | None:
    """(bytes, media type) of the file `/report/<relative>` names, or None (see the module's docstring); a file past
    its bound (`REPORT_MOST`, `FIGURE_MOST`) raises `FileTooLarge`, not read."""
    target = inside(root, relative)
    if target is None:
        return None
    most, what = (REPORT_MOST, "a report") if relative == REPORT else (FIGURE_MOST, "a figure")
    try:
        data = read_within(target, most, what)
    except FileTooLarge:
        raise
    except OSError:
        return None
    if relative != REPORT and hashlib.sha256(data).hexdigest() != figures(root).get(relative):
        return None
    return data, SERVED[target.suffix.lower()]


def figures(root: Path) -> dict[str, str]:
    """Figure name -> the sha256 of the bytes `harness report` wrote, from the folder's manifest (empty without
    one, or with one that is no manifest)."""
    path = contained(root, root / MANIFEST)
    try:
        if path is None:
            return {}
        manifest: Any = json.loads(read_within(path, FIGURE_MANIFEST_MOST, "a figure manifest").decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(manifest, dict):
        return {}
    return {
        str(name): entry["sha256"]
        for name, entry in manifest.items()
        if isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
    }
