"""Every size bound on a release file is checked on the open file's size (its descriptor's `fstat`) before a byte of
it is read or hashed: a sparse file just over a bound (nothing written, its bytes zeros) ends in one line naming it
and its size, within a second or two, whichever reader meets it.

The bounds met only inside an archive (a member's declared size, a tar header's extensions, the members' count and
inflation) are the archive tests' (tests/builders/core/test_archive_bounds.py); a Hub blob's is checked before it is
hashed (tests/builders/core/test_hub_blob_pinning.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from builders.core import release_bounds as core
from builders.core.errors import BuildError
from builders.core.release_bounds import Bound, read_file
from builders.locovqa import bounds as locovqa
from builders.locovqa.images import file_image
from builders.locovqa.mmstar import MmstarSource
from builders.locovqa.mnist import read_idx, read_parquet
from builders.locovqa.okvqa import OkVqaSource
from builders.milebench import bounds as milebench
from builders.milebench.release import Release as MilebenchRelease
from builders.milebench.subsets import SUBSET_BY_NAME
from builders.mmlongbench import bounds as mmlongbench
from builders.mmlongbench.leaves import VLMEVALKIT_CONFIGS
from builders.mmlongbench.release import Release as MmlongbenchRelease
from builders.mmlongbench.release import read_lines
from builders.mmlongbench.vlmevalkit.layout import OfficialSets
from builders.mmlongbench.vlmevalkit.plan import VlmevalkitConfigs
from builders.mmlongbench.vlmevalkit.tsv import read_records
from builders.mmneedle import bounds as mmneedle
from builders.mmneedle.official import _load_json as mmneedle_metadata


def _sparse(path: Path, bound: Bound) -> Path:
    """A file one byte over `bound`, holding no written byte (`truncate` extends it with a hole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(bound.most + 1)
    return path


def _okvqa(root: Path) -> None:
    _sparse(root / "okvqa" / "OpenEnded_mscoco_val2014_questions.json", core.SOURCE_ANNOTATION)
    OkVqaSource(root / "okvqa", root / "coco")


def _milebench_annotation(root: Path) -> None:
    subset = next(iter(SUBSET_BY_NAME))
    _sparse(root / subset / f"{subset}.json", milebench.MILEBENCH_ANNOTATION)
    MilebenchRelease(root).read_annotations([(subset, f"{subset}.json")])


def _milebench_image(root: Path) -> None:
    subset = next(iter(SUBSET_BY_NAME))
    _sparse(root / subset / "images" / "0.jpg", milebench.MILEBENCH_IMAGE)
    MilebenchRelease(root).read_images({(subset, "images/0.jpg"): "record 0"}, lambda key, data: None)


def _mmlongbench_release(root: Path) -> MmlongbenchRelease:
    (root / "mmlb_data").mkdir(parents=True, exist_ok=True)
    (root / "mmlb_image").mkdir(parents=True, exist_ok=True)
    return MmlongbenchRelease(root, root)


def _mmlongbench_jsonl(root: Path) -> None:
    _sparse(root / "mmlb_data" / "vrag" / "infoseek_K8.jsonl", mmlongbench.MMLB_TEXT_FILE)
    path = _mmlongbench_release(root).text_path("vrag/infoseek_K8.jsonl")
    list(read_lines(path, "vrag/infoseek_K8.jsonl"))


def _mmlongbench_json(root: Path) -> None:
    _sparse(root / "mmlb_data" / "ICL" / "cars.json", mmlongbench.MMLB_JSON_FILE)
    read_file(_mmlongbench_release(root).text_path("ICL/cars.json"), mmlongbench.MMLB_JSON_FILE, "ICL/cars.json")


def _mmlongbench_image(root: Path) -> None:
    _sparse(root / "mmlb_image" / "pages" / "0.png", mmlongbench.MMLB_IMAGE)
    _mmlongbench_release(root).read_images({"pages/0.png": "row 0"}, lambda path, data: None)


def _vlmevalkit_tsv(root: Path) -> None:
    list(read_records(_sparse(root / "MMLongBench_32K.tsv", mmlongbench.TSV_FILE), "vlmevalkit/MMLongBench_32K.tsv"))


def _vlmevalkit_plan(root: Path) -> None:
    # The build hashes each TSV for its manifest before reading it: the size comes before the hash too.
    _sparse(root / "vlmevalkit" / "MMLongBench_32K.tsv", mmlongbench.TSV_FILE)
    cfgs = [cfg for cfg in VLMEVALKIT_CONFIGS.values() if cfg.length == "32k"][:1]
    VlmevalkitConfigs(OfficialSets(root), cfgs, root).plan()


# (bound, what a build does that meets it, the name the message gives the file)
READERS: dict[str, tuple[Bound, Callable[[Path], object], str]] = {
    "SOURCE_IMAGE (a LoCoVQA COCO image)": (
        core.SOURCE_IMAGE,
        lambda root: file_image("coco2014/a.jpg", _sparse(root / "a.jpg", core.SOURCE_IMAGE)).read(),
        "image coco2014/a.jpg: {root}/a.jpg",
    ),
    "SOURCE_ANNOTATION (OK-VQA's questions)": (
        core.SOURCE_ANNOTATION,
        _okvqa,
        "{root}/okvqa/OpenEnded_mscoco_val2014_questions.json",
    ),
    "MNIST_IDX": (
        locovqa.MNIST_IDX,
        lambda root: read_idx(_sparse(root / "train-labels-idx1-ubyte", locovqa.MNIST_IDX), 2049, 1),
        "{root}/train-labels-idx1-ubyte",
    ),
    "MNIST_PARQUET": (
        locovqa.MNIST_PARQUET,
        lambda root: read_parquet(_sparse(root / "train.parquet", locovqa.MNIST_PARQUET)),
        "{root}/train.parquet",
    ),
    "MMSTAR_FILE (the Hub's Parquet)": (
        locovqa.MMSTAR_FILE,
        lambda root: MmstarSource(_sparse(root / "mmstar.parquet", locovqa.MMSTAR_FILE)),
        "{root}/mmstar.parquet",
    ),
    "MMSTAR_FILE (VLMEvalKit's TSV)": (
        locovqa.MMSTAR_FILE,
        lambda root: MmstarSource(_sparse(root / "MMStar.tsv", locovqa.MMSTAR_FILE)),
        "{root}/MMStar.tsv",
    ),
    "MILEBENCH_ANNOTATION": (milebench.MILEBENCH_ANNOTATION, _milebench_annotation, "{root}/"),
    "MILEBENCH_IMAGE": (milebench.MILEBENCH_IMAGE, _milebench_image, "record 0: image {root}/"),
    "MMLB_TEXT_FILE": (mmlongbench.MMLB_TEXT_FILE, _mmlongbench_jsonl, "vrag/infoseek_K8.jsonl"),
    "MMLB_JSON_FILE": (mmlongbench.MMLB_JSON_FILE, _mmlongbench_json, "ICL/cars.json"),
    "MMLB_IMAGE": (mmlongbench.MMLB_IMAGE, _mmlongbench_image, "row 0: image {root}/mmlb_image/pages/0.png"),
    "TSV_FILE (read)": (mmlongbench.TSV_FILE, _vlmevalkit_tsv, "vlmevalkit/MMLongBench_32K.tsv"),
    "TSV_FILE (hashed for the manifest)": (mmlongbench.TSV_FILE, _vlmevalkit_plan, "vlmevalkit/MMLongBench_32K.tsv"),
    "MMNEEDLE_METADATA_FILE": (
        mmneedle.MMNEEDLE_METADATA_FILE,
        lambda root: mmneedle_metadata(_sparse(root / "8_8.json", mmneedle.MMNEEDLE_METADATA_FILE)),
        "{root}/8_8.json",
    ),
}


@pytest.mark.parametrize("name", list(READERS))
def test_a_sparse_file_just_over_its_bound_is_one_line_before_a_read(name: str, tmp_path: Path) -> None:
    bound, reader, where = READERS[name]
    start = time.perf_counter()
    with pytest.raises(BuildError) as caught:
        reader(tmp_path)
    seconds = time.perf_counter() - start
    message = str(caught.value)
    assert "\n" not in message and message.startswith(where.format(root=tmp_path)), message
    assert f": {bound.most + 1:,} bytes, over the {core.contract.size_text(bound.most)} that {bound.what}" in message
    assert seconds < 2, f"{seconds:.1f} s"
