"""Helpers for the builder tests: a tiny COCO-format folder made on the spot, row readers, and the broken or
hostile release files of issue 17 (a truncated JPEG, an archive member leading out, a file outside every release)."""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from builders.core.errors import BuildError

COCO_IMAGES = 48
SYNTH_CONFIGS = [
    "m1_n2_k1",
    "m1_n4_k2",
    "m1_n2_k5",
    "m10_n1_k5",
    "m10_n2_k1",
]  # built by the synth_build fixture
COCO_CONFIGS = ["m1_n2_k1", "m1_n4_k2", "m10_n1_k1", "m10_n2_k2"]  # built by the coco_build fixture
SIZES = [(96, 72), (80, 80), (72, 96), (120, 90)]


def coco_file_name(i: int) -> str:
    return f"COCO_val2014_{1000 + i * 7:012d}.jpg"


def make_coco_image(i: int) -> Image.Image:
    """A 4 x 4 grid of random flat colours: distinct per image, and still distinct after a
    resize to 256 x 256 and JPEG compression."""
    rng = random.Random(i)
    cells = Image.new("RGB", (4, 4))
    cells.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(16)])
    image = cells.resize(SIZES[i % len(SIZES)], Image.Resampling.NEAREST)
    return image.convert("L") if i == 5 else image  # one grayscale image, as COCO has


def expected_caption(i: int) -> str:
    """The caption the official rule picks for image i: the last one listed (raw, untrimmed)."""
    return f"Image {i} last caption " + ("ends with a newline\n" if i == 3 else "with trailing space ")


def write_coco(root: Path, count: int = COCO_IMAGES) -> dict[str, str]:
    """A COCO-2014-layout folder; returns file name -> the caption the official rule picks."""
    (root / "val2014").mkdir(parents=True)
    (root / "annotations").mkdir()
    images, annotations, expected = [], [], {}
    for i in range(count):
        name = coco_file_name(i)
        make_coco_image(i).save(root / "val2014" / name, quality=95)
        image_id = 500 + i
        images.append({"id": image_id, "file_name": name, "width": 0, "height": 0})
        # Several captions per image; the last one listed must win. Interleave images so that
        # "last" means last in the file, not last in a block.
        annotations.append({"id": 10 * i, "image_id": image_id, "caption": f"first caption of image {i}"})
        expected[name] = expected_caption(i)
    for i in range(count):
        annotations.append({"id": 10 * i + 1, "image_id": 500 + i, "caption": f"second caption of image {i}"})
    for i in range(count):
        annotations.append({"id": 10 * i + 2, "image_id": 500 + i, "caption": expected[coco_file_name(i)]})
    doc = {"info": {}, "images": images, "annotations": annotations}
    (root / "annotations" / "captions_val2014.json").write_text(json.dumps(doc))
    return expected


def read_rows(dataset_dir: Path, config: str) -> list[dict]:
    """All rows of a config, straight from its Parquet shards (images as raw bytes)."""
    rows: list[dict] = []
    for shard in sorted((dataset_dir / config).glob("test-*.parquet")):
        rows += pq.read_table(shard).to_pylist()
    return rows


def decode(image: dict) -> Image.Image:
    return Image.open(io.BytesIO(image["bytes"])).convert("RGB")


def outside_jpeg(folder: Path) -> Path:
    """A valid JPEG outside any release, which no build may read: `folder/outside.jpg`."""
    path = folder / "outside.jpg"
    Image.new("RGB", (24, 16), (200, 30, 90)).save(path, quality=90)
    return path


def write_truncated_jpeg(path: Path) -> None:
    """A photo-sized JPEG cut in half, as an interrupted download leaves it: its header is whole (Pillow opens it
    and reports its size), its image data stops midway."""
    rng = random.Random(7)
    image = Image.new("RGB", (320, 240))
    image.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(320 * 240)])
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    data = buffer.getvalue()
    path.write_bytes(data[: len(data) // 2])
    assert Image.open(path).size == (320, 240)  # the header alone passes


def cut_in_half(path: Path) -> None:
    """Truncate a file to half its bytes, as an interrupted download leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def add_tar_member(archive: Path, name: str, data: bytes) -> None:
    """Append a member called `name` (any name, `../x` included) to a gzipped tar archive."""
    with gzip.open(archive, "rb") as handle:
        members = handle.read()
    buffer = io.BytesIO(members)
    with tarfile.open(fileobj=buffer, mode="a") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with gzip.open(archive, "wb") as handle:
        handle.write(buffer.getvalue())


def check_archive_edges(archive: Path, member: str, build: Callable[[], object], argv: list[str], out: Path) -> None:
    """What a hostile or broken archive of a release does to a build (issue 17): a member `member` leading out of
    the archive stops `build()` with a `BuildError` naming the archive and the member; the archive cut in half
    stops the CLI (`builders ARGV`) with one line naming it, exit 2. Nothing is left in `out`."""
    whole = archive.read_bytes()
    add_tar_member(archive, member, b"\xff\xd8 bytes")
    with pytest.raises(
        BuildError,
        match=rf"{re.escape(archive.name)}: member {re.escape(repr(member))}: path .* "
        "leads out of the release",
    ):
        build()
    archive.write_bytes(whole)
    cut_in_half(archive)
    result = subprocess.run([sys.executable, "-m", "builders.cli", *argv], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"builders: error: {archive}: not a readable tar archive, damaged or cut short")
    assert not out.exists() or list(out.iterdir()) == []  # a folder the build made is removed again
