"""Replicas on Ray (`harness.models.backends.replicas`) against one process: throughput of the tiny hf model, Ray's overhead
per batch with `random`, and the bytes a 128K MMLongBench row costs to send to a replica by each image route.

    PYTHONPATH=. HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 nice python bench/ray_replicas.py --out /tmp/ray_bench

Parts (`--parts`, default all):

* `throughput`: the same 100 rows of 10 images (MMNeedle m10_n1_k1, positives and negatives, synthetic, built
  here) through the tiny LLaVA of the tests (`tests/support/tiny_llava.py`, `max_gen_toks=16`, batch size 1) in
  one process and on 2 Ray replicas (a local Ray instance started by the run, `--ray`): samples/s over the
  evaluation (the results' `total_evaluation_time_seconds`: from the first request to the last answer), the run's
  wall time, and the CPU seconds of the whole process tree (driver, Ray's own processes, replicas).
* `overhead`: the same rows with `random` (no model work: what is left is the harness's and Ray's), at batch sizes 1
  and 10, in one process and on 2 replicas: the extra evaluation seconds per batch are Ray's overhead (handing a
  batch to a replica, the requests' and answers' trips, waiting on the slowest replica at a window's end); start-up
  (the Ray instance, the replicas) is the wall time outside the evaluation.
* `bytes`: the pickled size of each 128K MMLongBench row's request as a replica receives it, images named by their
  place in the build (`replica_data=read`) against images carried as bytes (`replica_data=ship`), from the demo
  build (`--mmlongbench`, default /work/demo_ref/data) without Ray; beside it the row's decoded pixels (what never
  travels).

Each run is a `harness` child process; its CPU is sampled over its process tree every 0.1 s. Variants are
interleaved over `--repeats` rounds and the medians reported. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROWS_TASKS = "mmneedle_m10_n1_k1_pos,mmneedle_m10_n1_k1_neg"  # 50 + 50 rows of 10 images


def build_rows(folder: Path) -> Path:
    from builders.mmneedle import build_mmneedle

    if not (folder / "mmneedle" / "build_manifest.json").is_file():
        build_mmneedle(source="synthetic", out_dir=folder, configs=["m10_n1_k1"], limit=50, seed=0, num_proc=1)
    return folder


def build_model(folder: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from tiny_llava import build_tiny_llava

    return folder if (folder / "config.json").is_file() else build_tiny_llava(folder)


def measured(argv: list[str], out: Path) -> dict[str, Any]:
    """Run `harness ARGV --output_path OUT` as a child; its wall and tree CPU seconds and its results."""
    import psutil

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "harness", *argv, "--output_path", str(out), "--no_progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    cpu: dict[int, float] = {}
    root = psutil.Process(child.pid)
    while child.poll() is None:
        try:
            for process in [root, *root.children(recursive=True)]:
                try:
                    times = process.cpu_times()
                    cpu[process.pid] = times.user + times.system
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        time.sleep(0.1)
    wall = time.perf_counter() - started
    err = child.stderr.read() if child.stderr else ""
    if child.returncode != 0:
        raise RuntimeError(f"harness {' '.join(argv)} exited {child.returncode}: {err[-2000:]}")
    results = json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())
    samples = sum(c["effective"] for c in results["n-samples"].values()) if "n-samples" in results else None
    replicas = results["config"].get("backend_stats", {}).get("replicas", {})
    return {
        "wall": wall,
        "cpu": sum(cpu.values()),
        "eval": float(results["total_evaluation_time_seconds"]),
        "samples": samples,
        "batches": replicas.get("batches"),
        "images": replicas.get("images"),
    }


def runs(variants: dict[str, list[str]], repeats: int, scratch: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for round_ in range(repeats):
        for name, argv in variants.items():  # interleaved: the machine's load falls on every variant alike
            result = measured(argv, scratch / f"{name}-{round_}")
            out[name].append(result)
            print(
                f"  {name} round {round_}: wall {result['wall']:.1f} s, eval {result['eval']:.2f} s, "
                f"cpu {result['cpu']:.1f} s",
                flush=True,
            )
    return out


def median(values: list[dict[str, Any]], key: str) -> float:
    return statistics.median(v[key] for v in values)


def throughput(data: Path, model: Path, repeats: int, scratch: Path) -> dict[str, Any]:
    common = ["--tasks", ROWS_TASKS, "--data_dir", str(data), "--gen_kwargs", "max_gen_toks=16", "--no_cache"]
    args = f"pretrained={model},threads=1"
    found = runs(
        {
            "hf_1_in_process": ["--model", "hf", "--model_args", args, *common],
            "hf_2_ray_replicas": ["--model", "hf", "--model_args", f"{args},data_parallel_size=2", "--ray", *common],
        },
        repeats,
        scratch,
    )
    table = {}
    for name, values in found.items():
        samples = values[0]["samples"] or 100
        table[name] = {
            "samples": samples,
            "eval_s": median(values, "eval"),
            "wall_s": median(values, "wall"),
            "cpu_s": median(values, "cpu"),
            "samples_per_s_eval": samples / median(values, "eval"),
            "samples_per_s_wall": samples / median(values, "wall"),
            "runs": values,
        }
    return table


def overhead(data: Path, repeats: int, scratch: Path) -> dict[str, Any]:
    variants = {}
    for batch in (1, 10):
        common = ["--tasks", ROWS_TASKS, "--data_dir", str(data), "--batch_size", str(batch)]
        variants[f"random_b{batch}_in_process"] = ["--model", "random", *common]
        variants[f"random_b{batch}_2_ray_replicas"] = [
            "--model",
            "random",
            "--model_args",
            "data_parallel_size=2",
            "--ray",
            *common,
        ]
    found = runs(variants, repeats, scratch)
    table = {}
    for batch in (1, 10):
        one, ray = found[f"random_b{batch}_in_process"], found[f"random_b{batch}_2_ray_replicas"]
        batches = ray[0]["batches"]
        extra = median(ray, "eval") - median(one, "eval")
        table[f"batch_size_{batch}"] = {
            "batches": batches,
            "eval_in_process_s": median(one, "eval"),
            "eval_ray_s": median(ray, "eval"),
            "overhead_per_batch_ms": 1000 * extra / batches,
            "wall_in_process_s": median(one, "wall"),
            "wall_ray_s": median(ray, "wall"),
            "startup_ray_s": median(ray, "wall") - median(ray, "eval"),
            "cpu_in_process_s": median(one, "cpu"),
            "cpu_ray_s": median(ray, "cpu"),
            "runs": {"in_process": one, "ray": ray},
        }
    # The extra evaluation seconds as a fixed part (per run) and a part per batch, from the two batch sizes.
    small, large = table["batch_size_1"], table["batch_size_10"]
    extra = {key: row["eval_ray_s"] - row["eval_in_process_s"] for key, row in (("small", small), ("large", large))}
    per_batch = (extra["small"] - extra["large"]) / (small["batches"] - large["batches"])
    table["split"] = {"per_batch_ms": 1000 * per_batch, "fixed_s": extra["small"] - per_batch * small["batches"]}
    return table


def row_bytes(data: Path, limit: int) -> dict[str, Any]:
    """Pickled bytes of each 128K MMLongBench row's request by each image route."""
    import ray.cloudpickle as cloudpickle

    from harness.config.task_index import TaskIndex
    from harness.models.backends.replicas.wire import Wire
    from harness.running.task.task import Task

    index = TaskIndex([])
    names = [n for n in sorted(index.tasks) if n.startswith("mmlongbench_") and n.endswith("_128k")]
    rows = []
    for name in names:
        task = Task(index.tasks[name])
        try:
            task.load(data)
        except Exception as err:  # a config the build lacks
            print(f"  {name}: skipped ({type(err).__name__})", flush=True)
            continue
        settings = task.generation_settings()
        for doc_id in range(min(limit, len(task))):
            request = task.build_request(doc_id, task.doc(doc_id), settings)
            if not hasattr(request, "messages"):
                continue
            read = Wire(lambda: None, False, lambda files: True)
            ship = Wire(lambda: None, False, None)
            sizes = {
                "read": len(cloudpickle.dumps(read.batch([request]))),
                "ship": len(cloudpickle.dumps(ship.batch([request]))),
            }
            images = request.images
            pixels = sum((i.width or 0) * (i.height or 0) * 3 for i in images)
            text = sum(len(p.text.encode()) for m in request.messages for p in m.content if hasattr(p, "text"))
            rows.append(
                {
                    "task": name,
                    "doc_id": doc_id,
                    "images": len(images),
                    "text_bytes": text,
                    "image_bytes": ship.counts.shipped_bytes,
                    "read_route_bytes": sizes["read"],
                    "ship_route_bytes": sizes["ship"],
                    "decoded_pixel_bytes": pixels,
                }
            )
        task.unload()
    summary = {
        key: statistics.median(r[key] for r in rows)
        for key in (
            "images",
            "text_bytes",
            "image_bytes",
            "read_route_bytes",
            "ship_route_bytes",
            "decoded_pixel_bytes",
        )
    }
    summary["rows"] = len(rows)
    summary["max_images"] = max(r["images"] for r in rows)
    widest = max(rows, key=lambda r: r["images"])
    return {"median_per_row": summary, "row_with_most_images": widest, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON figures (and scratch runs)")
    parser.add_argument("--parts", default="throughput,overhead,bytes")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--mmlongbench",
        type=Path,
        default=Path("/work/demo_ref/data"),
        help="a --data_dir holding an MMLongBench build with 128K configs",
    )
    parser.add_argument("--rows_per_task", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    figures: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()}}
    with tempfile.TemporaryDirectory(dir=args.out) as scratch_dir:
        scratch = Path(scratch_dir)
        data = build_rows(args.out / "rows")
        if "throughput" in parts:
            print("throughput (tiny hf, 100 rows of 10 images):", flush=True)
            figures["throughput"] = throughput(data, build_model(args.out / "tiny_llava"), args.repeats, scratch)
        if "overhead" in parts:
            print("overhead (random, 100 rows of 10 images):", flush=True)
            figures["overhead"] = overhead(data, args.repeats, scratch)
        if "bytes" in parts:
            print("bytes per 128K MMLongBench row:", flush=True)
            figures["bytes"] = row_bytes(args.mmlongbench, args.rows_per_task)
    figures["machine"]["load_average_after"] = os.getloadavg()
    (args.out / "ray_replicas.json").write_text(json.dumps(figures, indent=1))
    for part in ("throughput", "overhead"):
        for name, row in figures.get(part, {}).items():
            print(part, name, {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items() if k != "runs"})
    if "bytes" in figures:
        print(
            "bytes",
            figures["bytes"]["median_per_row"],
            "widest:",
            {k: v for k, v in figures["bytes"]["row_with_most_images"].items()},
        )


if __name__ == "__main__":
    main()
