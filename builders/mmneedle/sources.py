"""Captioned-image sources: where sub-images and their captions come from.

A source has a sorted list of image names, one caption per name, a way to load each image (and
to decode + resize it into a tile), and a content fingerprint recorded in the build manifest.

- `CocoCaptionSource(root)`: COCO 2014 layout, `root/annotations/captions_val2014.json` and
  `root/val2014/*.jpg`. One caption per image, chosen as the released MMNeedle code does
  (`annotations_trainval/file_to_caption.py`): a dict `image_id -> caption` is filled in
  annotation order, so the LAST annotation listed for an image wins.
- `SyntheticCaptionSource(seed, num_images)`: drawn scenes with exact captions, offline.
"""

from __future__ import annotations

import abc
import hashlib
import os
import sys
from functools import cached_property
from pathlib import Path

from PIL import Image

from builders.core.errors import BuildError
from builders.core.hub_source import is_hub_source, not_on_hub
from builders.core.release_bounds import SOURCE_ANNOTATION, read_file
from builders.core.release_json import parse_json
from builders.core.release_paths import ReleaseFolder, release_files, release_path
from builders.core.synthetic_scenes import GENERATOR_VERSION, Scene, generate_scenes
from builders.mmneedle.images import TILE_SIZE, load_tile, resize_tile

COCO_ANNOTATIONS = "annotations"
COCO_CAPTIONS = Path(COCO_ANNOTATIONS) / "captions_val2014.json"
COCO_IMAGES = Path("val2014")
COCO_DOWNLOAD = "https://cocodataset.org/#download (2014 Val images, 2014 Train/Val annotations)"
COCO_LAYOUT = "val2014/*.jpg and annotations/captions_val2014.json"
SYNTHETIC_DEFAULT_SIZE = 10_000
DEFAULT_MIN_COVERAGE = 0.99  # of the captioned images, how many must be in the image folder


class CaptionedImageSource(abc.ABC):
    """Sorted image names, one caption each, image loading and a content fingerprint."""

    kind: str
    spec: str  # how the user named it, e.g. "synthetic" or "coco=/data/coco"
    # The dataset card's licence fields (`license`, `license_name`, `license_link`) and one sentence for its body.
    card_licence: dict[str, str]
    licence_note: str

    @property
    @abc.abstractmethod
    def names(self) -> list[str]:
        """All image names, sorted."""

    @abc.abstractmethod
    def caption(self, name: str) -> str: ...

    @abc.abstractmethod
    def load_image(self, name: str) -> Image.Image:
        """The image as stored (any mode, original size)."""

    def load_tile(self, name: str, size: int = TILE_SIZE) -> Image.Image:
        """Decode and resize to a size x size RGB sub-image."""
        return resize_tile(self.load_image(name), size)

    @abc.abstractmethod
    def fingerprint(self) -> str: ...

    def __contains__(self, name: object) -> bool:
        return name in self._name_set

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def _name_set(self) -> frozenset[str]:
        return frozenset(self.names)

    def describe(self) -> dict[str, object]:
        """What the manifest records about the source."""
        return {
            "kind": self.kind,
            "spec": self.spec,
            "num_images": len(self.names),
            "fingerprint": self.fingerprint(),
        }


