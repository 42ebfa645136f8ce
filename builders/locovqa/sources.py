"""Which sources a build reads, from `--source` values, and the image behind every key a plan names.

`--source synthetic` writes the offline stand-in (`fixture.py`) and reads it like real files; otherwise each
source is named: `okvqa=DIR` (OK-VQA's JSON files), `coco=DIR` (COCO: `val2014/` for OK-VQA's images and
`annotations/instances_val2014.json` for the `coco` entity lister, `val2017/` for out-of-distribution
distractors), `mmstar=FILE` (Parquet or TSV), `mnist=DIR` (IDX files).

MMStar and MNIST are on the Hub: `mmstar=hf://Lin-Chen/MMStar` and `mnist=hf://ylecun/mnist` (each `@REVISION`
optional) download the one file the build reads into the Hub cache (`resolve_hub_sources`). OK-VQA and COCO are
not (their terms keep them on their own sites): `okvqa=hf://...` or `coco=hf://...` says where to get them and the
folder layout expected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builders.core.errors import BuildError
from builders.core.hub_source import (
    HubFile,
    HubRelease,
    PinnedFile,
    fetch_release,
    is_hub_source,
    not_on_hub,
    parse_hub_source,
)
from builders.core.images import EncodedImage
from builders.core.release_bounds import open_release_file
from builders.locovqa.coco import CocoImagePool
from builders.locovqa.compose import fit_cell, render_digit
from builders.locovqa.images import SourceImage, decode
from builders.locovqa.mmstar import MmstarSource
from builders.locovqa.mnist import HUB_PARQUET, MnistSource
from builders.locovqa.okvqa import OkVqaSource
from builders.locovqa.plan import Digit

NAMES = ("okvqa", "coco", "mmstar", "mnist")
NEEDS = {"okvqa": ("okvqa", "coco"), "mmstar": ("mmstar",), "mnist": ("mnist", "coco"), "needle": ("mnist", "coco")}


def parse_source_args(values: Sequence[str] | None) -> dict[str, str]:
    """`["okvqa=DIR", "coco=DIR"]` -> {name: path}; `["synthetic"]` (the default) -> {"synthetic": ""}."""
    if not values or list(values) == ["synthetic"]:
        return {"synthetic": ""}
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or name not in NAMES or not path:
            raise BuildError(
                f"bad --source {value!r}: expected 'synthetic' or NAME=PATH with NAME one of {', '.join(NAMES)}"
            )
        if name in out:
            raise BuildError(f"--source {name}= is given twice")
        out[name] = path
    return out


# The sources on the Hub: the release, the revision read by default, and the one file a build reads of it.
HUB_SOURCES: dict[str, tuple[HubRelease, HubFile]] = {
    "mmstar": (
        HubRelease(
            "Lin-Chen/MMStar",
            "92ee365d91e33a0a5c0b93b5f6e1ef63e420c511",
            "the commit that added MMStar.tsv beside the mmstar.parquet of the first upload",
            # The Hub's LFS details of the files at that commit: mmstar.parquet is the first upload's (a9beb09; its
            # page gives the size only as 41.8 MB), MMStar.tsv that commit's own pointer.
            {
                "mmstar.parquet": PinnedFile("29afd74b0134cfab083a8909b5358577ab18fd41c1e612031577cfb3635531c2", None),
                "MMStar.tsv": PinnedFile("05d1d6113f30dc25c90c903e51f7f010b914fac231b6118484e94ea3bfed8dc1", 37941110),
            },
        ),
        HubFile(("mmstar.parquet",), "MMStar's questions and images"),
    ),
    "mnist": (
        HubRelease(
            "ylecun/mnist", "77f3279092a1c1579b2250db8eafed0ad422088c", "the commit that converted MNIST to Parquet"
        ),
        HubFile((HUB_PARQUET,), "MNIST's training set"),
    ),
}
# Where to get the sources that are not on the Hub, and the layout `NAME=DIR` expects.
NOT_ON_HUB = {
    "okvqa": (
        "https://okvqa.allenai.org/download.html (the val2014 questions and annotations)",
        "OpenEnded_mscoco_val2014_questions.json and mscoco_val2014_annotations.json",
    ),
    "coco": (
        "https://cocodataset.org/#download (2014 Val images, 2017 Val images, 2014 Train/Val annotations)",
        "val2014/COCO_val2014_*.jpg, annotations/instances_val2014.json and, for the MNIST tasks' "
        "distractors, val2017/*.jpg",
    ),
}


def resolve_hub_sources(
    paths: Mapping[str, str], view: Path, progress: bool = True
) -> tuple[dict[str, str], dict[str, Any]]:
    """Each `NAME=hf://ORG/NAME[@REVISION]` replaced by the file it downloads to (the Hub cache), verified and linked
    into `view/NAME/` (in the work folder); returns the paths and, per name, the repo, revision, commit and files
    the manifest records."""
    out, records = dict(paths), {}
    for name, value in paths.items():
        if not is_hub_source(value):
            continue
        if name in NOT_ON_HUB:
            raise not_on_hub(name, value, *NOT_ON_HUB[name])
        official, file = HUB_SOURCES[name]
        fetched = fetch_release(parse_hub_source(value), official, [file], progress=progress, view=view / name)
        out[name] = str(fetched.folder / fetched.files[0])  # the file itself: a link to its verified blob
        records[name] = fetched.record()
    return out, records


def require(paths: Mapping[str, str], tasks: Sequence[str]) -> None:
    """Every source the requested tasks need must be named: a missing one is an error naming the option."""
    for task in tasks:
        missing = [name for name in NEEDS[task] if name not in paths]
        if missing:
            raise BuildError(
                f"the {task} configs need "
                + " and ".join(f"--source {m}=..." for m in missing)
                + " (or --source synthetic for the offline stand-in)"
            )


def _file_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open_release_file(path) as handle:
            while block := handle.read(8 << 20):
                digest.update(block)
    return "sha256:" + digest.hexdigest()


@dataclass
class Sources:
    """The opened sources of one build."""

    okvqa: OkVqaSource | None = None
    mmstar: MmstarSource | None = None
    mnist: MnistSource | None = None
    ood: CocoImagePool | None = None
    coco_dir: Path | None = None
    digits: dict[str, Digit] = field(default_factory=dict)  # filled by the planners
    _sizes: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def open(cls, paths: Mapping[str, str], tasks: Sequence[str], ood_split: str) -> Sources:
        """Every source named (not only those `tasks` need): the build request records them all, so that it does
        not depend on which configs a build holds and a later build can add configs to it."""
        require(paths, tasks)
        out = cls(coco_dir=Path(paths["coco"]) if "coco" in paths else None)
        if "okvqa" in paths and "coco" in paths:
            out.okvqa = OkVqaSource(paths["okvqa"], paths["coco"])
        if "mmstar" in paths:
            out.mmstar = MmstarSource(paths["mmstar"])
        if "mnist" in paths and "coco" in paths:
            out.mnist = MnistSource(paths["mnist"])
            out.ood = CocoImagePool(paths["coco"], ood_split)
        return out

    def tasks(self) -> list[str]:
        """The in-distribution tasks these sources can build (each needs an entity lister)."""
        return [name for name, source in (("okvqa", self.okvqa), ("mmstar", self.mmstar)) if source is not None]

    def describe(self) -> dict[str, Any]:
        """What the manifest records of each source read: sizes and content fingerprints."""
        out: dict[str, Any] = {}
        if self.okvqa is not None:
            out["okvqa"] = {
                "questions": len(self.okvqa.items),
                "images": len(self.okvqa.pool),
                "fingerprint": _file_digest(self.okvqa.fingerprint_parts()),
            }
        if self.mmstar is not None:
            out["mmstar"] = {
                "questions": len(self.mmstar.items),
                "file": self.mmstar.path.name,
                "fingerprint": _file_digest(self.mmstar.fingerprint_parts()),
            }
        if self.mnist is not None:
            out["mnist"] = {
                "images": len(self.mnist.labels),
                "fingerprint": _file_digest(self.mnist.fingerprint_parts()),
            }
        if self.ood is not None:
            listing = "\n".join(self.ood.fingerprint_parts()).encode()
            out["coco_ood"] = {
                "split": self.ood.split,
                "images": len(self.ood.pool),
                "fingerprint": "sha256:" + hashlib.sha256(listing).hexdigest(),
            }
        return out

    @property
    def coco_instances(self) -> Path | None:
        path = self.coco_dir / "annotations" / "instances_val2014.json" if self.coco_dir is not None else None
        return path if path is not None and path.is_file() else None

    # ------------------------------------------------------------------------------- images by key

    def image(self, key: str) -> SourceImage:
        prefix = key.split("/", 1)[0]
        if prefix == "coco2014" and self.okvqa is not None:
            return self.okvqa.image(key)
        if prefix == "mmstar" and self.mmstar is not None:
            return self.mmstar.image(key)
        if prefix.startswith("coco-") and self.ood is not None:
            return self.ood.image(key)
        raise BuildError(f"no source holds image {key}")

    def size(self, key: str) -> tuple[int, int]:
        """(width, height) of the image of `key` (read once: digits are sized against the images beside them)."""
        if key not in self._sizes:
            self._sizes[key] = self.image(key).size()
        return self._sizes[key]

    def digit_image(self, key: str):
        """A digit on its canvas, as its plan sized it (`plan.digit_frame`)."""
        digit = self.digits[key]
        assert self.mnist is not None
        return render_digit(
            self.mnist.pixels(digit.index), digit.colour, digit.stroke_height, digit.x, digit.y, digit.canvas
        )

    def cell(self, key: str, size: int):
        """The image of `key` fitted into a `size` cell (a digit's canvas is the cell already)."""
        if key.startswith("digit/"):
            return fit_cell(self.digit_image(key), size)
        return fit_cell(decode(self.image(key), draft_size=size), size)

    def original(self, key: str) -> EncodedImage:
        """What an interleaved context shows for `key`: the source's bytes as released, or a digit's canvas
        encoded as PNG (sharp strokes, lossless, the same bytes every time)."""
        if key.startswith("digit/"):
            return png(self.digit_image(key))
        return self.image(key).encoded()


def png(image) -> EncodedImage:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False, compress_level=6)
    data = buffer.getvalue()
    return EncodedImage(data, hashlib.sha256(data).hexdigest(), image.width, image.height)
