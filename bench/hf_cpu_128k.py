#!/usr/bin/env python
"""Benchmark: the `hf` backend on one VH-Single and one ICL Food101 row of MMLongBench's true 128K length, on the
CPU, with a tiny random checkpoint: the Qwen2.5-VL of `scripts/make_tiny_qwen.py` (issue 19, section 2).

It checks that each image goes through the processor once per request (the image processor's calls are counted:
images processed against images sent) and records where the time goes: the processor (chat template, tokenizer,
image resizing and patching), the model's `generate`, and the rest of the run (the harness: reading, screening,
building requests, journalling), with the backend's decoding of each image to PIL apart. The rows are written by `bench/true_length.py`'s writers (640 x 480 JPEGs for VH,
392 x 392 for ICL) and built with the real builder. Qwen's whole processor needs torchvision, which the project's
`.venv` lacks; there the backend runs with `processor=image_only` (Qwen's processor class and its image processor
on the PIL backend, no video processor: `harness/models/shared/hf_image_only.py`), the default of `--processor` where
torchvision cannot be imported.

    python scripts/make_tiny_qwen.py TINY_QWEN_DIR
    python bench/hf_cpu_128k.py --model TINY_QWEN_DIR --work W [--threads 8] [--processor auto|image_only] [--json OUT.json]
    python bench/hf_cpu_128k.py --render OUT.json --write-results      # the section, from a run's figures
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from results_file import publish

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

SECTION = "## The hf backend on 128K rows on a CPU (tiny random checkpoint)"
TASKS = ("mmlongbench_niah_vh_single_128k", "mmlongbench_icl_food101_128k")


class Timed:
    """Stands in for the backend's processor: every call timed, everything else passed through."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def measure(model_dir: Path, work: Path, threads: int, processor_choice: str) -> dict[str, Any]:
    import torch
    import transformers
    from true_length import build

    from harness.config.task_index import TaskIndex
    from harness.models.backends.hf.model import HFModel
    from harness.running.runner import Runner, RunOptions
    from harness.running.task.task import Task

    data, _ = build(work, 1, "release", [], dict(os.environ))  # PYTHONPATH: this checkout and its carried wheels
    index = TaskIndex([])
    tasks = [Task(index.tasks[name]) for name in TASKS]
    for task in tasks:
        task.load(data, 1)  # one row of each
    started = time.perf_counter()
    model = HFModel.from_args(
        {
            "pretrained": str(model_dir),
            "device": "cpu",
            "dtype": "float32",
            "context_length": "139264",
            "threads": str(threads),
            "processor": processor_choice,
        }
    )
    loaded = time.perf_counter()
    image_processor = model.processor.image_processor
    processed: list[int] = []
    preprocess = image_processor.preprocess

    def counted(images: Any, *args: Any, **kwargs: Any) -> Any:
        flat = images if isinstance(images, list) else [images]
        flat = [i for item in flat for i in (item if isinstance(item, list) else [item])]
        processed.append(len(flat))
        return preprocess(images, *args, **kwargs)

    image_processor.preprocess = counted  # the processor calls its image processor's `preprocess` per call
    processor = model.processor = Timed(model.processor)
    generate = model.model.generate = Timed(model.model.generate)
    decode = model._images = Timed(model._images)  # each request's images read, verified and decoded to PIL
    results = Runner(model, RunOptions(progress=False, gen_kwargs={"max_gen_toks": 8})).run(tasks)
    finished = time.perf_counter()
    rows = []
    for task, result in zip(tasks, results, strict=True):
        rows.append(
            {
                "task": task.name,
                "counts": {k: v for k, v in result.counts.items() if v},
                "images": task.max_num_images(),
                "seconds": result.seconds,
            }
        )
    return {
        "rows": rows,
        "images_processed": processed,
        "processor_calls": processor.calls,
        "processor_s": processor.seconds,
        "generate_calls": generate.calls,
        "generate_s": generate.seconds,
        "decode_s": decode.seconds,
        "run_s": finished - loaded,
        "load_s": loaded - started,
        "threads": threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "processor": type(processor._inner).__name__,
        "image_processor": type(image_processor).__name__,
        "processor_choice": processor_choice,
        "model_type": model.model.config.model_type,
    }


