#!/usr/bin/env python
"""Issue 23 on a GPU: runs of the `vllm` backend over the same requests in different request orders, side by side:
evaluation time less set-up, samples/s, and the prompt tokens vLLM's prefix cache served (its per-request
`num_cached_tokens`, journalled as `usage.cached_tokens`), in total and by length (the task name's `_8k`...`_128k`).
A bare loop's JSON (`scripts/vllm_bare_loop.py --json`) adds its passes (dataset order) as rows.

    python scripts/prefix_cache_measured.py cache=RUN_DIR length=RUN_DIR [--bare bare.json] [--out report.md]

Set-up is what the run's results record in `config.backend_stats` (the engine start and the count's processor
load), the same figures scripts/gpu_check.sh subtracts from the evaluation time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_backends import Run, load_run, throughput  # noqa: E402

LENGTH = re.compile(r"_(\d+k)$")


def length_of(task: str) -> str:
    match = LENGTH.search(task)
    return match.group(1) if match else "-"


def set_up_seconds(run: Run) -> float:
    stats = run.results.get("config", {}).get("backend_stats") or {}
    return float(stats.get("engine_seconds") or 0) + float(stats.get("count_seconds") or 0)


def served(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Prompt tokens and tokens served by the prefix cache, by length and in total, of answered samples."""
    tally: dict[str, dict[str, int]] = {}
    for record in records:
        usage = record.get("usage") or {}
        if not isinstance(usage.get("prompt_tokens"), int):
            continue  # never reached the engine (screened out, failed)
        for key in (length_of(record["task"]), "all"):
            entry = tally.setdefault(key, {"samples": 0, "prompt_tokens": 0, "cached_tokens": 0})
            entry["samples"] += 1
            entry["prompt_tokens"] += usage["prompt_tokens"]
            entry["cached_tokens"] += usage.get("cached_tokens") or 0
    return tally


def measured_run(run: Run) -> dict[str, Any]:
    records = [{**record, "task": task} for task, by_id in run.samples.items() for record in by_id.values()]
    stats = run.results.get("config", {}).get("backend_stats") or {}
    return {
        "speed": throughput(run, exclude=set_up_seconds(run)),
        "set_up_seconds": set_up_seconds(run),
        "engine_calls": stats.get("engine_calls"),
        "served": served(records),
    }


def measured_bare(bare: dict[str, Any]) -> dict[str, Any]:
    """The bare loop's first pass, by length (its samples are that pass's where no per-task pass ran)."""
    records = [
        {"task": s["task"], "usage": {"prompt_tokens": s["prompt_tokens"], "cached_tokens": s.get("cached_tokens")}}
        for s in bare["samples"]
    ]
    first = bare["passes"][0]
    return {
        "speed": {
            "samples": len(bare["samples"]),
            "seconds": first["seconds"],
            "samples_per_s": len(bare["samples"]) / first["seconds"],
        },
        "set_up_seconds": bare["engine_seconds"],
        "engine_calls": first["engine_calls"],
        "served": served(records),
    }


def _share(entry: dict[str, int] | None) -> str:
    if not entry or not entry["prompt_tokens"]:
        return "-"
    return f"{entry['cached_tokens']:,} of {entry['prompt_tokens']:,} ({entry['cached_tokens'] / entry['prompt_tokens']:.1%})"


def render(measured: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| run | samples | engine calls | seconds (less set-up) | set-up s | samples/s | prompt tokens served by "
        "the prefix cache |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, m in measured.items():
        s = m["speed"]
        lines.append(
            f"| {label} | {s['samples']} | {m['engine_calls'] or '-'} | {s['seconds']:.2f} | "
            f"{m['set_up_seconds']:.1f} | {s['samples_per_s']:.3f} | {_share(m['served'].get('all'))} |"
        )
    lengths = sorted(
        {k for m in measured.values() for k in m["served"] if k != "all"},
        key=lambda k: int(k[:-1]) if k[:-1].isdigit() else 0,
    )
    lines += ["", "| length | " + " | ".join(measured) + " |", "|---|" + "---|" * len(measured)]
    lines += [
        f"| {length} | " + " | ".join(_share(m["served"].get(length)) for m in measured.values()) + " |"
        for length in lengths
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=RUN_DIR: a harness output folder (with journals)")
    parser.add_argument("--bare", type=Path, help="a bare loop's --json file")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    measured: dict[str, dict[str, Any]] = {}
    for item in args.runs:
        label, sep, folder = item.partition("=")
        if not sep or not label or not folder:
            parser.error(f"a run is LABEL=RUN_DIR, got {item!r}")
        measured[label] = measured_run(load_run(Path(folder)))
    if args.bare is not None:
        measured["bare, dataset order"] = measured_bare(json.loads(args.bare.read_text())["bare"])
    report = render(measured)
    print(report, end="")
    if args.out:
        args.out.write_text(report)
    if args.json:
        args.json.write_text(json.dumps(measured, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
