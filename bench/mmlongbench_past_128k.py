#!/usr/bin/env python
"""Benchmark: MMLongBench past 128K on a length-true ICL source, the longest rows we build (1M: ~5,000 images).

The release cannot be downloaded here, so the script writes one in its formats for Stanford Cars (the paper's
Table 3 has 628.8 images per 128K row; a 400 x 400 exemplar is 196 tokens): a 128K file of 50 classes, one
exemplar set of 13 rounds, and a 64K file whose 20 exemplar sets of 6 rounds give each class ~120 exemplars the
128K file lacks (the pool the longer rows grow from; its first round repeats the 128K file's, which joins their
labels). Then, for each `--tests` (rows per config):

* `builders build mmlongbench --configs icl_stanford_cars_{128k,256k,512k,1m}`: wall time, peak RSS, and the
  images and counted tokens per row against the linear extrapolation of Table 3 (the line through its 64K and
  128K means);
* `harness --tasks mmlongbench_icl_stanford_cars_1m --model qwen2.5-vl --screen_only` and `--model random`
  (every request built, screened, journalled and sent; the random baseline decodes no image): wall time and peak
  RSS, which must stay flat as rows double.

With `--every-leaf`, instead: `builders build mmlongbench --source fixture:full --fixture-ids N` of every config
past 128K (`leaves.EXTENDED_CONFIGS`, every leaf but Summarization's, with their 128K configs beside them), and
per leaf and length the images per row against the same linear extrapolation of Table 3 and the least and most
counted tokens of a row against its length (its own section of RESULTS.md).

    .venv/bin/python bench/mmlongbench_past_128k.py [--tests 2 4] [--work DIR] [--write-results]
    .venv/bin/python bench/mmlongbench_past_128k.py --every-leaf [--fixture-ids 1] [--work DIR] [--write-results]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from harness_overhead import run  # noqa: E402
from results_file import write_section  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from mmlongbench_full_fixture import TABLE_3  # noqa: E402

from builders.core import contract  # noqa: E402
from builders.mmlongbench.leaves import BUILDABLE_CONFIGS, EXTENDED_LEAVES, EXTENDED_LENGTHS  # noqa: E402

BIN = Path(sys.executable).parent
SECTION = "## MMLongBench past 128K: a 1M ICL row"
EVERY_LEAF_SECTION = "## MMLongBench past 128K: images per row for every leaf (fixture:full)"
LEAF = "icl_stanford_cars"
LENGTHS = ("128k", "256k", "512k", "1m")
CLASSES, ROUNDS_128K, SETS_64K, ROUNDS_64K = 50, 13, 20, 6
SIDE = 400  # 400 x 400: 14 x 14 blocks of 28 px, 196 tokens (Cars at 128K: ~208 tokens per image, label included)
TABLE3 = (324.0, 628.8)  # Stanford Cars at 64K and 128K
TOKENS = {"128k": 131072, "256k": 262144, "512k": 524288, "1m": 1048576}


def extrapolated(length: str, means: tuple[float, float] = TABLE3) -> float:
    """Table 3's mean at `length` on the line through its 64K and 128K means (`means`)."""
    low, high = means
    return high + (high - low) * (TOKENS[length] - 131072) / 65536


def draw(path: Path, seed: int) -> None:
    """A JPEG of the exemplar's size, distinct per seed: a colour field and a block placed by the seed (a few kB:
    the harness's cost does not depend on how busy the pixels are, and 6,700 noisy photos take minutes to draw)."""
    image = Image.new("RGB", (SIDE, SIDE), (seed * 37 % 256, seed * 91 % 256, seed * 53 % 256))
    x, y = seed % 97 * 3, seed // 97 % 97 * 3
    image.paste((255 - seed % 256, 40, 200), (x, y, x + 60, y + 60))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, quality=80)