def section(r: dict[str, Any], command: str) -> str:
    sent = sum(row["images"] for row in r["rows"])
    rest = r["run_s"] - r["processor_s"] - r["generate_s"] - r["decode_s"]
    lines = [
        SECTION,
        "",
        f"`hf` backend, `device=cpu`, float32, {r['threads']} torch threads, {r['cpus']} cores (torch {r['torch']}, "
        f"transformers {r['transformers']}). Checkpoint: tiny, random weights, model type `{r['model_type']}`, "
        f"processor `{r['processor']}` with `{r.get('image_processor', '?')}` "
        f"(`processor={r.get('processor_choice', 'auto')}`). Rows: one VH-Single and one ICL Food101 row at 128K written by "
        "`bench/true_length.py` (release-shaped) and built by the builder; 8 new tokens; batch size 1.",
        "",
        f"```\n{command}\n```",
        "",
        "| task | images | status | seconds in the runner |",
        "|---|---|---|---|",
    ]
    for row in r["rows"]:
        lines.append(f"| {row['task']} | {row['images']} | {row['counts']} | {row['seconds']:.1f} |")
    lines += [
        "",
        f"Images through the image processor: {sum(r['images_processed'])} in {len(r['images_processed'])} "
        f"call(s) ({r['images_processed']}) for {sent} images sent in {len(r['rows'])} requests: "
        + ("each image once per request." if sum(r["images_processed"]) == sent else "NOT once per request."),
        "",
        "| where | seconds | share |",
        "|---|---|---|",
    ]
    for name, seconds in (
        ("processor (template, tokenizer, resize and patches)", r["processor_s"]),
        ("model `generate` (vision tower + 2 layers, prefill and 8 tokens)", r["generate_s"]),
        ("the backend's image decoding (read, sha256-checked, decoded to PIL)", r["decode_s"]),
        ("the rest of the run (rows, screen, requests, journal)", rest),
    ):
        lines.append(f"| {name} | {seconds:.1f} | {100 * seconds / r['run_s']:.0f} % |")
    lines += ["", f"Model load: {r['load_s']:.1f} s (not in the run's time)."]
    if "qwen" not in r["model_type"]:
        lines += [
            "",
            "This checkpoint is not Qwen's: Qwen2.5-VL's processor cannot be built without torchvision, which "
            "this machine cannot install (NOTES.md), and the GPU machine runs the lead's checkout, not this branch. "
            "Its processor shrinks every image to 28 x 28 px (4 tokens), so the model sees a few thousand tokens, "
            "not 125K: the processor's and the decoding's shares are what carries over (every image is decoded "
            "and resized once per request by any processor), the model's share is far below a real one's.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--processor",
        choices=("auto", "image_only"),
        default="auto" if importlib.util.find_spec("torchvision") else "image_only",
        help="the hf backend's processor= (default: image_only where torchvision is missing)",
    )
    parser.add_argument("--json", type=Path, help="where to write the figures")
    parser.add_argument("--render", type=Path, help="a figures file to write the section from")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.render:
        figures = json.loads(args.render.read_text())
    else:
        if args.model is None or args.work is None:
            parser.error("--model and --work are needed to measure")
        figures = measure(args.model, args.work.resolve(), args.threads, args.processor)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1))
    command = (
        f"python bench/hf_cpu_128k.py --model TINY_CHECKPOINT --work W --threads {figures['threads']} "
        f"--processor {figures.get('processor_choice', 'auto')}"
    )
    publish(SECTION, section(figures, command), args.write_results)


if __name__ == "__main__":
    main()
