"""MS COCO as LoCoVQA uses it: a folder of images for out-of-distribution distractors (the MNIST tasks; spec
§1.5 recommends val2017, exactly the 5K validation images), and the instance annotations that list what each
image shows (an offline entity lister for OK-VQA's COCO images, `entities.py`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from builders.core.errors import BuildError
from builders.core.release_bounds import SOURCE_ANNOTATION, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import ReleaseFolder, release_files, release_path
from builders.locovqa.images import SourceImage, file_image

DEFAULT_OOD_SPLIT = "val2017"


class CocoImagePool:
    """Every `*.jpg` of `COCO_DIR/<split>`, sorted, keyed `coco-<split>/<file>`."""

    def __init__(self, coco_dir: str | Path, split: str = DEFAULT_OOD_SPLIT) -> None:
        self.dir = Path(coco_dir) / split
        self.split = split
        if not self.dir.is_dir():
            raise BuildError(
                f"COCO image folder not found: {self.dir} (out-of-distribution distractors; "
                "--ood-split names another folder of COCO_DIR)"
            )
        self.files = release_files(self.dir, ".jpg")
        self._images = ReleaseFolder(self.dir)
        if not self.files:
            raise BuildError(f"no .jpg images in {self.dir}")
        self.pool = [f"coco-{split}/{name}" for name in self.files]

    def image(self, key: str) -> SourceImage:
        return file_image(key, self._images.path(key.split("/", 1)[1], f"{self.dir}: image {key}"))

    def fingerprint_parts(self) -> list[str]:
        return [f"{name}\t{(self.dir / name).stat().st_size}" for name in self.files]


def instance_entities(path: Path, top: int = 5) -> dict[str, list[str]]:
    """`instances_<split>.json` -> file name -> the names of the categories it shows, largest total area first,
    at most `top` (the paper's lister names "at most 5 entities"); an image without annotations shows none."""
    try:
        data = read_file(release_path(path.parent, path.name, str(path)), SOURCE_ANNOTATION, str(path))
    except FileNotFoundError:
        raise BuildError(f"COCO instance annotations not found: {path}") from None
    doc = parse_json(data, f"malformed COCO instance annotations {path}")
    try:
        names = {int(c["id"]): str(c["name"]) for c in doc["categories"]}
        files = {int(im["id"]): str(im["file_name"]) for im in doc["images"]}
        area: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for ann in doc["annotations"]:
            area[int(ann["image_id"])][names[int(ann["category_id"])]] += float(ann.get("area", 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise BuildError(
            f"malformed COCO instance annotations {path}: expected images, annotations and categories "
            f"with ids ({type(exc).__name__}: {exc})"
        ) from None
    return {
        name: [c for c, _ in sorted(area[i].items(), key=lambda kv: (-kv[1], kv[0]))][:top] for i, name in files.items()
    }
