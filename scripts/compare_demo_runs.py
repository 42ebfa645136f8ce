#!/usr/bin/env python
"""Compare two `make demo` output folders file by file: the check that a refactor keeps builds byte-identical and
results identical (issue 50 used it at each of its commits).

Parquet, arrow and figures are compared by sha256; JSON and JSON-lines files (manifests, results, journals, sample
logs) once times, dates, paths, the commit and the package list are set aside; markdown (cards, report.md) once
paths, dates and the commit are. Files whose names carry a run's time stamp are paired in name order. What issue 50
changed on purpose is set aside too, and said: a task's recorded `report:` key is `benchmark:` (item 4), and journal
and sample-log lines carry `sent_images` (item 3).

    make demo DEMO_DIR=/tmp/before   # on the commit before
    make demo DEMO_DIR=/tmp/after    # on the commit after
    python scripts/compare_demo_runs.py /tmp/before /tmp/after
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

DROP = {
    "sent_images",
    "date",
    "start_time",
    "end_time",
    "total_evaluation_time_seconds",
    "package_versions",
    "git_hash",
    "environment",
}
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+")
# A task's recorded `source` is its YAML's absolute path: the checkout's place (a worktree, a clone) is set aside.
CHECKOUT = re.compile(r"^/\S*?/(?=tasks/\S+\.yaml$)")
KNOWN = {
    ("report", "!function report.section"): ("benchmark", "!function benchmark.BENCHMARK"),
    ("report", "!function ablation_report.section"): ("benchmark", "!function benchmark.ABLATIONS"),
}


def normalised(value: object, root: Path) -> object:
    if isinstance(value, dict):
        pairs = (KNOWN.get((k, v), (k, v)) if isinstance(v, str) else (k, v) for k, v in value.items())
        return {k: normalised(v, root) for k, v in pairs if k not in DROP and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [normalised(v, root) for v in value]
    if isinstance(value, str):
        return CHECKOUT.sub("<CHECKOUT>/", STAMP.sub("<STAMP>", value.replace(str(root), "<ROOT>")))
    return value


def text(path: Path, root: Path) -> str:
    found = STAMP.sub("<STAMP>", path.read_text().replace(str(root), "<ROOT>"))
    found = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?(\.\d+)?( UTC)?", "<DATE>", found)
    found = re.sub(r"took [0-9.]+ s", "took <T> s", found)
    return re.sub(r"commit `[0-9a-f]+`", "commit <HASH>", found)


def json_of(path: Path, root: Path) -> object:
    if path.suffix == ".jsonl":
        return [normalised(json.loads(line), root) for line in path.read_text().splitlines() if line.strip()]
    return normalised(json.loads(path.read_text()), root)


def files(root: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out.setdefault(STAMP.sub("<STAMP>", str(path.relative_to(root))), []).append(path)
    return out


def compare(before: Path, after: Path) -> tuple[dict[str, int], list[str]]:
    """(files compared, by kind; the names of those that differ)."""
    a, b = files(before), files(after)
    counts: dict[str, int] = {}
    problems = []
    for name in sorted(set(a) | set(b)):
        if len(a.get(name, [])) != len(b.get(name, [])):
            problems.append(f"only in one: {name}")
            continue
        for pa, pb in zip(a[name], b[name], strict=True):
            if pa.suffix in (".json", ".jsonl"):
                kind, same = "json", json_of(pa, before) == json_of(pb, after)
            elif pa.suffix == ".md":
                kind, same = "md", text(pa, before) == text(pb, after)
            else:
                digest = [hashlib.sha256(p.read_bytes()).digest() for p in (pa, pb)]
                kind, same = pa.suffix or "other", digest[0] == digest[1]
            counts[kind] = counts.get(kind, 0) + 1
            if not same:
                problems.append(f"differs: {name}")
    return counts, problems


def main(argv: list[str]) -> int:
    before, after = (Path(p).resolve() for p in argv)
    counts, problems = compare(before, after)
    print("compared:", counts, "(set aside on purpose: the report: key now benchmark:; the new sent_images field)")
    print("\n".join(problems) or "no differences")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
