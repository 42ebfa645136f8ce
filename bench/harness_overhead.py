#!/usr/bin/env python
"""The harness's own cost, apart from the model.

1. Overhead: `harness` with the `constant` model (no model time at all) on m10_n8_k1, built by the
   synthetic builder, at two sample counts, 3 runs each (median). The evaluation time is the results
   file's `total_evaluation_time_seconds` (the runner: screening, requests, journal, scoring,
   aggregation; after imports and dataset loading), so time per sample = evaluation time / samples;
   peak memory (max RSS of the harness process) must not grow with the number of samples.
2. Optionally (--hf): the `hf` backend against a plain transformers loop (processor + generate, same
   prompts, same images, same greedy settings) on a tiny random LLaVA, 10 JPEG 512x512 images per
   prompt (m10_n2_k1), 16 new tokens, batch 1 and 8, one torch thread (PERFORMANCE.md's setting):
   end to end (two processes, start-up included), then the backend alone against the loop body,
   interleaved sample by sample in one process (robust to a busy machine).

Usage: .venv/bin/python bench/harness_overhead.py [--work DIR] [--limit 250] [--hf [--hf_limit 100]]
Every run is a fresh process; times are wall clock of that process, start-up included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stderr tail) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, err[-300:]


def build(work: Path, config: str, limit: int, env: dict[str, str]) -> Path:
    data = work / f"data_{config}_{limit}"
    if not (data / "mmneedle" / config).is_dir():
        subprocess.run(
            [
                str(BIN / "builders"),
                "build",
                "mmneedle",
                "--source",
                "synthetic",
                "--configs",
                config,
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


def overhead(work: Path, data: Path, limit: int, env: dict[str, str], log_samples: bool, repeats: int = 3) -> dict:
    """Per sample count: median wall time, median evaluation time (the results file's
    `total_evaluation_time_seconds`: the runner alone, after imports and dataset loading) and peak RSS."""
    results = {}
    for n in (limit // 5, limit):
        cmd_out = work / f"constant_{n}_{int(log_samples)}"
        cmd = [
            str(BIN / "harness"),
            "--tasks",
            "mmneedle_m10_n8_k1_pos,mmneedle_m10_n8_k1_neg",
            "--model",
            "constant",
            "--model_args",
            "answer=-1",
            "--data_dir",
            str(data),
            "--limit",
            str(n),
            "--output_path",
            str(cmd_out),
            "--no_progress",
        ] + (["--log_samples"] if log_samples else [])
        walls, evals, rss = [], [], []
        for _ in range(repeats + 1):  # the first run only warms the Arrow cache and the page cache
            subprocess.run(["rm", "-rf", str(cmd_out)], check=True)
            wall, peak, _ = run(cmd, env)
            (results_file,) = cmd_out.glob("constant/results_*.json")
            walls.append(wall)
            evals.append(float(json.loads(results_file.read_text())["total_evaluation_time_seconds"]))
            rss.append(peak)
        walls, evals, rss = walls[1:], evals[1:], rss[1:]
        samples = 2 * n
        results[samples] = {
            "wall_s": round(statistics.median(walls), 3),
            "eval_s": round(statistics.median(evals), 3),
            "eval_ms_per_sample": round(1000 * statistics.median(evals) / samples, 3),
            "peak_rss_mib": round(max(rss), 1),
        }
    return {"runs": results, "log_samples": log_samples}


PLAIN_LOOP = textwrap.dedent("""
    import sys, time, io
    import datasets, torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor
    torch.set_num_threads(1)
    path, model_dir, n, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    processor = AutoProcessor.from_pretrained(model_dir)
    processor.tokenizer.padding_side = "left"
    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    ds = datasets.load_dataset(path, "m10_n2_k1", split="test")
    ds = ds.select([i for i, p in enumerate(ds["is_positive"]) if p][:n] + [i for i, p in enumerate(ds["is_positive"]) if not p][:n])
    start = time.perf_counter()
    for lo in range(0, len(ds), batch):
        rows = ds[lo:lo + batch]
        texts, images = [], []
        for prompt, imgs in zip(rows["prompt"], rows["images"]):
            text = prompt.replace("<image>", "")
            chat = [{"role": "user", "content": [{"type": "image"}] * prompt.count("<image>") + [{"type": "text", "text": text}]}]
            texts.append(processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False))
            images.append([im.convert("RGB") for im in imgs])
        inputs = processor(text=texts, images=images, padding=True, return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=16, do_sample=False, pad_token_id=processor.tokenizer.pad_token_id)
        processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    print(f"generation loop {time.perf_counter() - start:.2f} s", file=sys.stderr)
