#!/usr/bin/env python
"""Benchmark: 1M ICL rows (~5,247 images each) through a DECODING backend, the `hf` one with the tests' tiny LLaVA
(issue 19: "the harness reads, screens and sends a 1M ICL row with memory flat in rows and without decoding an image
before its batch runs").

The rows are the builder's length-true `--source fixture:full` (or, `--source bench`,
`bench/mmlongbench_past_128k.py`'s own Stanford Cars source: 400 x 400 JPEG exemplars, 196 tokens each under the
paper's counting), built with the real builder into `icl_stanford_cars_1m` (or `--length`).
For each `--tests` (rows), a fresh process runs the harness command (`--model hf`, tiny LLaVA from
`tests/support/tiny_llava.py`, CPU, batch size 1) in-process under `tests/support/decode_trace.py`'s tracer, and
records:

* every PIL decode set against the batch being sent: decodes before the first batch or while a batch that does not
  hold the image runs (both must be 0), and decodes per image per request;
* the process's peak RSS (the parent's `wait4`), so the growth per row is the slope between two row counts;
* where each row's time goes: decoding (the cache layer's integrity check, `integrity.image_problem`, and the
  backend's `_batch_images`, each with the bytes read and sha256-checked), the processor (`HFModel._generate` less
  `_decode`), the model (`HFModel._decode`: `generate` and detokenizing) and the rest of the run (reading, screening,
  building requests, journal, scoring).

    .venv/bin/python bench/decode_1m.py [--source fixture:full|bench] [--tests 1 3] [--length 1m] [--threads 2] [--work DIR]

Prints a markdown block for bench/RESULTS.md's section "MMLongBench past 128K: when images are decoded, and memory
per 1M row" (the section is hand-written; paste it there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the tests' tracer and tiny checkpoint, not a copy
from decode_trace import traced  # noqa: E402
from harness_overhead import run  # noqa: E402
from mmlongbench_past_128k import LEAF, TOKENS, write_release  # noqa: E402

BIN = Path(sys.executable).parent


@contextmanager
def timed(owner: Any, names: tuple[str, ...]) -> Iterator[dict[str, float]]:
    """Seconds spent in each of `owner`'s attributes `names` (methods or module functions) while open."""
    seconds = dict.fromkeys(names, 0.0)
    originals = {name: getattr(owner, name) for name in names}

    def wrap(name: str, inner: Any) -> Any:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - start

        return timed_call

    for name, inner in originals.items():
        setattr(owner, name, wrap(name, inner))
    try:
        yield seconds
    finally:
        for name, inner in originals.items():
            setattr(owner, name, inner)


def _status_mib(field: str) -> float:
    """A `/proc/self/status` memory figure (VmRSS: now, VmHWM: the peak so far) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


@contextmanager
def pixel_memory(backend: type) -> Iterator[dict[str, float]]:
    """The process's peak RSS before the backend decodes its first request's images (reading, screening and
    building requests: no pixel held), and its largest RSS with one request's images decoded, while open."""
    memory = {"before_decoding_mb": 0.0, "one_request_decoded_mb": 0.0}
    images = backend._batch_images  # one request per batch here (no --batch_size)

    def measured(model: Any, requests: Any) -> Any:
        if not memory["before_decoding_mb"]:
            memory["before_decoding_mb"] = _status_mib("VmHWM")
        decoded = images(model, requests)
        memory["one_request_decoded_mb"] = max(memory["one_request_decoded_mb"], _status_mib("VmRSS"))
        return decoded

    backend._batch_images = measured
    try:
        yield memory
    finally:
        backend._batch_images = images


