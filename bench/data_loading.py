#!/usr/bin/env python
"""Benchmark: what loading every task of a benchmark costs the harness, in time and in disk, before and after it
read the verified Parquet files themselves (issue 17, item 2).

Before (the harness at `--baseline`, default 1bda4d3): each build converted into the `datasets` Arrow cache
(`HF_DATASETS_CACHE/mmlongeval_local/<key>`), rows read from that copy. After (this checkout): each file opened,
memory-mapped and hashed, rows read from the same mapping with pyarrow, image bytes read from their row group
when asked for; nothing written but the remembered file hashes.

Data: the offline fixture builds (`builders build milebench --source fixture`: 87 configs;
`builders build mmlongbench --source fixture`: 95 configs), and a release-shaped MMLongBench build at the paper's
images per row (`bench/build_mmlongbench.py`'s source, `--ids` ids: VH-Single, VH-Multi and MM-NIAH-Ret (T) at
every length, 15 configs, an image table of many row groups), where reading an image from Parquet costs the
most: its row group is read whole. Per data set and variant, in fresh processes with
empty caches: a cold load (every task of the benchmark: `Task.load`), then a warm load (same caches, a new
process), then, in the warm process, every image of every document read as a batch would read it (bytes checked
against the row's hash). Disk is what the loads wrote: the `HF_DATASETS_CACHE` folder and the file-hash record.
Both variants must give the same documents and image hashes (a digest of them is compared).

    .venv/bin/python bench/data_loading.py [--ids 8] [--rounds 3] [--write-results]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from results_file import write_section  # noqa: E402

SECTION = "## Harness data loading: verified Parquet read in place, against the Arrow cache"


def child(tree: Path, data: Path, benchmark: str, images: bool) -> None:
    """In a fresh process: load every task of `benchmark` that the build holds, with the harness in `tree`; print
    figures as JSON."""
    import hashlib
    import resource

    sys.path.insert(0, str(tree))
    started = time.perf_counter()
    try:
        from harness.config.task_index import TaskIndex
        from harness.running.task.task import Task
    except ModuleNotFoundError:  # a baseline revision from before harness/ was grouped into subpackages
        from harness.task import Task
        from harness.task_index import TaskIndex

    imported = time.perf_counter()
    index = TaskIndex()
    built = json.loads((data / benchmark / "build_manifest.json").read_text())["configs"]
    names = sorted(
        n for n, c in index.tasks.items() if Path(c.dataset_path).name == benchmark and c.dataset_name in built
    )
    tasks = [Task(index.tasks[name]) for name in names]
    for task in tasks:
        task.load(data)
    loaded = time.perf_counter()
    digest = hashlib.sha256()
    count, image_seconds = 0, 0.0
    for task in tasks:
        for doc_id, doc in task.iter_docs():
            digest.update(json.dumps(doc, sort_keys=True, default=str).encode())
            refs = task._image_refs(doc_id, doc)
            digest.update(" ".join(ref.sha256 for ref in refs).encode())
            if images:
                start = time.perf_counter()
                for ref in refs:
                    ref.data()
                image_seconds += time.perf_counter() - start
                count += len(refs)
    print(
        json.dumps(
            {
                "tasks": len(tasks),
                "imports_s": imported - started,
                "load_s": loaded - imported,
                "rows": sum(len(t) for t in tasks),
                "images": count,
                "image_read_s": image_seconds,
                "digest": digest.hexdigest(),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def build(data: Path, benchmark: str, source: str, *extra: str) -> Path:
    if not (data / benchmark / "build_manifest.json").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "builders.cli",
                "build",
                benchmark,
                "--source",
                source,
                *extra,
                "--out",
                str(data),
                "--quiet",
            ],
            cwd=ROOT,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    return data


def release_shaped(work: Path, ids: int) -> Path:
    """The MMLongBench build of `bench/build_mmlongbench.py`'s release-shaped source with `ids` ids."""
    from build_mmlongbench import LEAVES, write_release

    from builders.mmlongbench.leaves import LENGTHS

    release = work / f"mmlb_release_{ids}"
    if not (release / "mmlb_data").exists():
        (release / "mmlb_image").mkdir(parents=True, exist_ok=True)
        write_release(release, release / "mmlb_image", ids)
    configs = [f"{leaf}_{length}" for length in LENGTHS for leaf in LEAVES]
    return build(work / f"data_release_{ids}", "mmlongbench", str(release), "--configs", *configs)


def baseline_tree(work: Path, revision: str) -> Path:
    tree = work / f"tree-{revision}"
    if not (tree / "harness").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", revision, "harness", "builders", "tasks"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        archive_path = work / f"{revision}.tar"
        archive_path.write_bytes(archive)
        with tarfile.open(archive_path) as tar:
            tar.extractall(tree, filter="data")
    return tree


def run(tree: Path, data: Path, benchmark: str, caches: Path, images: bool) -> dict:
    env = {
        **os.environ,
        "HF_DATASETS_CACHE": str(caches / "hf_datasets"),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "MMLONGEVAL_HASH_CACHE": str(caches / "file_hashes.json"),
        "PYTHONPATH": str(tree),
    }
    env.pop("MMLONGEVAL_DATA_DIR", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(tree), str(data), benchmark] + (["--images"] if images else []),
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    figures["process_s"] = time.perf_counter() - start
    return figures


