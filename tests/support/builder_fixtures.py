"""Helpers for the builder tests: a tiny COCO-format folder made on the spot, a benchmark's fixture release and its
build as module fixtures, row readers, the `builders` command in a child process, and the broken or hostile release
files of issue 17 (a truncated JPEG, an archive member leading out, a file outside every release)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from PIL import Image

from builders.core import contract
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


def write_coco(root: Path, count: int = COCO_IMAGES) -> Path:
    """A COCO-2014-layout folder of `count` images at `root` (returned), each captioned so that only the official
    rule (the last caption listed) picks `expected_caption(i)`."""
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
    return root


def build_synth(out: Path, **options: object) -> Path:
    """The synthetic MMNeedle build of `SYNTH_CONFIGS` (3 samples of each, seed 0, 2 processes) into `out`;
    `options` add to or replace those of `build_mmneedle`."""
    from builders.mmneedle import build_mmneedle

    arguments: dict = {"configs": SYNTH_CONFIGS, "limit": 3, "seed": 0, "num_proc": 2, **options}
    return build_mmneedle(source="synthetic", out_dir=out, **arguments)


def release_fixture(write_fixture: Callable[[Path], Path], name: str) -> Callable[..., Path]:
    """A module fixture `release`: a benchmark's fixture release, `write_fixture(folder)`, written once for the module
    into `release/` of a fresh temporary folder named `name`. Assign it: `release = release_fixture(write, "mmlb")`."""

    @pytest.fixture(scope="module")
    def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return write_fixture(tmp_path_factory.mktemp(name) / "release")

    return release


def built_fixture(build: Callable[..., Path], name: str, **options: object) -> Callable[..., Path]:
    """A module fixture `built`: the module's `release` built once, `build(source=release, out_dir=folder, **options)`,
    into a fresh temporary folder named `name`. Assign it: `built = built_fixture(build_mmlongbench, "mmlb_out")`."""

    @pytest.fixture(scope="module")
    def built(tmp_path_factory: pytest.TempPathFactory, release: Path) -> Path:
        return build(source=str(release), out_dir=tmp_path_factory.mktemp(name), **options)

    return built


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_split(built: Path, config: str) -> datasets.Dataset:
    """One config's test rows, loaded from the Parquet files its manifest lists (cheaper than the user's
    `load_dataset(folder, config)`, whose card parse costs a second per call)."""
    files = contract.split_files(built, config, "test")
    assert files, config
    return datasets.load_dataset("parquet", data_files={"test": files}, split="test")


def run_builders(*argv: str, **options: object) -> subprocess.CompletedProcess[str]:
    """`builders ARGV` in a child process of this interpreter (`python -m builders.cli`), its output captured as
    text, within 300 s; `options` go to `subprocess.run` (`env`, `cwd`, another `timeout`)."""
    run_options: dict = {"capture_output": True, "text": True, "timeout": 300, **options}
    return subprocess.run([sys.executable, "-m", "builders.cli", *argv], **run_options)


def assert_refused_in_one_line(result: subprocess.CompletedProcess[str], line: str, out: Path) -> None:
    """A `builders build` child process (`run_builders`) that refused its release: exit 2, `line` its whole stderr,
    and `out` never made: no dataset, no work folder, no lock."""
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]
    assert not out.exists()


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


def check_archive_edges(
    release: Path, name: str, member: str, benchmark: str, config: str, build: Callable[..., object]
) -> None:
    """What a hostile or broken archive `name` of a release folder of archives does to a build of `config` (issue 17):
    a member `member` leading out of the archive stops `build(source=release, out_dir=out, configs=[config])` with a
    `BuildError` naming the archive and the member; the archive cut in half stops the CLI (`builders build BENCHMARK`)
    with one line naming it, exit 2. Nothing is left in `out` (`out/` beside the release folder)."""
    archive, out = release / name, release.parent / "out"
    whole = archive.read_bytes()
    add_tar_member(archive, member, b"\xff\xd8 bytes")
    with pytest.raises(
        BuildError,
        match=rf"{re.escape(archive.name)}: member {re.escape(repr(member))}: path .* "
        "leads out of the release",
    ):
        build(source=str(release), out_dir=out, configs=[config])
    archive.write_bytes(whole)
    cut_in_half(archive)
    result = run_builders(
        "build", benchmark, "--source", str(release), "--configs", config, "--quiet", "--out", str(out)
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"builders: error: {archive}: not a readable tar archive, damaged or cut short")
    assert not out.exists() or list(out.iterdir()) == []  # a folder the build made is removed again