def write_release(root: Path, tests: int) -> None:
    images = root / "mmlb_image"
    seed = 0

    def image(name: str) -> str:
        nonlocal seed
        seed += 1
        if not (images / name).exists():
            draw(images / name, seed)
        return name

    def item(label: int, k: int) -> dict:
        return {"image": image(f"icl/cars/class{label:02d}/{k:03d}.jpg"), "id": label}

    rounds_128k = [[item(label, r) for label in range(CLASSES)] for r in range(ROUNDS_128K)]
    sets_64k = [
        [[item(label, ROUNDS_128K + s * ROUNDS_64K + r) for label in range(CLASSES)] for r in range(ROUNDS_64K)]
        for s in range(SETS_64K)
    ]
    sets_64k[0][0] = rounds_128k[0]  # one round both files show: it joins their labels
    test_examples = [{"image": image(f"icl/cars/test/{t:03d}.jpg"), "answer": t % CLASSES} for t in range(tests)]
    for length, sets in (("128k", [rounds_128k]), ("64k", sets_64k)):
        path = root / "mmlb_data" / BUILDABLE_CONFIGS[f"{LEAF}_{length}"].file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"all": {"exemplar_list": sets, "test_example": test_examples}}))


def measure(work: Path, tests: int, env: dict[str, str]) -> dict:
    release, data, out = work / "release", work / f"data_{tests}", work / f"out_{tests}"  # images drawn once
    shutil.rmtree(out, ignore_errors=True)  # a results file per run: only this one's
    write_release(release, tests)
    configs = ",".join(f"{LEAF}_{length}" for length in LENGTHS)
    build_s, build_mb, _ = run(
        [
            str(BIN / "builders"),
            "build",
            "mmlongbench",
            "--source",
            str(release),
            "--configs",
            configs,
            "--out",
            str(data),
            "--overwrite",
            "--quiet",
        ],
        env,
    )
    built = data / "mmlongbench"
    per_length = {}
    import pyarrow.parquet as pq

    for length in LENGTHS:
        table = pq.read_table(
            contract.split_files(built, f"{LEAF}_{length}", "test"),
            columns=[contract.NUM_IMAGES, contract.TEXT_TOKENS, contract.IMAGE_TOKENS],
        )
        rows = table.to_pylist()
        per_length[length] = {
            "images": sum(r[contract.NUM_IMAGES] for r in rows) / len(rows),
            "tokens": [r[contract.TEXT_TOKENS] + sum(r[contract.IMAGE_TOKENS]) for r in rows],
        }
    task = f"mmlongbench_{LEAF}_1m"
    common = ["--tasks", task, "--data_dir", str(data), "--no_progress"]
    screen_s, screen_mb, _ = run([str(BIN / "harness"), *common, "--model", "qwen2.5-vl", "--screen_only"], env)
    random_s, random_mb, _ = run([str(BIN / "harness"), *common, "--model", "random", "--output_path", str(out)], env)
    (results,) = (out / "random").glob("results_*.json")
    counts = json.loads(results.read_text())["sample_counts"][task]
    assert counts["n_scored"] == counts["sample_len"] == tests, counts
    return {
        "tests": tests,
        "build_s": build_s,
        "build_mb": build_mb,
        "per_length": per_length,
        "screen_s": screen_s,
        "screen_mb": screen_mb,
        "random_s": random_s,
        "random_mb": random_mb,
    }


