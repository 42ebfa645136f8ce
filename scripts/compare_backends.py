"""Compare two harness runs of the same tasks (e.g. the `hf` and `vllm` backends on one checkpoint):
per-sample answer agreement, metric differences, samples/s of each, and the prompt tokens each backend screened
with against those its engine reported (the journals' `token_count` and `usage.prompt_tokens`), sample by sample.

    python scripts/compare_backends.py RUN_A RUN_B --labels hf vllm [--seconds 120 95] [--exclude 0 70]
        [--out comparison.md] [--json comparison.json] [--min_agreement 0.9]

RUN_A / RUN_B are `--output_path` folders (or the model folders inside them); the newest
`results_*.json` and the per-sample journals (`journal_<task>.jsonl`) found under each are read.
Throughput is samples sent to the model divided by the run's time: `--seconds` (wall time measured by
the caller) or else the results' `total_evaluation_time_seconds`, minus `--exclude` (e.g. vLLM's engine
start-up, which the runner times as part of the first task). Samples sent are the results'
`config.requests_sent` (what reached the backend, response-cache hits and resumed samples not
counted) when the run used the cache, else the journals' generated samples; for a speed comparison
run both sides with `--no_cache` into fresh folders, as scripts/gpu_check.sh does.
Exit code 1 when answer agreement is below `--min_agreement`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GENERATED = ("ok", "empty", "refused", "error")  # statuses of samples that reached the model


@dataclass
class Run:
    folder: Path
    results: dict[str, Any]
    samples: dict[str, dict[str, dict[str, Any]]]  # task -> sample_id -> final record


def load_run(folder: Path) -> Run:
    files = sorted(folder.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise SystemExit(f"compare_backends: no results_*.json under {folder}")
    results = json.loads(files[-1].read_text())
    samples: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(folder.rglob("journal_*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if not lines:
            continue
        header = json.loads(lines[0])
        records = samples.setdefault(header.get("task", path.stem.removeprefix("journal_")), {})
        for line in lines[1:]:
            if line.strip():
                record = json.loads(line)
                records[str(record["sample_id"])] = record  # a later record replaces an earlier one
    return Run(folder, results, samples)


def _answer(record: dict[str, Any]) -> str | None:
    text = record.get("response")
    return text.strip() if isinstance(text, str) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def compare(a: Run, b: Run) -> dict[str, Any]:
    tasks = sorted(set(a.samples) & set(b.samples))
    per_task: dict[str, Any] = {}
    total = same = same_metrics = 0
    for task in tasks:
        common = sorted(set(a.samples[task]) & set(b.samples[task]))
        answered = [
            s for s in common if _answer(a.samples[task][s]) is not None and _answer(b.samples[task][s]) is not None
        ]
        agree = [s for s in answered if _answer(a.samples[task][s]) == _answer(b.samples[task][s])]
        metrics_agree = [s for s in answered if a.samples[task][s].get("metrics") == b.samples[task][s].get("metrics")]
        ra = a.results.get("results", {}).get(task, {})
        rb = b.results.get("results", {}).get(task, {})
        metrics = {}
        for key in sorted(set(ra) & set(rb)):
            if key.endswith(",none") and "_stderr" not in key:
                va, vb = _number(ra[key]), _number(rb[key])
                if va is not None and vb is not None:
                    metrics[key.removesuffix(",none")] = {"a": va, "b": vb, "diff": vb - va}
        per_task[task] = {
            "samples": len(common),
            "answered_by_both": len(answered),
            "same_answer": len(agree),
            "same_metrics": len(metrics_agree),
            "metrics": metrics,
            "differing": [
                {"sample_id": s, "a": _answer(a.samples[task][s]), "b": _answer(b.samples[task][s])}
                for s in answered
                if s not in agree
            ][:5],
        }
        total += len(answered)
        same += len(agree)
        same_metrics += len(metrics_agree)
    return {
        "tasks": per_task,
        "only_in_a": sorted(set(a.samples) - set(b.samples)),
        "only_in_b": sorted(set(b.samples) - set(a.samples)),
        "answered_by_both": total,
        "answer_agreement": same / total if total else math.nan,
        "metric_agreement": same_metrics / total if total else math.nan,
    }


def _reported(record: dict[str, Any]) -> int | None:
    value = (record.get("usage") or {}).get("prompt_tokens")
    return value if isinstance(value, int) else None


def token_counts(a: Run, b: Run) -> dict[str, Any]:
    """Sample by sample, per task: each run's screen count (the journal's `token_count`, what the backend
    screened the prompt with) against the prompt length its engine reported (`usage.prompt_tokens`; vLLM's
    `len(prompt_token_ids)`, the hf backend's `input_ids`), and A's screen against B's engine."""
    per_task: dict[str, Any] = {}
    for task in sorted(set(a.samples) & set(b.samples)):
        rows = []
        for sid in sorted(set(a.samples[task]) & set(b.samples[task])):
            ra, rb = a.samples[task][sid], b.samples[task][sid]
            if None in (ra.get("token_count"), rb.get("token_count"), _reported(ra), _reported(rb)):
                continue
            rows.append((ra["token_count"], _reported(ra), rb["token_count"], _reported(rb)))
        if not rows:
            continue
        per_task[task] = {
            "samples": len(rows),
            "a_screen_eq_a_engine": sum(sa == ea for sa, ea, _, _ in rows),
            "b_screen_eq_b_engine": sum(sb == eb for _, _, sb, eb in rows),
            "b_screen_ge_b_engine": sum(sb >= eb for _, _, sb, eb in rows),
            "a_screen_eq_b_engine": sum(sa == eb for sa, _, _, eb in rows),
            "b_screen_minus_engine": [min(sb - eb for _, _, sb, eb in rows), max(sb - eb for _, _, sb, eb in rows)],
            "b_engine_tokens": [min(eb for *_, eb in rows), max(eb for *_, eb in rows)],
        }
    return per_task


def render_tokens(tokens: dict[str, Any], labels: tuple[str, str]) -> list[str]:
    a, b = labels
    if not tokens:
        return []
    lines = [
        "",
        f"Prompt tokens, sample by sample: each backend's screen count against the prompt length its engine "
        f"reported, and {a}'s screen against {b}'s engine.",
        "",
        f"| task | samples | {b} engine tokens | {a} screen = {a} engine | {a} screen = {b} engine | "
        f"{b} screen = {b} engine | {b} screen >= {b} engine | {b} screen - {b} engine |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, t in tokens.items():
        lo, hi = t["b_engine_tokens"]
        dlo, dhi = t["b_screen_minus_engine"]
        lines.append(
            f"| {task} | {t['samples']} | {lo:,}-{hi:,} | {t['a_screen_eq_a_engine']} | "
            f"{t['a_screen_eq_b_engine']} | {t['b_screen_eq_b_engine']} | {t['b_screen_ge_b_engine']} | "
            f"{dlo:+,} to {dhi:+,} |"
        )
    return lines


def generated_samples(run: Run) -> int:
    return sum(1 for records in run.samples.values() for r in records.values() if r.get("status") in GENERATED)


def throughput(run: Run, seconds: float | None = None, exclude: float = 0.0) -> dict[str, float]:
    if seconds is None:
        seconds = float(run.results.get("total_evaluation_time_seconds", "nan"))
    busy = seconds - exclude
    sent = run.results.get("config", {}).get("requests_sent")
    n = sent if isinstance(sent, int) else generated_samples(run)
    return {"samples": n, "seconds": busy, "samples_per_s": n / busy if busy > 0 else math.nan}


def render(summary: dict[str, Any], labels: tuple[str, str], speeds: tuple[dict[str, float], dict[str, float]]) -> str:
    a, b = labels
    lines = [f"# Backend comparison: {a} vs {b}", ""]
    lines.append(
        f"Answer agreement: {summary['same_answers']}/{summary['answered_by_both']} = "
        f"{summary['answer_agreement']:.1%}; per-sample metrics agree on {summary['metric_agreement']:.1%}."
    )
    for side, label in (("only_in_a", a), ("only_in_b", b)):
        if summary[side]:
            lines.append(f"Tasks only in {label}: {', '.join(summary[side])}")
    lines += ["", "| backend | samples | seconds | samples/s |", "|---|---|---|---|"]
    for label, speed in zip(labels, speeds, strict=True):
        lines.append(f"| {label} | {speed['samples']} | {speed['seconds']:.1f} | {speed['samples_per_s']:.2f} |")
    lines += ["", f"| task | metric | {a} | {b} | diff |", "|---|---|---|---|---|"]
    for task, entry in summary["tasks"].items():
        lines.append(f"| {task} | same answer | {entry['same_answer']}/{entry['answered_by_both']} | | |")
        for name, m in entry["metrics"].items():
            lines.append(f"| | {name} | {m['a']:.4f} | {m['b']:.4f} | {m['diff']:+.4f} |")
    lines += render_tokens(summary.get("tokens", {}), labels)
    differing = [(t, d) for t, e in summary["tasks"].items() for d in e["differing"]]
    if differing:
        lines += ["", "First differing answers:", ""]
        lines += [f"- {t} {d['sample_id']}: {a}={d['a']!r} {b}={d['b']!r}" for t, d in differing[:10]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare two harness runs of the same tasks.")
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--labels", nargs=2, default=["a", "b"], metavar=("A", "B"))
    parser.add_argument("--seconds", nargs=2, type=float, metavar=("A", "B"), help="wall seconds of each run")
    parser.add_argument(
        "--exclude",
        nargs=2,
        type=float,
        default=[0.0, 0.0],
        metavar=("A", "B"),
        help="seconds of each run not spent generating (model or engine start-up)",
    )
    parser.add_argument("--out", type=Path, help="write the markdown report here too")
    parser.add_argument("--json", type=Path, help="write the comparison as JSON")
    parser.add_argument("--min_agreement", type=float, help="exit 1 when answer agreement is below this fraction")
    args = parser.parse_args(argv)

    run_a, run_b = load_run(args.run_a), load_run(args.run_b)
    summary = compare(run_a, run_b)
    summary["same_answers"] = sum(e["same_answer"] for e in summary["tasks"].values())
    summary["tokens"] = token_counts(run_a, run_b)
    seconds = args.seconds or [None, None]
    speeds = (throughput(run_a, seconds[0], args.exclude[0]), throughput(run_b, seconds[1], args.exclude[1]))
    report = render(summary, (args.labels[0], args.labels[1]), speeds)
    print(report, end="")
    if args.out:
        args.out.write_text(report)
    if args.json:
        args.json.write_text(
            json.dumps(
                {**summary, "labels": args.labels, "throughput": dict(zip(args.labels, speeds, strict=True))}, indent=2
            )
        )
    if not summary["tasks"]:
        print("compare_backends: the runs share no task", file=sys.stderr)
        return 1
    if args.min_agreement is not None and not summary["answer_agreement"] >= args.min_agreement:
        print(
            f"compare_backends: answer agreement {summary['answer_agreement']:.1%} < {args.min_agreement:.1%}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
