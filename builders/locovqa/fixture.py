"""An offline stand-in for LoCoVQA's sources, written in their public formats (`--source synthetic`), so that
the offline build runs the same readers as a real one:

- `coco/val2014/COCO_val2014_<id>.jpg` + `coco/annotations/instances_val2014.json`: drawn scenes of coloured
  shapes (MMNeedle's generator), the shapes as COCO categories (so the `coco` entity lister works);
- `okvqa/`: OK-VQA's two JSON files, one question per scene ("What colour is the star?"), ten answers each;
- `mmstar/mmstar.parquet`: the Hub release's columns, multiple-choice questions on other scenes, the six source
  benchmarks' names in turn; `mmstar/entities.jsonl`: their entity lists as a lister would have cached them;
- `mnist/`: IDX files of digits drawn as jittered strokes (no font: the same pixels on every machine);
- `coco/val2017/`: more scenes, the out-of-distribution distractors.

The content is trivial: scores on it say that the pipeline runs, nothing about a model.
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from builders.core.images import FileJpegEncoder
from builders.core.sampling import derive_rng
from builders.core.synthetic_scenes import SHAPES, SIZES, Scene, generate_scenes
from builders.locovqa.mmstar import LETTERS

FIXTURE_VERSION = "1"
VQA_IMAGES = 300  # OK-VQA-like questions, one per scene (the in-distribution pool: big enough for 35 distractors)
MMSTAR_IMAGES = 300
OOD_IMAGES = 80
MNIST_PER_DIGIT = 20
MMSTAR_SOURCES = ("SEEDBench_IMG", "MMBench", "MMMU", "MathVista", "ScienceQA", "AI2D")
SCENE_SIZE = 256

# Digit strokes in a unit box: polylines and ellipses (x0, y0, x1, y1), drawn with jitter.
_STROKES: dict[int, list[tuple[str, list[float]]]] = {
    0: [("ellipse", [0.25, 0.15, 0.75, 0.85])],
    1: [("line", [0.4, 0.25, 0.55, 0.15, 0.55, 0.85])],
    2: [("line", [0.28, 0.3, 0.4, 0.17, 0.6, 0.17, 0.72, 0.3, 0.7, 0.45, 0.28, 0.85, 0.75, 0.85])],
    3: [("line", [0.28, 0.2, 0.7, 0.18, 0.45, 0.47, 0.7, 0.6, 0.68, 0.8, 0.45, 0.87, 0.27, 0.8])],
    4: [("line", [0.62, 0.85, 0.62, 0.15, 0.25, 0.62, 0.78, 0.62])],
    5: [("line", [0.72, 0.17, 0.32, 0.17, 0.3, 0.47, 0.6, 0.45, 0.72, 0.62, 0.65, 0.82, 0.3, 0.85])],
    6: [("line", [0.65, 0.17, 0.4, 0.35, 0.3, 0.65, 0.4, 0.85, 0.62, 0.85, 0.7, 0.65, 0.58, 0.5, 0.33, 0.58])],
    7: [("line", [0.27, 0.17, 0.75, 0.17, 0.45, 0.85])],
    8: [("ellipse", [0.32, 0.15, 0.68, 0.5]), ("ellipse", [0.28, 0.5, 0.72, 0.87])],
    9: [("ellipse", [0.3, 0.15, 0.7, 0.5]), ("line", [0.7, 0.32, 0.62, 0.85])],
}


def draw_digit(label: int, rng) -> np.ndarray:
    """A 28 x 28 uint8 digit, white strokes on black like MNIST's, with its points jittered."""
    image = Image.new("L", (28, 28), 0)
    pen = ImageDraw.Draw(image)
    width = rng.choice((2, 3))
    for kind, points in _STROKES[label]:
        xy = [3 + 22 * (v + rng.uniform(-0.04, 0.04)) for v in points]
        if kind == "ellipse":
            pen.ellipse(xy, outline=255, width=width)
        else:
            pen.line(xy, fill=255, width=width, joint="curve")
    return np.asarray(image, dtype=np.uint8)


def _idx(array: np.ndarray, magic: int) -> bytes:
    header = struct.pack(f">{1 + array.ndim}I", magic, *array.shape)
    return gzip.compress(header + array.astype(np.uint8).tobytes(), mtime=0)


def _shape_areas(scene: Scene) -> dict[str, float]:
    areas: dict[str, float] = {}
    for obj in scene.objects:
        radius = SIZES[obj.size] * SCENE_SIZE / 6
        areas[obj.shape] = areas.get(obj.shape, 0.0) + round(3.14159 * radius * radius, 1)
    return areas


def _vqa_question(scene: Scene, rng) -> tuple[str, str]:
    """A question one of the scene's shapes answers: its colour (the shape is unique in the scene)."""
    counts: dict[str, int] = {}
    for obj in scene.objects:
        counts[obj.shape] = counts.get(obj.shape, 0) + 1
    unique = [obj for obj in scene.objects if counts[obj.shape] == 1]
    if not unique:
        return "What colour is the background?", scene.background
    obj = unique[rng.randrange(len(unique))]
    return f"What colour is the {obj.shape}?", obj.colour


