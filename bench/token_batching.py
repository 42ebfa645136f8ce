#!/usr/bin/env python
"""`hf` backend: token-budget batching (`--max_batch_tokens`) against plain fixed-size batching on a
mixed-length task.

The task holds the negatives of two MMNeedle configs built by the synthetic builder: m1_n2_k1 (one
512 px image, ~450 tokens with max_gen_toks by the rows' counting rule) and m10_n2_k1 (ten 512 px
images, ~3,400 tokens), so prompt lengths differ ~7x. The model is the tests' tiny random LLaVA
(tests/harness/conftest.py), one torch thread, 16 new tokens, greedy.

Compared at the same memory ceiling, a budget of B tokens per padded batch:
* `budget`: `--max_batch_tokens B` (long prompts B // ~3,400 per batch, short ones B // ~450);
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
        subprocess.run([str(BIN / "builders"), "build", "mmneedle", "--source", "synthetic", "--configs", *CONFIGS,
                        "--limit", str(limit), "--out", str(data), "--quiet", "--overwrite"], env=env, check=True)
    return data


def mixed_task(work: Path) -> Path:
    template = ROOT / "tasks" / "mmneedle" / "_neg.yaml"
    path = work / "mixed.yaml"
    files = ", ".join(f"{c}/*.parquet" for c in CONFIGS)
    path.write_text(f"include: {template}\ntask: {TASK}\ndataset_kwargs:\n  data_files:\n    test: [{files}]\n")
    return path


def tiny_model(work: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests" / "harness"))
    from conftest import build_tiny_llava  # the tests' offline recipe

    model_dir = work / "tiny-llava"
    if not (model_dir / "config.json").exists():
        build_tiny_llava(model_dir)
    return model_dir


def max_cost(data: Path) -> int:
    """The largest padded-batch cost of one request of the task: prompt tokens + max_gen_toks (16)."""
    import pyarrow.parquet as pq

    costs = []
    for config in CONFIGS:
        for shard in (data / "mmneedle" / config).glob("*.parquet"):
            table = pq.read_table(shard, columns=["is_positive", "text_tokens", "image_tokens"]).to_pylist()
            costs += [r["text_tokens"] + sum(r["image_tokens"]) + 16 for r in table if not r["is_positive"]]
    return max(costs)


def run_variant(name: str, flags: list[str], work: Path, data: Path, task_yaml: Path, model: Path,
                env: dict[str, str]) -> dict:
    out = work / f"out_{name}"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [str(BIN / "harness"), "--tasks", TASK, "--include_path", str(task_yaml), "--model", "hf", "--model_args",
           f"pretrained={model},threads=1", "--data_dir", str(data), "--gen_kwargs", "max_gen_toks=16",
           "--output_path", str(out), "--no_cache", "--no_progress", *flags]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    (model_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (results_file,) = model_dir.glob("results_*.json")
    results = json.loads(results_file.read_text())
    lines = (model_dir / f"samples_{TASK}.jsonl").read_text().splitlines()[1:]
    records = [json.loads(line) for line in lines]
    return {"eval_s": float(results["total_evaluation_time_seconds"]), "wall_s": wall, "samples": len(records),
            "answers": {r["sample_id"]: r["response"] for r in records},
            "tokens": sorted(r["token_count"] for r in records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".scratch" / "bench_token_batching")
    parser.add_argument("--limit", type=int, default=40, help="negatives per config (the task has 2x this)")
    parser.add_argument("--budget", type=int, default=8192, help="tokens per padded batch")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "HF_DATASETS_CACHE": str(args.work / "hf_cache")}
    env.pop("MMLONGEVAL_DATA_DIR", None)
    data = build(args.work, args.limit, env)
    task_yaml = mixed_task(args.work)
    model = tiny_model(args.work)

    longest = max_cost(data)
    fits = max(1, args.budget // longest)
    variants = {"budget": ["--max_batch_tokens", str(args.budget)], "fixed 1": ["--batch_size", "1"],
                f"fixed {fits}": ["--batch_size", str(fits)], "fixed 8": ["--batch_size", "8"]}
    run_variant("warmup", ["--batch_size", "1", "--limit", "2"], args.work, data, task_yaml, model, env)  # caches
    runs: dict[str, list[dict]] = {}
    for round_ in range(args.repeats):
        for name, flags in variants.items():
            runs.setdefault(name, []).append(
                run_variant(name.replace(" ", ""), flags, args.work, data, task_yaml, model, env))
        print(f"round {round_ + 1}/{args.repeats} done", file=sys.stderr)

    answers = runs["fixed 1"][0]["answers"]
    tokens = runs["fixed 1"][0]["tokens"]
    summary = {"budget": args.budget, "samples": len(answers), "prompt_tokens_min": tokens[0],
               "prompt_tokens_max": tokens[-1], "variants": {}}
    for name, results in runs.items():
        assert all(r["answers"] == answers for r in results), f"{name}: answers differ from batch size 1"
        eval_s = statistics.median(r["eval_s"] for r in results)
        summary["variants"][name] = {
            "eval_s": round(eval_s, 2), "samples_per_s": round(len(answers) / eval_s, 2),
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
