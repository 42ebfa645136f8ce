#!/usr/bin/env python
"""`hf` backend: token-budget batching (`--max_batch_tokens`) against plain fixed-size batching on a
mixed-length task.

The task holds the negatives of two MMNeedle configs built by the synthetic builder: m1_n2_k1 (one
image) and m10_n2_k1 (ten images). The model is the tests' tiny random LLaVA (tests/support/tiny_llava.py)
with a 224 px vision tower: 257 tokens per image by its processor, which is what the `hf` backend counts
(~390 tokens for the short prompts, ~2,700 for the long ones, ~7x apart); one torch thread, 16 new
tokens, greedy.

Compared at the same memory ceiling, a budget of B tokens per padded batch:
* `budget`: `--max_batch_tokens B` (long prompts B // ~2,700 per batch, short ones B // ~390);
* `fixed`: `--batch_size K` with K the largest fixed size whose batches of the longest prompts fit B
  (what one must pick without a token budget), and, for reference, larger fixed sizes that break the
  ceiling on long prompts.
Every variant is a fresh `harness` process (`--no_cache`, empty output folder) doing the same samples;
variants are interleaved, `--repeats` rounds, and the figures are medians. Samples/s is samples over
the results file's `total_evaluation_time_seconds` (the runner: batching, image decoding, generation,
scoring, journal; not the process start or model load). Answers must agree between variants.

Usage: .venv/bin/python bench/token_batching.py [--work DIR] [--limit 40] [--budget 8192] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CONFIGS = ("m1_n2_k1", "m10_n2_k1")
TASK = "mmneedle_mixed_neg"


def build(work: Path, limit: int, env: dict[str, str]) -> Path:
    data = work / f"data_{limit}"
    if not all((data / "mmneedle" / c).is_dir() for c in CONFIGS):
        subprocess.run(
            [
                str(BIN / "builders"),
                "build",
                "mmneedle",
                "--source",
                "synthetic",
                "--configs",
                *CONFIGS,
                "--limit",
                str(limit),
                "--out",
                str(data),
                "--quiet",
                "--overwrite",
            ],
            env=env,
            check=True,
        )
    return data


def mixed_task(work: Path) -> Path:
    template = ROOT / "tasks" / "mmneedle" / "_neg.yaml"
    path = work / "mixed.yaml"
    files = ", ".join(f"{c}/*.parquet" for c in CONFIGS)
    path.write_text(f"include: {template}\ntask: {TASK}\ndataset_kwargs:\n  data_files:\n    test: [{files}]\n")
    return path


IMAGE_SIZE = 224  # 16 x 16 patches + 1: 257 tokens per image, so ten images fit the model's 4,096 positions


def tiny_model(work: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from tiny_llava import build_tiny_llava  # the tests' offline recipe

    model_dir = work / f"tiny-llava-{IMAGE_SIZE}"
    if not (model_dir / "config.json").exists():
        build_tiny_llava(model_dir, image_size=IMAGE_SIZE)
    return model_dir


def run_variant(
    name: str, flags: list[str], work: Path, data: Path, task_yaml: Path, model: Path, env: dict[str, str]
) -> dict:
    out = work / f"out_{name}"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [
        str(BIN / "harness"),
        "--tasks",
        TASK,
        "--include_path",
        str(task_yaml),
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},threads=1",
        "--data_dir",
        str(data),
        "--gen_kwargs",
        "max_gen_toks=16",
        "--output_path",
        str(out),
        "--no_cache",
        "--no_progress",
        *flags,
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    (model_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (results_file,) = model_dir.glob("results_*.json")
    results = json.loads(results_file.read_text())
    lines = (model_dir / f"journal_{TASK}.jsonl").read_text().splitlines()[1:]
    records = [json.loads(line) for line in lines]
    if any(r["status"] != "ok" for r in records):
        raise SystemExit(f"{name}: not every sample was scored ok: {sorted({r['status'] for r in records})}")
    return {
        "eval_s": float(results["total_evaluation_time_seconds"]),
        "wall_s": wall,
        "samples": len(records),
        "answers": {r["sample_id"]: r["response"] for r in records},
        "tokens": sorted(r["token_count"] for r in records),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".scratch" / "bench_token_batching")
    parser.add_argument("--limit", type=int, default=40, help="negatives per config (the task has 2x this)")
    parser.add_argument("--budget", type=int, default=8192, help="tokens per padded batch")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_DATASETS_CACHE": str(args.work / "hf_cache"),
    }
    env.pop("MMLONGEVAL_DATA_DIR", None)
    data = build(args.work, args.limit, env)
    task_yaml = mixed_task(args.work)
    model = tiny_model(args.work)

    # A first pass (warms the caches) gives each request's cost as the backend counts it: prompt tokens + 16.
    probe = run_variant("probe", ["--batch_size", "1"], args.work, data, task_yaml, model, env)
    longest = probe["tokens"][-1] + 16
    fits = max(1, args.budget // longest)
    variants = {
        "budget": ["--max_batch_tokens", str(args.budget)],
        "fixed 1": ["--batch_size", "1"],
        f"fixed {fits}": ["--batch_size", str(fits)],
        "fixed 8": ["--batch_size", "8"],
    }
    runs: dict[str, list[dict]] = {}
    for round_ in range(args.repeats):
        for name, flags in variants.items():
            runs.setdefault(name, []).append(
                run_variant(name.replace(" ", ""), flags, args.work, data, task_yaml, model, env)
            )
        print(f"round {round_ + 1}/{args.repeats} done", file=sys.stderr)

    answers = runs["fixed 1"][0]["answers"]
    tokens = runs["fixed 1"][0]["tokens"]
    summary = {
        "budget": args.budget,
        "samples": len(answers),
        "prompt_tokens_min": tokens[0],
        "prompt_tokens_max": tokens[-1],
        "variants": {},
    }
    for name, results in runs.items():
        assert all(r["answers"] == answers for r in results), f"{name}: answers differ from batch size 1"
        eval_s = statistics.median(r["eval_s"] for r in results)
        summary["variants"][name] = {
            "eval_s": round(eval_s, 2),
            "samples_per_s": round(len(answers) / eval_s, 2),
            "wall_s": round(statistics.median(r["wall_s"] for r in results), 2),
            "all_eval_s": [round(r["eval_s"], 2) for r in results],
        }
    (args.work / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    base = summary["variants"]
    reference_name = f"fixed {fits}"
    print(f"\n| batching | samples/s | evaluation s (median) | all runs (s) | vs {reference_name} |")
    print("|---|---|---|---|---|")
    for name, v in base.items():
        ratio = base[reference_name]["eval_s"] / v["eval_s"]
        label = f"`--max_batch_tokens {args.budget}`" if name == "budget" else f"`--batch_size {name.split()[1]}`"
        print(f"| {label} | {v['samples_per_s']} | {v['eval_s']} | {v['all_eval_s']} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