def _mc_question(scene: Scene, rng) -> tuple[str, list[str], str]:
    """A four-option question: how many shapes the scene shows."""
    count = len(scene.objects)
    options = ["1", "2", "3", "4"]
    rng.shuffle(options)
    return "How many shapes are in the image?", options, LETTERS[options.index(str(count))]


def write_fixture(root: Path, seed: int = 0) -> dict[str, Path]:
    """Write every source under `root`; returns where each is (as `--source NAME=PATH` would name it)."""
    scenes = generate_scenes(seed, VQA_IMAGES + MMSTAR_IMAGES + OOD_IMAGES)
    vqa, mc, ood = (
        scenes[:VQA_IMAGES],
        scenes[VQA_IMAGES : VQA_IMAGES + MMSTAR_IMAGES],
        scenes[VQA_IMAGES + MMSTAR_IMAGES :],
    )
    encoder = FileJpegEncoder()
    coco = root / "coco"
    (coco / "val2014").mkdir(parents=True, exist_ok=True)
    (coco / "val2017").mkdir(parents=True, exist_ok=True)
    (coco / "annotations").mkdir(parents=True, exist_ok=True)
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    rng = derive_rng(seed, "fixture-questions")
    for i, scene in enumerate(vqa):
        image_id = 1000 + i
        name = f"COCO_val2014_{image_id:012d}.jpg"
        (coco / "val2014" / name).write_bytes(encoder.encode(scene.draw(SCENE_SIZE)).data)
        images.append({"id": image_id, "file_name": name, "width": SCENE_SIZE, "height": SCENE_SIZE})
        for shape, area in sorted(_shape_areas(scene).items()):
            annotations.append(
                {"id": len(annotations) + 1, "image_id": image_id, "category_id": SHAPES.index(shape) + 1, "area": area}
            )
        text, answer = _vqa_question(scene, rng)
        questions.append({"image_id": image_id, "question": text, "question_id": image_id * 10 + 5})
        answers.append(
            {
                "image_id": image_id,
                "question_id": image_id * 10 + 5,
                "answer_type": "other",
                "answers": [
                    {"answer": answer, "raw_answer": answer, "answer_confidence": "yes", "answer_id": k + 1}
                    for k in range(10)
                ],
            }
        )
    categories = [{"id": k + 1, "name": shape, "supercategory": "shape"} for k, shape in enumerate(SHAPES)]
    (coco / "annotations" / "instances_val2014.json").write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": categories})
    )
    for i, scene in enumerate(ood):
        (coco / "val2017" / f"{5000 + i:012d}.jpg").write_bytes(encoder.encode(scene.draw(SCENE_SIZE)).data)
    okvqa = root / "okvqa"
    okvqa.mkdir(parents=True, exist_ok=True)
    (okvqa / "OpenEnded_mscoco_val2014_questions.json").write_text(json.dumps({"questions": questions}))
    (okvqa / "mscoco_val2014_annotations.json").write_text(json.dumps({"annotations": answers}))
    mmstar = _write_mmstar(root / "mmstar", mc, encoder, seed)
    mnist = _write_mnist(root / "mnist", seed)
    encoder.close()
    return {
        "okvqa": okvqa,
        "coco": coco,
        "mmstar": mmstar,
        "mnist": mnist,
        "mmstar_entities": root / "mmstar" / "entities.jsonl",
    }


def _write_mmstar(folder: Path, scenes: list[Scene], encoder: FileJpegEncoder, seed: int) -> Path:
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = derive_rng(seed, "fixture-mmstar")
    rows, cache = [], []
    for i, scene in enumerate(scenes):
        data = encoder.encode(scene.draw(SCENE_SIZE)).data
        text, options, letter = _mc_question(scene, rng)
        question = text + "\nOptions: " + ", ".join(f"{LETTERS[k]}: {o}" for k, o in enumerate(options))
        source = MMSTAR_SOURCES[i % len(MMSTAR_SOURCES)]
        rows.append(
            {
                "index": i,
                "question": question,
                "image": {"bytes": data, "path": None},
                "answer": letter,
                "category": "coarse perception",
                "l2_category": "image scene and topic",
                "meta_info": {"source": source, "split": "val", "image_path": f"images/{i}.jpg"},
            }
        )
        shapes = sorted({obj.shape for obj in scene.objects})
        cache.append(
            {
                "sha256": hashlib.sha256(data).hexdigest(),
                "entities": [s.capitalize() for s in shapes],
                "lister": "fixture",
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), folder / "mmstar.parquet")
    (folder / "entities.jsonl").write_text("".join(json.dumps(e) + "\n" for e in cache))
    return folder / "mmstar.parquet"


def _write_mnist(folder: Path, seed: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = derive_rng(seed, "fixture-mnist")
    labels = np.array([d for _ in range(MNIST_PER_DIGIT) for d in range(10)], dtype=np.uint8)
    pixels = np.stack([draw_digit(int(d), rng) for d in labels])
    (folder / "train-images-idx3-ubyte.gz").write_bytes(_idx(pixels, 2051))
    (folder / "train-labels-idx1-ubyte.gz").write_bytes(_idx(labels, 2049))
    return folder
