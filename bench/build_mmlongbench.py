#!/usr/bin/env python
"""Benchmark: `builders build mmlongbench` on a release-shaped source at the paper's scale of images per row.

The release itself cannot be downloaded here, so the script writes one in its formats: a pool of distinct
natural-image JPEGs (448 x 448, 256 tokens each, noise-textured so they do not compress away), and for every
length the files of VH-Single (6 depths), VH-Multi (3 permutations) and MM-NIAH-Ret (T) (6 depths, 100-word
passages interleaved with images), with `--ids` ids each. A row holds as many images as fill its length
(VH at 128K: ~490 images; MM-NIAH half text, half images), drawn from the pool, so the same images recur
across rows, depths and lengths as in the release.

Measured, for each `--ids` (rows grow with it, the pool does not):
* size: the build's bytes on disk (row Parquet + image table) against the floor of storing each distinct
  image once plus the rows' text (prompt + answer bytes); target <= 1.2x;
* throughput: the build's wall time (its own process, interpreter start included) against the floor of
  reading and hashing every distinct image once (`sha256` of each file, in this process); target <= 1.5x;
* peak RSS of the build process, which should stay flat as rows grow.

    .venv/bin/python bench/build_mmlongbench.py --ids 25 50 100 --pool 3000 [--write-results]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import datasets
import numpy as np
from PIL import Image
from results_file import write_section

sys.path.insert(0, str(Path(__file__).parent))
from image_storage import folder_bytes, timed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from builders.core import contract  # noqa: E402
from builders.mmlongbench.leaves import CONFIGS, LENGTHS  # noqa: E402

SECTION = "## MMLongBench build: size and throughput"
LEAVES = ("niah_vh_single", "niah_vh_multi", "niah_mmniah_ret_text")
SIDE = 448  # 16 x 16 blocks of 28 px: 256 tokens per image
TOKENS_PER_IMAGE = 256
PASSAGE_TOKENS = 140  # a 100-word passage under the approximate counter, roughly
WORDS = ("harbour lantern meadow copper violin glacier orchard velvet canyon ember quartz willow falcon marble "
         "prairie saffron thunder cobalt lagoon").split()


def make_pool(folder: Path, count: int) -> list[str]:
    """`count` distinct JPEGs: a smooth colour field plus noise, ~40 kB each (a photo's order of size)."""
    rng = np.random.default_rng(0)
    names = []
    for i in range(count):
        name = f"vh/pool/{i:05d}.jpg"
        path = folder / "mmlb_image" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        base = np.linspace(0, 255, SIDE, dtype=np.float32)
        field = (base[None, :, None] * rng.random(3) + base[:, None, None] * rng.random(3)) / 2
        noise = rng.normal(0, 18, (SIDE, SIDE, 3))
        Image.fromarray(np.clip(field + noise, 0, 255).astype(np.uint8)).save(path, quality=85)
        names.append(name)
    return names


def _passage(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(100))


def write_release(folder: Path, pool: list[str], ids: int) -> None:
    rng = random.Random(0)
    for length, tokens in LENGTHS.items():
        budget = int(tokens * 0.95)
        for leaf in LEAVES:
            cfg = CONFIGS[f"{leaf}_{length}"]
            variants = cfg.leaf.variants
            lines = []
            for base in range(ids):
                for variant in range(variants):
                    if leaf.startswith("niah_vh"):
                        images = rng.sample(pool, min(len(pool), budget // TOKENS_PER_IMAGE))
                        lines.append({"id": f"{leaf}_{base}", "question": "For the image with a cat, is there a dog?",
                                      "answer": "Yes" if base % 2 else "No", "ctxs": images})
                    else:
                        pairs = budget // (PASSAGE_TOKENS + TOKENS_PER_IMAGE)
                        ctxs, image_list = [], []
                        for k in range(pairs):
                            ctxs.append({"text": _passage(rng)})
                            ctxs.append({"text": "<image>"})
                            image_list.append(pool[(base * 7 + variant * 3 + k * 11) % len(pool)])
                        ctxs.insert(variant % len(ctxs), {"text": f"The secret word is copper-{base}."})
                        lines.append({"id": f"{leaf}_{base}", "question": "What is the secret word?",
                                      "answer": f"copper-{base}", "ctxs": ctxs, "image_list": image_list})
            path = folder / "mmlb_data" / cfg.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def hash_floor(folder: Path, names: set[str]) -> float:
    """Seconds to read and sha256 every distinct image the rows name, once each (best of 2)."""
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        for name in sorted(names):
            hashlib.sha256((folder / "mmlb_image" / name).read_bytes()).hexdigest()
        best = min(best, time.perf_counter() - start)
    return best


def measure(work: Path, pool: list[str], ids: int) -> dict[str, float]:
    release = work / f"release_{ids}"
    if not (release / "mmlb_data").exists():
        release.mkdir(parents=True, exist_ok=True)
        if not (release / "mmlb_image").exists():
            (release / "mmlb_image").symlink_to((work / "pool" / "mmlb_image").resolve())  # one pool, every --ids
        write_release(release, pool, ids)
    out = work / f"out_{ids}"
    configs = [f"{leaf}_{length}" for length in LENGTHS for leaf in LEAVES]
    command = [str(Path(sys.executable).parent / "builders"), "build", "mmlongbench", "--source", str(release),
               "--configs", *configs, "--out", str(out), "--overwrite", "--quiet"]
    wall, peak, _ = timed(command, ROOT)
    build = out / "mmlongbench"
    manifest = json.loads((build / contract.MANIFEST_NAME).read_text())
    rows = sum(c["rows"] for c in manifest["configs"].values())
    text = 0
    names: set[str] = set()
    references = 0
    for config in configs:
        ds = datasets.load_dataset("parquet", data_files={"test": contract.split_files(build, config, "test")},
                                   split="test")
        text += sum(len(p.encode()) + len(a.encode()) for p, a in zip(ds["prompt"], ds["answer"], strict=True))
        references += sum(ds[contract.NUM_IMAGES])
    for line_file in (release / "mmlb_data").rglob("*.jsonl"):
        for line in line_file.read_text().splitlines():
            row = json.loads(line)
            names.update(row["image_list"] if "image_list" in row else row["ctxs"])
    table = manifest["image_table"]
    distinct_bytes = sum((release / "mmlb_image" / n).stat().st_size for n in names)
    floor = hash_floor(release, names)
    return {"ids": ids, "rows": rows, "image_references": references, "distinct_images": table["images"],
            "on_disk": folder_bytes(build), "distinct_image_bytes": distinct_bytes, "text_bytes": text,
            "wall_s": wall, "floor_s": floor, "peak_rss_mb": peak, "read_names": len(names)}


def section(results: list[dict[str, float]], pool: int, command: str) -> str:
    lines = [SECTION, "",
             f"Release-shaped source written by the script: a pool of {pool:,} distinct 448 x 448 JPEGs and, at each "
             "length, VH-Single, VH-Multi and MM-NIAH-Ret (T) files with rows filled to their length (VH 128K: "
             f"{int(131072 * 0.95) // TOKENS_PER_IMAGE} images per row). 15 configs; 2 vCPU; one run each.", "",
             f"```\n{command}\n```", "",
             "| ids per file | rows | image references | distinct images | on disk MB | floor MB (images + text) | "
             "size / floor | build s | hash floor s | time / floor | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        floor_bytes = r["distinct_image_bytes"] + r["text_bytes"]
        lines.append(f"| {r['ids']} | {r['rows']:,} | {r['image_references']:,} | {r['distinct_images']:,} | "
                     f"{r['on_disk'] / 1e6:.1f} | {floor_bytes / 1e6:.1f} | {r['on_disk'] / floor_bytes:.2f}x | "
                     f"{r['wall_s']:.1f} | {r['floor_s']:.2f} | {r['wall_s'] / r['floor_s']:.1f}x | "
                     f"{r['peak_rss_mb']:.0f} |")
    lines += ["", "Notes:",
              "- size: every distinct image is stored once in `image_table`; rows hold their images' sha256 list, "
              "their prompt and answer. An embedded build would store every image reference.",
              "- hash floor: reading and hashing each distinct image file once, from the page cache, in one "
              "process; the build's time includes its interpreter start, planning the official sample, "
              "reading every image header, writing Parquet and the card.",
              "- The throughput target (<= 1.5x the hash floor) is not met on this source: its 3,000 images are "
              "~0.2 GB, hashed in 0.2 s, while the rows carry ~10^6 image references and MM-NIAH's 128K prompts "
              "~60K words each, so the build's time is text work (parsing the release lines, assembling and "
              "token-counting the prompts, spooling the plan, writing rows), which grows with rows, not images. "
              "A profile of the 100-id build (`python -m cProfile -m builders.cli build ...`) puts ~3 s in token "
              "counting, ~2 s in JSON encoding and decoding, ~1.5 s in Parquet and ~1.5 s in interpreter start."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--pool", type=int, default=3000)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_mmlb_"))
    work.mkdir(parents=True, exist_ok=True)
    pool_dir = work / "pool"
    if not (pool_dir / "mmlb_image").exists():
        pool = make_pool(pool_dir, args.pool)
    else:
        pool = sorted(str(p.relative_to(pool_dir / "mmlb_image")) for p in (pool_dir / "mmlb_image").rglob("*.jpg"))
    results = [measure(work, pool, ids) for ids in args.ids]
    command = ".venv/bin/python bench/build_mmlongbench.py --ids " + " ".join(map(str, args.ids)) + \
        f" --pool {args.pool}" + (" --write-results" if args.write_results else "")
    text = section(results, args.pool, command)
    print(json.dumps(results, indent=1))
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
