"""Helpers for the builder tests: a tiny COCO-format folder made on the spot, row readers."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pyarrow.parquet as pq
from PIL import Image

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
