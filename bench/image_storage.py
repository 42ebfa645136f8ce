"""Benchmark: MMNeedle builds with embedded and shared image storage, beside the official generator.

On one COCO-2014-format fixture (`--images` 640 x 480 JPEGs, made here), each run produces a pool of
`--pool` stitched 8 x 8 images and `--rows` samples of M = 10 (half positive), like m10_n8_k1:

- official: the authors' `sample_stitched_images.py` (the pool, as JPEG files) then
  `sample_single_needle.py` (the samples, as JSON), from a checkout given by `--official`, run
  unmodified but for their constants (N_ROW = N_COL = 8, N_IMG = pool, SEQUENCE_LENGTH = 10,
  N_SEQUENCES = rows), the crash fix in the pool script (the first `load_image_paths('val2014')` result
  was never assigned), and a stand-in for `IPython.display`, which `utils.py` imports but never uses;
- ours, embedded: `build_mmneedle(..., image_storage="embedded")` with the pool size set to the same
  constant: every row holds its 10 images' bytes;
- ours, shared: the same with `image_storage="shared"`: each distinct image once, in the image table.

Every run is a fresh process; wall times are whole-process (interpreter start and imports included),
best of `--repeats`, runs interleaved; sizes are the bytes each tool leaves on disk.

    .venv/bin/python bench/image_storage.py --official /path/to/multimodal-needle-in-a-haystack --write-results
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_section

sys.path.insert(0, str(Path(__file__).parent))
from build_mmneedle import make_coco  # noqa: E402

SECTION = "## MMNeedle image storage, beside the official generator"
OFFICIAL_FILES = ("sample_stitched_images.py", "sample_single_needle.py", "utils.py")


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# RUSAGE_CHILDREN keeps the largest child ever waited for, so each command runs under a wrapper
# process of its own that reports the peak RSS (and the CPU seconds) of that one command.
_WRAPPER = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_maxrss, r.ru_utime + r.ru_stime)"
)


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stderr) of one command in a fresh process."""
    wall, peak, _, stderr = timed_cpu(command, cwd, env)
    return wall, peak, stderr


