"""`bench/RESULTS.md`: each benchmark script owns one `## ` section and replaces it when it writes."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def write_section(title: str, text: str, results: Path = RESULTS) -> None:
    """Replace the section headed `title` (a `## ` line) with `text`, or append it."""
    current = results.read_text() if results.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(current):
        updated = pattern.sub(lambda _: text.rstrip("\n") + "\n\n", current, count=1)
    else:
        updated = current.rstrip("\n") + "\n\n" + text
    results.write_text(updated.rstrip("\n") + "\n")


def publish(title: str, text: str, write: bool) -> None:
    """Print a benchmark's section, and with `write` (its `--write-results`) put it into RESULTS.md."""
    print(text)
    if write:
        write_section(title, text)