def measure(tree: Path, data: Path, benchmark: str, work: Path, label: str, round_: int) -> dict:
    caches = work / f"caches-{label}-{benchmark}-{round_}"
    subprocess.run(["rm", "-rf", str(caches)], check=True)
    cold = run(tree, data, benchmark, caches, images=False)
    disk = folder_bytes(caches / "hf_datasets") + folder_bytes(caches / "file_hashes.json")
    warm = run(tree, data, benchmark, caches, images=True)
    return {"cold": cold, "warm": warm, "disk": disk}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=3, metavar=("TREE", "DATA", "BENCHMARK"), help=argparse.SUPPRESS)
    parser.add_argument("--images", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", default="1bda4d3", help="the revision of the Arrow-cache harness")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ids", type=int, default=8, help="ids per file of the release-shaped MMLongBench source")
    parser.add_argument("--work", type=Path, default=ROOT / ".scratch" / "bench_data_loading")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]), args.child[2], args.images)
        return
    work = args.work.resolve()
    sys.path.insert(0, str(ROOT))
    datasets_ = {
        "MileBench fixture": ("milebench", build(work / "data", "milebench", "fixture")),
        "MMLongBench fixture": ("mmlongbench", build(work / "data", "mmlongbench", "fixture")),
        f"MMLongBench release-shaped, --ids {args.ids}": ("mmlongbench", release_shaped(work, args.ids)),
    }
    trees = {
        f"before ({args.baseline}, Arrow cache)": baseline_tree(work, args.baseline),
        "after (Parquet read in place)": ROOT,
    }
    results: dict[tuple[str, str], list[dict]] = {}
    for round_ in range(args.rounds):  # variants interleaved: the machine is shared
        for name, (benchmark, data) in datasets_.items():
            for label, tree in trees.items():
                results.setdefault((name, label), []).append(
                    measure(tree, data, benchmark, work, f"{label.split()[0]}-{name.split()[-1]}", round_)
                )
    lines = table(results, {name: data / benchmark for name, (benchmark, data) in datasets_.items()})
    print("\n".join(lines))
    if args.write_results:
        command = (
            ".venv/bin/python bench/data_loading.py"
            + (f" --ids {args.ids}" if args.ids != 8 else "")
            + (f" --rounds {args.rounds}" if args.rounds != 3 else "")
        )
        write_section(SECTION, "\n".join([SECTION, "", intro(command), "", *lines, "", *notes()]) + "\n")


def table(results: dict[tuple[str, str], list[dict]], builds: dict[str, Path]) -> list[str]:
    def median(runs: list[dict], *path: str) -> float:
        values = []
        for r in runs:
            value = r
            for key in path:
                value = value[key]
            values.append(value)
        return statistics.median(values)

    lines = [
        "| data | tasks | build on disk MB | harness | cold load s | warm load s | disk written MB | "
        "images read | image read ms each | peak RSS MB (warm) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, label), runs in results.items():
        digests = {r["warm"]["digest"] for (n, _), rs in results.items() if n == name for r in rs}
        assert len(digests) == 1, f"{name}: the variants read different documents or image hashes"
        images = runs[0]["warm"]["images"]
        lines.append(
            " | ".join(
                [
                    f"| {name}",
                    str(runs[0]["cold"]["tasks"]),
                    f"{folder_bytes(builds[name]) / 1e6:.1f}",
                    label,
                    f"{median(runs, 'cold', 'load_s'):.2f}",
                    f"{median(runs, 'warm', 'load_s'):.2f}",
                    f"{median(runs, 'disk') / 1e6:.2f}",
                    f"{images:,}",
                    f"{1000 * median(runs, 'warm', 'image_read_s') / max(images, 1):.3f}",
                    f"{median(runs, 'warm', 'peak_rss_mb'):.0f}",
                ]
            )
            + " |"
        )
    return lines


def intro(command: str) -> str:
    return (
        "Every task of a benchmark loaded by the harness (`Task.load`: find the build, verify its files against "
        "the manifest, read the rows), in a fresh process with empty caches (cold), then again in a new process "
        "with the caches the first left (warm); in the warm process every image of every document is then read "
        "as a batch reads it (bytes checked against the row's `image_sha256`). Load times exclude the "
        "interpreter start and imports; medians of the rounds, variants interleaved, on the 2-core machine "
        f"shared with other work. Both variants read the same documents and image hashes (checked).\n\n```\n{command}\n```"
    )


def notes() -> list[str]:
    return [
        "Notes:",
        "- before: each config converted into the `datasets` Arrow cache on first load (a second copy of the build's "
        "rows and images under `HF_DATASETS_CACHE`, one more per rebuild, keyed by file times), rows then read from "
        "that copy; the files' hashes were remembered in the same cache folder.",
        "- after: each file opened and memory-mapped once, hashed from that mapping (its hash remembered by the "
        "file's identity in `file_hashes.json`), the rows' non-image columns read from the mapping with pyarrow. "
        "Nothing is written under `HF_DATASETS_CACHE`.",
        "- image reads: image bytes as the builders write them (uncompressed, PLAIN) are read straight from the "
        "mapping: a row group is decoded once to find where each image lies (each found and compared byte for "
        "byte), then every read copies that image's bytes only (`builders.core.contract.ParquetColumn`). Both "
        "variants hash every image read against its row's `image_sha256`, most of the per-image time here. A "
        "compressed image column (not written by the builders) is read a row group at a time, the last ones kept "
        "up to 512 MB; once a table outgrows that, a read costs a row group (about 10 ms for 64 MB here).",
        "- peak RSS counts the pages of the mapped files that were read: the kernel's page cache, shared and "
        "reclaimable, as the Arrow cache's mapped pages were before. In the release-shaped build after the change, "
        "measured once from `/proc/self/status`: 534 MB of it file pages (the image table read through), 399 MB "
        "anonymous, of which pyarrow's pool peaked at 145 MB (a row group decoded once to locate its images).",
    ]


if __name__ == "__main__":
    main()