def child(data: Path, model: Path, out: Path, task: str, threads: int, report: Path) -> None:
    """One harness run, in this process, traced and timed; its figures written to `report`."""
    import harness.running.cache as cache
    from harness.models.backends.hf.model import HFModel
    from harness.run.cli import main

    argv = [
        "--tasks",
        task,
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},device=cpu,dtype=float32,threads={threads},context_length=4000000",
        "--data_dir",
        str(data),
        "--output_path",
        str(out),
        "--cache_dir",
        str(out / "cache"),
        "--gen_kwargs",
        "max_gen_toks=8",
        "--no_progress",
    ]
    with (
        traced(HFModel) as trace,
        pixel_memory(HFModel) as memory,
        timed(HFModel, ("_batch_images", "_generate", "_decode")) as backend,
        timed(cache, ("image_problem",)) as checks,
    ):
        start = time.perf_counter()
        code = main(argv)
        wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"harness exited {code}: {' '.join(argv)}")
    (results,) = out.glob("*/results_*.json")
    written = json.loads(results.read_text())
    counts = written["sample_counts"][task]
    per_image = Counter()  # decodes of one image in one batch (a request: batch size 1)
    for _, index, sha in trace.decodes:
        if index is not None:
            per_image[(index, sha)] += 1
    sent = sum(len(images) for _, images in trace.batches)
    first_batch = trace.batches[0][0] if trace.batches else None
    report.write_text(
        json.dumps(
            {
                "counts": counts,
                "prompt_tokens": written["usage"][task]["prompt_tokens"],
                "wall_s": wall,
                "batches": len(trace.batches),
                "images_per_batch": [len(images) for _, images in trace.batches],
                "decodes": len(trace.decodes),
                "misplaced": trace.misplaced(),
                "before_first_batch": sum(1 for _, index, _ in trace.decodes if index is None),
                "decodes_per_image": sorted(Counter(per_image.values()).items()),
                "images_sent_not_decoded": sent - len(per_image),
                "first_batch_s": first_batch,
                "decode_s": backend["_batch_images"] + checks["image_problem"],
                "check_s": checks["image_problem"],
                "processor_s": backend["_generate"] - backend["_decode"],
                "model_s": backend["_decode"],
                **memory,
            }
        )
    )


def measure(
    work: Path, source: str, length: str, tests: int, model: Path, threads: int, env: dict[str, str]
) -> dict[str, Any]:
    release, data, out = work / "release", work / f"data_{tests}", work / f"out_{tests}"
    shutil.rmtree(out, ignore_errors=True)  # a fresh journal and response cache: nothing answered before
    config = f"{LEAF}_{length}"
    if source == "fixture:full":  # one row per id: --fixture-ids sets the row count
        source_args = ["--source", "fixture:full", "--fixture-ids", str(tests)]
    else:
        write_release(release, tests)  # images drawn once; the test examples are the rows
        source_args = ["--source", str(release)]
    build_s, build_mb, _ = run(
        [
            str(BIN / "builders"),
            "build",
            "mmlongbench",
            *source_args,
            "--configs",
            config,
            "--out",
            str(data),
            "--overwrite",
            "--quiet",
        ],
        env,
    )
    figures = work / f"figures_{tests}.json"
    wall, peak_mb, _ = run(
        [
            sys.executable,
            __file__,
            "--child",
            str(data),
            str(model),
            str(out),
            f"mmlongbench_{config}",
            str(threads),
            str(figures),
        ],
        env,
    )
    result = json.loads(figures.read_text())
    assert result["counts"]["sample_len"] == tests, result["counts"]
    return {**result, "source": source, "tests": tests, "build_s": build_s, "process_s": wall, "peak_mb": peak_mb}


def _parts(r: dict[str, Any]) -> tuple[float, float, float, float, float]:
    """Seconds of one run: integrity check, full decode, processor, model, and the rest of the command."""
    rest = r["wall_s"] - r["decode_s"] - r["processor_s"] - r["model_s"]
    return r["check_s"], r["decode_s"] - r["check_s"], r["processor_s"], r["model_s"], rest