def timed_cpu(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """(wall seconds, peak RSS MB, CPU seconds (user + system), stderr) of one command in a fresh process.
    CPU seconds do not count time spent waiting for a core that other processes hold."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *command], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    rss, cpu = proc.stdout.strip().splitlines()[-1].split()
    return wall, int(rss) / 1024, float(cpu), proc.stderr


def official_setup(official: Path, coco: Path, pool: int, rows: int, work: Path) -> None:
    """The official scripts in `work`, with the constants of this run."""
    for name in OFFICIAL_FILES:
        shutil.copy(official / name, work / name)
    (work / "IPython").mkdir()
    (work / "IPython" / "__init__.py").write_text("")
    (work / "IPython" / "display.py").write_text("Markdown = str\n")
    (work / "val2014").symlink_to(coco / "val2014")
    stitched = (work / "sample_stitched_images.py").read_text()
    stitched = stitched.replace("N_COL = N_ROW = 2", "N_COL = N_ROW = 8").replace("N_IMG = 10000", f"N_IMG = {pool}")
    stitched = stitched.replace(
        "\n    load_image_paths('val2014')\n", "\n    image_paths = load_image_paths('val2014')\n"
    )
    (work / "sample_stitched_images.py").write_text(stitched)
    single = (work / "sample_single_needle.py").read_text()
    single = single.replace("N_SEQUENCES = 10000", f"N_SEQUENCES = {rows}").replace(
        "N_ROW = N_COL = 1", "N_ROW = N_COL = 8"
    )
    (work / "sample_single_needle.py").write_text(single)


def run_official(args: argparse.Namespace, coco: Path, rows: int) -> dict:
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        official_setup(args.official, coco, args.pool, rows, work)
        pool_wall, pool_rss, _ = timed([sys.executable, "sample_stitched_images.py"], work)
        rows_wall, rows_rss, _ = timed([sys.executable, "sample_single_needle.py"], work)
        size = folder_bytes(work / "images_stitched") + folder_bytes(work / "metadata_stitched")
        images = len(list((work / "images_stitched" / "8_8").iterdir()))
    return {
        "wall_s": pool_wall + rows_wall,
        "pool_s": pool_wall,
        "rows_s": rows_wall,
        "bytes": size,
        "images": images,
        "peak_rss_mb": max(pool_rss, rows_rss),
    }


def child_build(args: argparse.Namespace) -> None:
    """In a fresh process: one of our builds with the official pool size; prints its figures as JSON."""
    import builders.mmneedle.plan as plan
    from builders.mmneedle import build_mmneedle

    plan.POOL_SIZE = args.pool  # the constant the official run changes too
    out = Path(args.workdir) / f"ours-{os.getpid()}"
    start = time.perf_counter()
    path = build_mmneedle(
        source=f"coco={args.coco}",
        out_dir=out,
        configs=["m10_n8_k1"],
        limit=args.rows // 2,
        num_proc=args.num_proc,
        image_storage=args.storage,
        overwrite=True,
    )
    build_s = time.perf_counter() - start
    manifest = json.loads((path / "build_manifest.json").read_text())
    table = manifest.get("image_table")
    print(
        json.dumps(
            {  # on stderr: the wrapper of `timed` keeps stdout for the peak RSS
                "build_s": build_s,
                "bytes": folder_bytes(path),
                "rows_bytes": manifest["configs"]["m10_n8_k1"]["num_bytes"],
                "table_bytes": table["num_bytes"] if table else 0,
                "images": sum(manifest["stats"]["stitched_images_encoded"].values()),
            }
        ),
        file=sys.stderr,
    )
    shutil.rmtree(out)


def run_ours(args: argparse.Namespace, coco: Path, rows: int, storage: str) -> dict:
    command = [
        sys.executable,
        __file__,
        "--child",
        "--coco",
        str(coco),
        "--rows",
        str(rows),
        "--pool",
        str(args.pool),
        "--storage",
        storage,
        "--num-proc",
        str(args.num_proc),
        "--workdir",
        str(args.workdir),
    ]
    wall, peak, stderr = timed(command, Path.cwd(), {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    figures = json.loads(stderr.strip().splitlines()[-1])
    return {**figures, "wall_s": wall, "peak_rss_mb": peak}


def best(runs: list[dict]) -> dict:
    out = dict(min(runs, key=lambda r: r["wall_s"]))
    out["all_walls"] = [round(r["wall_s"], 1) for r in runs]
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return out


def measure(args: argparse.Namespace, coco: Path) -> dict[int, dict[str, dict]]:
    figures: dict[int, dict[str, dict]] = {}
    for rows in args.rows:
        runs: dict[str, list[dict]] = {"official": [], "embedded": [], "shared": []}
        for _ in range(args.repeats):  # interleaved, so a disturbance hits every kind alike
            runs["official"].append(run_official(args, coco, rows))
            runs["embedded"].append(run_ours(args, coco, rows, "embedded"))
            runs["shared"].append(run_ours(args, coco, rows, "shared"))
        figures[rows] = {kind: best(r) for kind, r in runs.items()}
        print(
            f"rows {rows}: "
            + ", ".join(f"{k} {v['wall_s']:.1f} s {v['bytes'] / 1e6:.0f} MB" for k, v in figures[rows].items()),
            file=sys.stderr,
        )
    return figures


def report(args: argparse.Namespace, figures: dict[int, dict[str, dict]]) -> str:
    lines = [
        SECTION,
        "",
        f"COCO-format fixture of {args.images} JPEGs (640 x 480), a pool of {args.pool} stitched 8 x 8 images "
        "(2048 x 2048 JPEG), rows of M = 10 images (half positive); 2 vCPU, best of "
        f"{args.repeats} interleaved runs, whole-process wall time.",
        "",
        "```",
        f".venv/bin/python bench/image_storage.py --official OFFICIAL_CHECKOUT --images {args.images} "
        f"--pool {args.pool} --rows {' '.join(map(str, args.rows))} --repeats {args.repeats} --write-results",
        "```",
        "",
        "| rows | run | wall s | vs official | on disk MB | of which rows MB | images stored | "
        "size / distinct images | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for rows, kinds in figures.items():
        official = kinds["official"]
        distinct = kinds["shared"]["table_bytes"]
        for kind in ("official", "embedded", "shared"):
            f = kinds[kind]
            stored = f["images"] if kind != "embedded" else rows * 10
            rows_mb = (
                "-" if kind == "official" else f"{(f['rows_bytes'] if kind == 'shared' else f['bytes']) / 1e6:.1f}"
            )
            speed = "1.00x" if kind == "official" else f"{official['wall_s'] / f['wall_s']:.2f}x faster"
            lines.append(
                f"| {rows} | {kind} | {f['wall_s']:.1f} | {speed} | {f['bytes'] / 1e6:.1f} | {rows_mb} | "
                f"{stored} | {f['bytes'] / distinct:.2f} | {f['peak_rss_mb']:.0f} |"
            )
    lines += [
        "",
        "All runs' wall times (s): "
        + "; ".join(
            f"{rows} rows {kind} {f['all_walls']}" for rows, kinds in figures.items() for kind, f in kinds.items()
        ),
        "",
    ]
    lines += [
        "Notes:",
        "- official: the pool script writes each stitched image once as a JPEG file (its wall time is most of the",
        "  total) and the sample script writes JSON; it resizes each source image again for every stitched image",
        "  that shows it. `size / distinct images` is the bytes on disk over the distinct stitched images' bytes",
        "  (the image table of the shared build).",
        "- ours, embedded: what `load_dataset(folder, 'm10_n8_k1')` users expect; its size grows with rows x 10",
        "  images. ours, shared: each distinct image once plus rows of text and hashes, so its size stays at the",
        "  distinct images' bytes however many rows show them.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", type=Path, help="a checkout of Wang-ML-Lab/multimodal-needle-in-a-haystack")
    parser.add_argument("--images", type=int, default=1500, help="source images in the fixture (default 1500)")
    parser.add_argument("--pool", type=int, default=300, help="stitched 8x8 images in the pool (default 300)")
    parser.add_argument("--rows", type=int, nargs="+", default=[100, 400], help="rows per run (default 100 400)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path(".scratch/bench_storage"))
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--coco", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--storage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.workdir = args.workdir.resolve()
    if args.child:
        args.rows = args.rows[0]
        child_build(args)
        return
    if args.official is None or not all((args.official / name).is_file() for name in OFFICIAL_FILES):
        parser.error(f"--official must be a checkout holding {', '.join(OFFICIAL_FILES)}")
    args.official = args.official.resolve()
    args.workdir.mkdir(parents=True, exist_ok=True)
    coco = args.workdir / f"coco{args.images}"
    make_coco(coco, args.images)
    text = report(args, measure(args, coco))
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
