"""Metadata in the authors' format (`metadata_stitched/` of Wang-ML-Lab/multimodal-needle-in-a-haystack), written by
hand over the COCO-format folder of `builder_fixtures.write_coco`: the pools of stitched images and the annotations
of one single-needle and one multi-needle config."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.support.builder_fixtures import coco_file_name

POOL_2 = {  # stitched name -> row-major source indices
    "COCO_val2014_stitched_0000.jpg": [0, 1, 2, 3],
    "COCO_val2014_stitched_0001.jpg": [4, 5, 6, 7],
    "COCO_val2014_stitched_0002.jpg": [8, 3, 9, 10],  # image 3 again, as pools allow
    "COCO_val2014_stitched_0003.jpg": [11, 12, 13, 14],
}
POOL_1 = {f"COCO_val2014_stitched_{i:04d}.jpg": [15 + i] for i in range(12)}


def pool_json(pool: dict[str, list[int]], n: int) -> dict:
    return {
        name: {f"{k // n}_{k % n}": f"val2014/{coco_file_name(i)}" for k, i in enumerate(idx)}
        for name, idx in pool.items()
    }


def stitched_path(n: int, name: str) -> str:
    return f"images_stitched/{n}_{n}/{name}"


# (id, stitched image, index, row, col, target source index); -1 marks negatives.
ANNOTATIONS_1_2_2 = [
    (0, "COCO_val2014_stitched_0002.jpg", 0, 1, 1, 10),
    (1, "COCO_val2014_stitched_0000.jpg", 0, 0, 1, 1),
    (2, "COCO_val2014_stitched_0003.jpg", 0, 1, 0, 13),
    (5000, "COCO_val2014_stitched_0001.jpg", -1, -1, -1, 30),
    (5001, "COCO_val2014_stitched_0000.jpg", -1, -1, -1, 31),
    (5002, "COCO_val2014_stitched_0002.jpg", -1, -1, -1, 4),
]
HAYSTACK_10 = [f"COCO_val2014_stitched_{i:04d}.jpg" for i in (3, 0, 7, 11, 5, 1, 9, 2, 10, 4)]
HAYSTACK_10B = [f"COCO_val2014_stitched_{i:04d}.jpg" for i in (6, 8, 0, 2, 4, 1, 3, 5, 7, 9)]
# K = 2, M = 10, N = 1: (id, haystack, [index...], target indices)
ANNOTATIONS_2_10_1_1 = [
    (0, HAYSTACK_10, [4, 0], [20, 18]),
    (1, HAYSTACK_10B, [9, 2], [24, 15]),
    (2, HAYSTACK_10, [2, 8], [22, 25]),
    (5000, HAYSTACK_10, [-1, -1], [40, 41]),
    (5001, HAYSTACK_10B, [-1, -1], [42, 47]),
    (5002, HAYSTACK_10B, [-1, -1], [43, 44]),
]


def single_needle_entries(annotations: list[tuple[int, str, int, int, int, int]]) -> list[dict]:
    """The entries of an `annotations_1_2_2.json` (2x2 stitched images, one needle) for rows as in
    `ANNOTATIONS_1_2_2`: (id, stitched image, index, row, col, target source index), -1 marking negatives."""
    return [
        {
            "id": i,
            "image_ids": [stitched_path(2, s)],
            "index": m,
            "row": r,
            "col": c,
            "target": f"val2014/{coco_file_name(t)}",
        }
        for i, s, m, r, c, t in annotations
    ]


def write_metadata(folder: Path) -> Path:
    meta = folder / "metadata_stitched"
    meta.mkdir(parents=True)
    (meta / "2_2.json").write_text(json.dumps(pool_json(POOL_2, 2), indent=4))
    (meta / "1_1.json").write_text(json.dumps(pool_json(POOL_1, 1), indent=4))
    entries = single_needle_entries(ANNOTATIONS_1_2_2)
    (meta / "annotations_1_2_2.json").write_text(json.dumps(entries[::-1], indent=4))  # order must not matter
    multi = [
        {
            "id": i,
            "image_ids": [stitched_path(1, s) for s in hay],
            "index": idx,
            "row": [0 if m >= 0 else -1 for m in idx],
            "col": [0 if m >= 0 else -1 for m in idx],
            "target": [f"val2014/{coco_file_name(t)}" for t in targets],
        }
        for i, hay, idx, targets in ANNOTATIONS_2_10_1_1
    ]
    (meta / "2_annotations_10_1_1.json").write_text(json.dumps(multi, indent=4))
    return folder


def write_metadata_zip(folder: Path) -> tuple[Path, Path]:
    """The metadata of `write_metadata` written under `folder / "repo"`, and zipped as the Hub repo publishes it
    (`folder / "metadata_stitched.zip"`, each file under `metadata_stitched/`): the metadata folder and the zip."""
    meta = write_metadata(folder / "repo") / "metadata_stitched"
    archive = folder / "metadata_stitched.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for file in sorted(meta.iterdir()):
            zipped.write(file, f"metadata_stitched/{file.name}")
    return meta, archive