class CocoCaptionSource(CaptionedImageSource):
    kind = "coco"
    # The images stay under their Flickr owners' terms; only COCO's annotations are CC BY 4.0.
    card_licence = {
        "license": "other",
        "license_name": "coco-terms-of-use",
        "license_link": "https://cocodataset.org/#termsofuse",
    }
    licence_note = (
        "The stitched images are made of MS COCO 2014 validation images, which COCO does not license: each "
        "remains under the [Flickr terms of use](https://www.flickr.com/creativecommons/) of its owner "
        "([COCO terms of use](https://cocodataset.org/#termsofuse)). The captions are COCO annotations, licensed "
        "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/) by the COCO Consortium."
    )

    def __init__(self, root: str | os.PathLike[str], min_coverage: float = DEFAULT_MIN_COVERAGE) -> None:
        self.root = Path(root)
        self.spec = f"coco={self.root}"
        self.captions_path = self.root / COCO_CAPTIONS
        self.image_dir = self.root / COCO_IMAGES
        if not self.root.is_dir():
            raise BuildError(f"COCO source folder not found: {self.root}")
        if not self.captions_path.is_file():
            raise BuildError(f"caption file not found: {self.captions_path} (expected COCO 2014 layout)")
        if not self.image_dir.is_dir():
            raise BuildError(f"image folder not found: {self.image_dir} (expected COCO 2014 layout)")
        self._caption_bytes = read_file(
            release_path(self.root / COCO_ANNOTATIONS, COCO_CAPTIONS.name, str(self.captions_path)),
            SOURCE_ANNOTATION,
            str(self.captions_path),
        )
        file_to_caption = parse_coco_captions(self._caption_bytes, self.captions_path)
        files = release_files(self.image_dir, ".jpg")
        self._images = ReleaseFolder(self.image_dir)
        if not files:
            raise BuildError(f"no .jpg images in {self.image_dir}")
        uncaptioned = [name for name in files if name not in file_to_caption]
        if uncaptioned:
            examples = ", ".join(uncaptioned[:5])
            raise BuildError(
                f"{len(uncaptioned)} image(s) in {self.image_dir} have no caption in {self.captions_path}, e.g. {examples}"
            )
        self._names = files
        self._captions = {name: file_to_caption[name] for name in files}
        self.missing = sorted(set(file_to_caption) - set(files))  # captioned, but not in the folder
        self._check_coverage(len(file_to_caption), min_coverage)

    def _check_coverage(self, captioned: int, min_coverage: float) -> None:
        """Captioned images absent from the image folder are said, never dropped silently; too many of them
        (an incomplete download) stop the build."""
        if not self.missing:
            return
        examples = ", ".join(self.missing[:3])
        coverage = 1 - len(self.missing) / captioned
        if coverage < min_coverage:
            raise BuildError(
                f"{len(self.missing)} of the {captioned} captioned images of {self.captions_path} are missing from "
                f"{self.image_dir} (e.g. {examples}): {coverage:.1%} present, at least {min_coverage:.0%} expected; "
                "complete the folder, or pass --min-image-coverage to build from what is there"
            )
        print(
            f"warning: {len(self.missing)} of the {captioned} captioned images are missing from {self.image_dir} "
            f"(e.g. {examples}); building from the {len(self._names)} that are there",
            file=sys.stderr,
        )

    @property
    def names(self) -> list[str]:
        return self._names

    def caption(self, name: str) -> str:
        try:
            return self._captions[name]
        except KeyError:
            raise BuildError(f"image {name} is not in {self.image_dir}") from None

    def path(self, name: str) -> Path:
        """The file of image `name`, inside the image folder (`builders.core.release_paths`)."""
        return self._images.path(name, f"{self.image_dir}: image {name!r}")

    def load_image(self, name: str) -> Image.Image:
        path = self.path(name)
        try:
            with Image.open(path) as image:
                image.load()
                return image
        except FileNotFoundError:
            raise BuildError(f"missing image: {path}") from None
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
            raise BuildError(f"unreadable image: {path} ({exc})") from None

    def load_tile(self, name: str, size: int = TILE_SIZE) -> Image.Image:
        return load_tile(self.path(name), size)

    def fingerprint(self) -> str:
        return self._fingerprint

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "missing_images": len(self.missing)}

    @cached_property
    def _fingerprint(self) -> str:
        # The caption file's bytes plus every image's name and byte size: cheap (no image is
        # read) and changes whenever an image is added, removed or replaced by another size.
        digest = hashlib.sha256()
        digest.update(hashlib.sha256(self._caption_bytes).digest())
        for name in self._names:
            digest.update(f"{name}\t{(self.image_dir / name).stat().st_size}\n".encode())
        return "sha256:" + digest.hexdigest()


def parse_coco_captions(data: bytes, path: Path) -> dict[str, str]:
    """file_name -> caption, the last annotation of each image winning (official rule)."""
    doc = parse_json(data, f"malformed caption file {path}")
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("images"), list)
        or not isinstance(doc.get("annotations"), list)
    ):
        raise BuildError(f"malformed caption file {path}: expected an object with lists 'images' and 'annotations'")
    last_caption: dict[object, str] = {}
    for i, ann in enumerate(doc["annotations"]):
        if (
            not isinstance(ann, dict)
            or not isinstance(ann.get("image_id"), int | str)
            or not isinstance(ann.get("caption"), str)
        ):
            raise BuildError(
                f"malformed caption file {path}: annotations[{i}] should be an object with 'image_id' and a string 'caption'"
            )
        last_caption[ann["image_id"]] = ann["caption"]
    file_to_caption: dict[str, str] = {}
    for i, image in enumerate(doc["images"]):
        if (
            not isinstance(image, dict)
            or not isinstance(image.get("id"), int | str)
            or not isinstance(image.get("file_name"), str)
        ):
            raise BuildError(
                f"malformed caption file {path}: images[{i}] should be an object with 'id' and a string 'file_name'"
            )
        caption = last_caption.get(image["id"])
        if caption is not None:
            file_to_caption[image["file_name"]] = caption
    return file_to_caption