def report(results: list[dict]) -> str:
    first = results[0]
    lines = [
        SECTION,
        "",
        "`bench/mmlongbench_past_128k.py` ("
        + ", ".join(f"--tests {r['tests']}" for r in results)
        + "): a length-true Stanford Cars source (400 x 400 exemplars, 196 tokens each), approximate text "
        "counter. Images per row against the line through Table 3's 64K and 128K means:",
        "",
        "| length | images per row (ours) | Table 3, extrapolated | counted tokens per row (min-max) | limit |",
        "|---|---|---|---|---|",
    ]
    for length in LENGTHS:
        cell = first["per_length"][length]
        lines.append(
            f"| {length} | {cell['images']:,.1f} | {extrapolated(length):,.1f} | "
            f"{min(cell['tokens']):,}-{max(cell['tokens']):,} | {TOKENS[length]:,} |"
        )
    lines += [
        "",
        "| rows per config | build 128K-1M (s, peak MiB) | `--screen_only` 1M (s, peak MiB) | "
        "`--model random` 1M (s, peak MiB) |",
        "|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['tests']} | {r['build_s']:.1f}, {r['build_mb']:.0f} | {r['screen_s']:.1f}, "
            f"{r['screen_mb']:.0f} | {r['random_s']:.1f}, {r['random_mb']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def config_rows(built: Path, config: str) -> dict:
    """Images per row and each row's counted tokens (text + image, as the builder counts them) of one config."""
    import pyarrow.parquet as pq

    rows = pq.read_table(
        contract.split_files(built, config, "test"),
        columns=[contract.NUM_IMAGES, contract.TEXT_TOKENS, contract.IMAGE_TOKENS],
    ).to_pylist()
    return {
        "rows": len(rows),
        "images": sum(r[contract.NUM_IMAGES] for r in rows) / len(rows),
        "tokens": [r[contract.TEXT_TOKENS] + sum(r[contract.IMAGE_TOKENS]) for r in rows],
    }


def measure_every_leaf(work: Path, ids: int, env: dict[str, str]) -> dict:
    data = work / f"every_leaf_{ids}"
    configs = [f"{leaf.name}_{length}" for leaf in EXTENDED_LEAVES for length in ("128k", *EXTENDED_LENGTHS)]
    build_s, build_mb, _ = run(
        [
            str(BIN / "builders"),
            "build",
            "mmlongbench",
            "--source",
            "fixture:full",
            "--fixture-ids",
            str(ids),
            "--configs",
            ",".join(configs),
            "--out",
            str(data),
            "--overwrite",
            "--quiet",
        ],
        env,
    )
    built = data / "mmlongbench"
    manifest = json.loads((built / contract.MANIFEST_NAME).read_text())
    return {
        "ids": ids,
        "build_s": build_s,
        "build_mb": build_mb,
        "stats": manifest.get("stats", {}),
        "configs": {config: config_rows(built, config) for config in configs},
    }


def report_every_leaf(result: dict) -> str:
    lengths = ("128k", *EXTENDED_LENGTHS)
    lines = [
        EVERY_LEAF_SECTION,
        "",
        f"`builders build mmlongbench --source fixture:full --fixture-ids {result['ids']}` of the "
        f"{len(EXTENDED_LEAVES) * len(EXTENDED_LENGTHS)} configs past 128K and their {len(EXTENDED_LEAVES)} 128K "
        f"configs: {result['build_s']:.0f} s wall, peak RSS {result['build_mb']:.0f} MiB (fixture written and "
        "built; 2 shared vCPU).",
        "",
        f"```\n.venv/bin/python bench/mmlongbench_past_128k.py --every-leaf --fixture-ids {result['ids']}\n```",
        "",
        "Images per row: ours / Table 3 on the line through its 64K and 128K means (at 128K: Table 3 itself). "
        "Fill: the least and the most counted tokens of a row (text, approx-v1, + image tokens), as a share of "
        "the length.",
        "",
        "| leaf | rows | " + " | ".join(f"{k} images / Table 3" for k in lengths) + " | fill past 128K, min-max |",
        "|---|---|" + "---|" * (len(lengths) + 1),
    ]
    for leaf in EXTENDED_LEAVES:
        cells, fills = [], []
        for length in lengths:
            cell = result["configs"][f"{leaf.name}_{length}"]
            paper = extrapolated(length, TABLE_3[leaf.name][3:5])
            cells.append(f"{cell['images']:,.1f} / {paper:,.1f}")
            if length != "128k":
                fills += [t / TOKENS[length] for t in cell["tokens"]]
        rows = result["configs"][f"{leaf.name}_1m"]["rows"]
        lines.append(f"| {leaf.paper_name} | {rows} | " + " | ".join(cells) + f" | {min(fills):.2%}-{max(fills):.2%} |")
    over = [
        f"{c} ({max(r['tokens']):,})"
        for c, r in result["configs"].items()
        if max(r["tokens"]) > TOKENS[c.rsplit("_", 1)[1]]
    ]
    lines += [
        "",
        "Rows over their length: "
        + (", ".join(over) if over else "none")
        + ". Manifest stats: "
        + json.dumps(result["stats"], sort_keys=True)
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--every-leaf", action="store_true", help="every leaf past 128K, from --source fixture:full")
    parser.add_argument("--fixture-ids", type=int, default=1, help="ids per file of fixture:full (--every-leaf)")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="mmlb_past_128k_"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "HF_DATASETS_CACHE": str(work / "hf_cache"),
        "HF_HUB_OFFLINE": "1",
    }
    if args.every_leaf:
        result = measure_every_leaf(work, args.fixture_ids, env)
        (work / "every_leaf.json").write_text(json.dumps(result))
        title, text = EVERY_LEAF_SECTION, report_every_leaf(result)
    else:
        title, text = SECTION, report([measure(work, tests, env) for tests in args.tests])
    print(text)
    if args.write_results:
        write_section(title, text)


if __name__ == "__main__":
    main()