def section(results: list[dict[str, Any]], length: str, threads: int, command: str) -> str:
    low, high = results[0], results[-1]
    per_row_mb = (high["peak_mb"] - low["peak_mb"]) / (high["tests"] - low["tests"])
    lines = [
        f"**A {length.upper()} ICL row through the `hf` backend** (tiny LLaVA of `tests/support/tiny_llava.py`: "
        f"28 px, 4 image tokens; CPU, float32, {threads} torch threads, batch size 1, 8 new tokens). Rows: "
        f"`{LEAF}_{length}` built from {_SOURCES[low.get('source', 'bench')]} "
        f"({low['images_per_batch'][0]:,} images per row), at {low['tests']} and "
        f"{high['tests']} rows; the harness command in a fresh process per row count, every PIL decode traced "
        "(`tests/support/decode_trace.py`).",
        "",
        f"```\n{command}\n```",
        "",
        "| rows | statuses | decodes before the first batch | outside their batch | decodes per image per request "
        "| RSS peak before the backend decodes (MiB) | RSS with one request decoded (MiB) | peak RSS (MiB) | process (s) "
        "| first batch handed out at (s after the command started) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        statuses = {k: v for k, v in r["counts"].items() if k not in ("sample_len", "n_scored") and v}
        per_image = ", ".join(f"{n} x {count:,} images" for n, count in r["decodes_per_image"])
        lines.append(
            f"| {r['tests']} | {statuses} | {r['before_first_batch']} | {len(r['misplaced'])} | {per_image} "
            f"| {r.get('before_decoding_mb', 0):,.0f} | {r.get('one_request_decoded_mb', 0):,.0f} | {r['peak_mb']:,.0f} | {r['process_s']:.1f} | {r['first_batch_s']:.1f} |"
        )
    lines += [
        "",
        f"Prompt tokens per row as the tiny LLaVA's processor makes them: "
        f"{high['prompt_tokens'] / high['tests']:,.0f} (the row's {TOKENS[length]:,}-token length is counted the paper's way, "
        "196 tokens per exemplar; this checkpoint gives an image 4).",
        "",
        f"Peak RSS growth per row: {per_row_mb:+.1f} MiB ({low['peak_mb']:,.0f} -> {high['peak_mb']:,.0f} "
        f"MiB from {low['tests']} to {high['tests']} rows).",
        "",
        "Where the time goes, seconds (the whole command, start-up and model load in the rest; then the "
        "difference between the two row counts per row: one more row's cost):",
        "",
        "| rows | decoding: check + full | processor | model | rest of the run | command |",
        "|---|---|---|---|---|---|",
    ]
    parts = [_parts(r) for r in results]
    for r, (check, full, processor, model, rest) in zip(results, parts, strict=True):
        lines.append(
            f"| {r['tests']} | {check:.1f} + {full:.1f} | {processor:.1f} | {model:.1f} | {rest:.1f} | "
            f"{r['wall_s']:.1f} |"
        )
    rows = high["tests"] - low["tests"]
    slope = [(b - a) / rows for a, b in zip(parts[0], parts[-1], strict=True)]
    total = sum(slope)
    lines.append(
        f"| per row | {slope[0]:.1f} + {slope[1]:.1f} ({100 * (slope[0] + slope[1]) / total:.0f} %) | "
        + " | ".join(f"{s:.1f} ({100 * s / total:.0f} %)" for s in slope[2:])
        + f" | {total:.1f} |"
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        data, model, out, task, threads, report = sys.argv[2:8]
        child(Path(data), Path(model), Path(out), task, int(threads), Path(report))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, nargs=2, default=[1, 3], help="the two row counts")
    parser.add_argument("--length", choices=sorted(TOKENS), default="1m", help="the ICL config's length")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--source",
        choices=["bench", "fixture:full"],
        default="fixture:full",
        help="the rows: the builder's length-true fixture, or bench/mmlongbench_past_128k.py's source",
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--render", type=Path, help="a run's decode_1m.json: print its block again, measuring nothing")
    args = parser.parse_args()
    if args.render:
        results = json.loads(args.render.read_text())
        print(section(results, args.length, args.threads, _command([r["tests"] for r in results], args)))
        return
    work = (args.work or Path(tempfile.mkdtemp(prefix="decode_1m_"))).resolve()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "HF_DATASETS_CACHE": str(work / "hf_cache"),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    from tiny_llava import build_tiny_llava

    model = work / "tiny_llava"
    if not (model / "config.json").is_file():
        build_tiny_llava(model)
    results = [measure(work, args.source, args.length, tests, model, args.threads, env) for tests in sorted(args.tests)]
    (work / "decode_1m.json").write_text(json.dumps(results, indent=1))
    print(section(results, args.length, args.threads, _command(sorted(args.tests), args)))


_SOURCES = {
    "fixture:full": "the builder's length-true fixture (`--source fixture:full --fixture-ids` rows, drawn "
    "photos, flat pool exemplars)",
    "bench": "`bench/mmlongbench_past_128k.py`'s own source (400 x 400 JPEG exemplars)",
}


def _command(tests: list[int], args: argparse.Namespace) -> str:
    return (
        f".venv/bin/python bench/decode_1m.py --source {args.source} --tests {' '.join(map(str, tests))} "
        f"--length {args.length} --threads {args.threads}"
    )


if __name__ == "__main__":
    main()