class SyntheticCaptionSource(CaptionedImageSource):
    """`num_images` distinct drawn scenes named `synthetic_000000`, ... with exact captions."""

    kind = "synthetic"
    card_licence = {"license": "cc0-1.0"}
    licence_note = (
        "The images and captions are synthetic, drawn by the builder's own generator from a seed, and dedicated "
        "to the public domain ([CC0 1.0](https://creativecommons.org/publicdomain/zero/1.0/)). They are a stand-in "
        "for MS COCO: scores on them are not comparable with the paper's."
    )

    def __init__(self, seed: int = 0, num_images: int = SYNTHETIC_DEFAULT_SIZE) -> None:
        if num_images < 1:
            raise BuildError(f"a synthetic source needs at least 1 image, got {num_images}")
        self.seed = int(seed)
        self.num_images = int(num_images)
        self.spec = "synthetic" if num_images == SYNTHETIC_DEFAULT_SIZE else f"synthetic:{num_images}"
        self._scenes = generate_scenes(self.seed, self.num_images)
        self._names = [f"synthetic_{i:06d}" for i in range(self.num_images)]
        self._index = {name: i for i, name in enumerate(self._names)}

    @property
    def names(self) -> list[str]:
        return self._names

    def scene(self, name: str) -> Scene:
        try:
            return self._scenes[self._index[name]]
        except KeyError:
            raise BuildError(f"image {name} is not in the synthetic source ({self.num_images} images)") from None

    def caption(self, name: str) -> str:
        return self.scene(name).caption()

    def load_image(self, name: str) -> Image.Image:
        return self.scene(name).draw(TILE_SIZE)

    def load_tile(self, name: str, size: int = TILE_SIZE) -> Image.Image:
        # Drawn at the tile size directly: the scene is resolution-free, so no resize is needed.
        return self.scene(name).draw(size)

    def fingerprint(self) -> str:
        # The scenes are a pure function of the generator version, seed and count.
        text = f"{GENERATOR_VERSION}:{self.seed}:{self.num_images}"
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "seed": self.seed, "generator": GENERATOR_VERSION}


def open_source(spec: str, seed: int = 0, min_coverage: float = DEFAULT_MIN_COVERAGE) -> CaptionedImageSource:
    """`synthetic`, `synthetic:COUNT` or `coco=DIR` (which must hold at least `min_coverage` of the images its
    captions name)."""
    if spec == "synthetic" or spec.startswith("synthetic:"):
        count_text = spec.partition(":")[2] or str(SYNTHETIC_DEFAULT_SIZE)
        if not count_text.isdigit() or int(count_text) < 1:
            raise BuildError(f"bad source {spec!r}: expected synthetic:COUNT with a positive COUNT")
        return SyntheticCaptionSource(seed=seed, num_images=int(count_text))
    if spec.startswith("coco=") and is_hub_source(spec[len("coco=") :]):
        raise not_on_hub("coco", spec[len("coco=") :], COCO_DOWNLOAD, COCO_LAYOUT)
    if spec.startswith("coco="):
        return CocoCaptionSource(spec[len("coco=") :], min_coverage)
    if is_hub_source(spec):
        raise BuildError(
            f"--source {spec}: MMNeedle's builder stitches its images from COCO, which is not on the Hub; "
            "the authors' Hub release gives the paper's samples: --source coco=DIR --official-metadata "
            f"hf://Wang-ML-Lab/MMNeedle (COCO from {COCO_DOWNLOAD}; DIR holds {COCO_LAYOUT})"
        )
    raise BuildError(f"unknown source {spec!r}: expected 'synthetic', 'synthetic:COUNT' or 'coco=DIR'")
