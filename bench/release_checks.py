#!/usr/bin/env python
"""Benchmark: what the builders' checks of a release cost per image (issue 17), beside reading and hashing it.

A release's image is read, hashed and stored once per build; since issue 17 it is also found through
`builders.core.release_paths.ReleaseFolder` (symbolic links followed, the file must stay inside its folder) and
checked whole with `builders.core.image_check.image_size` (a JPEG's markers walked to an end-of-image marker after
its scan; a PNG's chunk CRCs verified). Measured in CPU time per image, best of the repeats, on the images of the
MMLongBench build benchmark (a COCO-sized 640 x 480 JPEG, noise-textured) and on a document page (a 1,000 x 1,400
PNG), two levels below the image folder:

* read: the file's bytes; sha256: hashing them (what every build already did);
* header: `Image.open(...).size`, the size check the builders did before;
* image_size: the check that catches a file cut short;
* full decode: `Image.load()`, what a check by decoding would cost instead;
* folder path: `ReleaseFolder(image folder).path(name)`, resolving the file inside the folder (the folder
  resolved once per build); release_path: the same for a single file (the folder resolved on each call).

    .venv/bin/python bench/release_checks.py [--repeats 5] [--write-results]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image
from results_file import write_section

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from builders.core.image_check import image_size  # noqa: E402
from builders.core.release_paths import ReleaseFolder, release_path  # noqa: E402

SECTION = "## Release checks: cost per image"
CALLS = 300


def images() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    photo = Image.fromarray((rng.random((480, 640, 3)) * 255).astype("uint8"))
    page = Image.new("RGB", (1000, 1400), "white")
    page.paste(Image.fromarray((rng.random((300, 800, 3)) * 255).astype("uint8")), (100, 200))
    out = {}
    for name, image, fmt in (("JPEG 640 x 480", photo, "JPEG"), ("PNG page 1,000 x 1,400", page, "PNG")):
        buffer = io.BytesIO()
        image.save(buffer, format=fmt, **({"quality": 75} if fmt == "JPEG" else {}))
        out[name] = buffer.getvalue()
    return out


def cpu_ms(step: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(CALLS):
            step()
        best = min(best, (time.process_time() - started) / CALLS)
    return best * 1000


def header(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def decode(data: bytes) -> None:
    with Image.open(io.BytesIO(data)) as image:
        image.load()


def steps(file: Path, data: bytes, base: Path, rel: str) -> dict[str, Callable[[], object]]:
    folder = ReleaseFolder(base)
    return {
        "read": file.read_bytes,
        "sha256": lambda: hashlib.sha256(data).digest(),
        "header": lambda: header(data),
        "image_size": lambda: image_size(data),
        "full decode": lambda: decode(data),
        "folder path": lambda: folder.path(rel, "bench"),
        "release_path": lambda: release_path(base, rel, "bench"),
    }


def measure(work: Path, repeats: int) -> list[dict[str, object]]:
    base, rel = work / "release" / "mmlb_image", "docqa/report-0001/page-1.bin"
    file = base / rel
    file.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, data in images().items():
        file.write_bytes(data)
        costs = {step: round(cpu_ms(call, repeats), 3) for step, call in steps(file, data, base, rel).items()}
        rows.append({"image": name, "kB": round(len(data) / 1000), **costs})
    return rows


def section(rows: list[dict[str, object]], command: str) -> str:
    columns = ["image", "kB", "read", "sha256", "header", "image_size", "full decode", "folder path", "release_path"]
    lines = [
        SECTION,
        "",
        "CPU milliseconds per image, best of the repeats (`bench/release_checks.py`); 2 vCPU shared with other work.",
        "",
        "```",
        command,
        "```",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    lines += [
        "",
        "Notes:",
        "- The checks a build adds per distinct image are `folder path` (a file read from a folder; a file read "
        "from an archive is not resolved, its member name is checked as text) and `image_size` instead of "
        "`header`; a full decode is what checking by decoding would have cost.",
        "- `release_path` resolves the folder too (`os.path.realpath`, one `lstat` per level of the whole "
        "path, in Python): for the few single files a build reads (annotation files, a manifest's files).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_release_checks_") as work:
        rows = measure(Path(work), args.repeats)
    command = f".venv/bin/python bench/release_checks.py --repeats {args.repeats}" + (
        " --write-results" if args.write_results else ""
    )
    text = section(rows, command)
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