""")


def hf_vs_plain(work: Path, data: Path, limit: int, env: dict[str, str]) -> dict:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from tiny_llava import build_tiny_llava  # the tests' offline recipe

    model_dir = work / "tiny-llava"
    if not (model_dir / "config.json").exists():
        build_tiny_llava(model_dir)
    script = work / "plain_loop.py"
    script.write_text(PLAIN_LOOP)
    out: dict = {}
    for batch in (1, 8):
        plain_wall, plain_rss, plain_err = run(
            [sys.executable, str(script), str(data / "mmneedle"), str(model_dir), str(limit), str(batch)], env
        )
        harness_out = work / f"hf_{batch}"
        subprocess.run(["rm", "-rf", str(harness_out)], check=True)
        cmd = [
            str(BIN / "harness"),
            "--tasks",
            "mmneedle_m10_n2_k1_pos,mmneedle_m10_n2_k1_neg",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={model_dir},threads=1",
            "--data_dir",
            str(data),
            "--limit",
            str(limit),
            "--batch_size",
            str(batch),
            "--gen_kwargs",
            "max_gen_toks=16",
            "--output_path",
            str(harness_out),
            "--no_progress",
        ]
        wall, rss, _ = run(cmd, env)
        out[batch] = {
            "plain_wall_s": round(plain_wall, 2),
            "plain_peak_rss_mib": round(plain_rss, 1),
            "plain_generation_loop": plain_err.strip().splitlines()[-1],
            "harness_wall_s": round(wall, 2),
            "harness_peak_rss_mib": round(rss, 1),
            "ratio": round(wall / plain_wall, 3),
        }
    return out


def backend_ab(data: Path, model_dir: Path, n: int = 48, repeats: int = 3) -> dict:
    """The hf backend's `generate` and the plain loop's body, interleaved batch by batch (so machine
    noise hits both alike), at batch 1 and 8: median milliseconds per sample, and whether answers agree."""
    import io

    import torch
    from PIL import Image

    from harness.config.task_index import TaskIndex
    from harness.models.backends.hf.model import HFModel
    from harness.running.task.task import Task

    torch.set_num_threads(1)
    task = Task(TaskIndex().tasks["mmneedle_m10_n2_k1_pos"])
    task.load(data, limit=n)
    settings = task.generation_settings({"max_gen_toks": 16})
    requests = [task.build_request(i, doc, settings) for i, doc in task.iter_docs()]
    model = HFModel.from_args({"pretrained": str(model_dir), "threads": "1"})
    processor, hf_model = model.processor, model.model

    def plain(lo: int, batch: int) -> list[str]:
        rows = task.docs[lo : lo + batch]
        texts, images = [], []
        for prompt, row_images in zip(rows["prompt"], rows["images"], strict=True):
            images.append([Image.open(io.BytesIO(x["bytes"])).convert("RGB") for x in row_images])
            chat = [
                {
                    "role": "user",
                    "content": [{"type": "image"}] * prompt.count("<image>")
                    + [{"type": "text", "text": prompt.replace("<image>", "")}],
                }
            ]
            texts.append(processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False))
        inputs = processor(text=texts, images=images, padding=True, return_tensors="pt")
        with torch.inference_mode():
            out = hf_model.generate(
                **inputs, max_new_tokens=16, do_sample=False, pad_token_id=processor.tokenizer.pad_token_id
            )
        return processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)

    report: dict = {"samples": n, "repeats": repeats}
    for batch in (1, 8):
        harness_ms, plain_ms, same = [], [], True
        for _ in range(repeats):
            for lo in range(0, n, batch):
                start = time.perf_counter()
                answers = [r.text for r in model.generate(requests[lo : lo + batch])]
                harness_ms.append(1000 * (time.perf_counter() - start) / batch)
                start = time.perf_counter()
                same &= answers == plain(lo, batch)
                plain_ms.append(1000 * (time.perf_counter() - start) / batch)
        h, p = statistics.median(harness_ms), statistics.median(plain_ms)
        report[batch] = {
            "harness_backend_ms_per_sample": round(h, 1),
            "plain_loop_ms_per_sample": round(p, 1),
            "ratio": round(h / p, 3),
            "identical_answers": same,
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".scratch" / "bench_harness")
    parser.add_argument(
        "--limit", type=int, default=250, help="positives (and negatives) per config at the larger count"
    )
    parser.add_argument("--hf", action="store_true", help="also compare the hf backend with a plain transformers loop")
    parser.add_argument("--hf_limit", type=int, default=100, help="positives (and negatives) for the --hf comparison")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_DATASETS_CACHE=str(args.work / "hf_cache"),
    )
    data = build(args.work, "m10_n8_k1", args.limit, env)
    report = {
        "machine": f"{os.cpu_count()} CPUs",
        "limit": args.limit,
        "overhead": overhead(args.work, data, args.limit, env, log_samples=False),
        "overhead_log_samples": overhead(args.work, data, args.limit, env, log_samples=True),
    }
    if args.hf:
        data_n2 = build(args.work, "m10_n2_k1", args.hf_limit, env)
        report["hf_vs_plain"] = hf_vs_plain(args.work, data_n2, args.hf_limit, env)
        os.environ.update(env)
        import datasets

        datasets.config.HF_DATASETS_CACHE = env["HF_DATASETS_CACHE"]
        report["hf_backend_interleaved"] = backend_ab(data_n2, args.work / "tiny-llava")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
