#!/usr/bin/env python
"""Benchmark: a run's peak memory against the size of the build it reads (issue 106, item 1: a run's memory bounded
by what it uses, not by its split).

Two builds, each command in a fresh process measured by its own VmHWM (`true_length.HARNESS_REPORTING_PEAK`):

* 10 M tiny rows: a synthetic MMNeedle build (`m1_n2_k1`) whose Parquet file is rewritten with `--rows` rows (no
  image, one-letter strings, distinct ids, row groups of 1 M rows: the issue's hostile build) and re-hashed in its
  manifest; `harness --tasks mmneedle_m1_n2_k1_pos --model random --limit 4`.
* A whole MMLongBench 128K config: `builders build mmlongbench --source fixture:full --fixture-ids 1 --configs
  niah_vh_single_128k` (every row of the config, ~355 images each); `harness --model random` and `harness --model hf`
  with the tiny LLaVA of `tests/support/tiny_llava.py` (every image read, checked and decoded).

`--code DIR` runs the same commands from another checkout as well (e.g. `git worktree add DIR main`), for
before/after figures.

    .venv/bin/python bench/run_memory.py [--rows 10000000] [--code DIR] [--write-results]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from results_file import publish
from true_length import HARNESS_REPORTING_PEAK, PEAK_MARK, measured

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.tiny_llava import build_tiny_llava  # noqa: E402

SECTION = "## A run's memory against its build's size (issue 106, 2026-11-29)"
ROW_GROUP = 1_000_000


def tiny_rows(template: pa.Table, rows: int, start: int) -> pa.Table:
    """`rows` rows of `template`'s schema: no image, one-letter strings, one needle, positives and negatives in turn."""
    two = template.slice(0, 2).to_pylist()
    for i, row in enumerate(two):
        row.update(images=[], image_sha256=[], image_sizes=[], image_tokens=[], num_images=0, text_tokens=1)
        row.update(prompt="p", prompt_paper="p", captions=["c"], needle_files=["f"], haystack_ids=["h"])
        row.update(haystack_subimages=[["s"]], all_locations=[["1, 1, 1"]], is_positive=i == 0, in_paper_subset=True)
    table = pa.Table.from_pylist(two, schema=template.schema).take(pa.array(np.arange(rows) % 2))
    ids = pc.cast(pa.array(np.arange(start, start + rows)), pa.string())
    table = table.set_column(table.schema.get_field_index("id"), table.schema.field("id"), ids)
    numbers = pa.array(np.arange(start, start + rows, dtype=np.int32))
    return table.set_column(table.schema.get_field_index("sample_id"), table.schema.field("sample_id"), numbers)


def builders_build(env: dict[str, str], *args: str | Path) -> None:
    measured([sys.executable, "-m", "builders", "build", *map(str, args), "--quiet"], env, ROOT)


def many_rows_build(work: Path, rows: int, env: dict[str, str]) -> Path:
    """The synthetic MMNeedle build with `m1_n2_k1` rewritten as `rows` tiny rows, its manifest entry re-hashed."""
    data = work / "many_rows"
    builders_build(env, "mmneedle", "--source", "synthetic", "--configs", "m1_n2_k1", "--limit", "2", "--out", data)
    (shard,) = (data / "mmneedle" / "m1_n2_k1").glob("*.parquet")
    template = pq.read_table(shard)
    with pq.ParquetWriter(shard, template.schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            writer.write_table(tiny_rows(template, min(ROW_GROUP, rows - start), start))
    digest = hashlib.sha256()
    with shard.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    manifest_path = data / "mmneedle" / "build_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    (entry,) = manifest["configs"]["m1_n2_k1"]["files"]
    entry.update(num_bytes=shard.stat().st_size, sha256=digest.hexdigest())
    manifest_path.write_text(json.dumps(manifest))
    return data


def folder_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def harness_peak(checkout: Path, argv: list[str], work: Path) -> dict[str, float]:
    """Peak RSS (MiB) and wall seconds of one `harness` command run from `checkout`, with a fresh hash cache."""
    cache = work / "hashes.json"
    cache.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1", "MMLONGEVAL_HASH_CACHE": str(cache)}
    run = measured([sys.executable, "-c", HARNESS_REPORTING_PEAK, *argv, "--no_progress"], env, checkout)
    return {"peak_mib": int(run["stderr"].rsplit(PEAK_MARK, 1)[1].split()[0]) / 1024, "wall_s": run["wall_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--code", type=Path, help="another checkout to run the same commands from")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench_run_memory_"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    checkouts = [("this branch", ROOT)] + ([("--code", args.code.resolve())] if args.code else [])
    lines = []

    many = many_rows_build(work, args.rows, env)
    (shard,) = (many / "mmneedle" / "m1_n2_k1").glob("*.parquet")
    build = f"{args.rows:,} rows, one {shard.stat().st_size / 1e6:.1f} MB Parquet file"
    argv = ["--tasks", "mmneedle_m1_n2_k1_pos", "--model", "random", "--limit", "4", "--data_dir", str(many)]
    for label, checkout in checkouts:
        run = harness_peak(checkout, [*argv, "--output_path", str(work / f"out_many_{label}")], work)
        lines.append((build, "`--model random --limit 4`", label, run))

    long = work / "mmlongbench"
    builders_build(
        env,
        "mmlongbench",
        "--source",
        "fixture:full",
        "--fixture-ids",
        "1",
        "--configs",
        "niah_vh_single_128k",
        "--out",
        long,
    )
    rows = pq.read_metadata(next((long / "mmlongbench" / "niah_vh_single_128k").glob("*.parquet"))).num_rows
    config_mb = folder_mb(long / "mmlongbench" / "niah_vh_single_128k")
    table_mb = folder_mb(long / "mmlongbench" / "image_table")
    build = f"niah_vh_single_128k: {rows} rows, {config_mb:.1f} MB of rows + {table_mb:.1f} MB of images"
    tiny = build_tiny_llava(work / "tiny-llava")
    task = ["--tasks", "mmlongbench_niah_vh_single_128k", "--data_dir", str(long)]
    commands = {
        "`--model random`": ["--model", "random"],
        "`--model hf` (tiny LLaVA, 2 new tokens)": ["--model", "hf", "--model_args", f"pretrained={tiny},threads=2"]
        + ["--gen_kwargs", "max_gen_toks=2"],
    }
    for name, model in commands.items():
        for label, checkout in checkouts:
            out = work / f"out_long_{label}_{len(lines)}"
            lines.append((build, name, label, harness_peak(checkout, [*task, *model, "--output_path", str(out)], work)))

    table = "| build | command | checkout | peak RSS (MiB) | wall (s) |\n|---|---|---|---|---|\n" + "".join(
        f"| {b} | {c} | {label} | {r['peak_mib']:,.0f} | {r['wall_s']:.1f} |\n" for b, c, label, r in lines
    )
    command = f".venv/bin/python bench/run_memory.py --rows {args.rows}" + (" --code MAIN" if args.code else "")
    note = (
        "Peak RSS: each `harness` process's own VmHWM, a fresh hash cache each (every file it reads is hashed). `--code`:"
        " another checkout's harness on the same builds. Wall seconds on a shared 2-core machine: noisy.\n"
    )
    publish(SECTION, f"{SECTION}\n\n```\n{command}\n```\n\n{note}\n{table}", args.write_results)


if __name__ == "__main__":
    main()
