import json
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from builders.core.errors import BuildError
from builders.core.synthetic_scenes import CELL_PHRASES, COLOURS
from builders.mmneedle.images import TILE_SIZE
from builders.mmneedle.sources import CocoCaptionSource, SyntheticCaptionSource, open_source
from tests.support.builder_fixtures import (
    COCO_IMAGES,
    coco_file_name,
    outside_jpeg,
    run_builders,
    write_coco,
    write_truncated_jpeg,
)


def test_coco_source_picks_last_caption_per_image(coco_dir: Path, coco_captions: dict[str, str]) -> None:
    source = CocoCaptionSource(coco_dir)
    assert source.names == sorted(coco_captions)
    assert len(source) == COCO_IMAGES
    for name, caption in coco_captions.items():
        assert source.caption(name) == caption  # raw: trailing space / newline kept
    assert source.caption(coco_file_name(3)).endswith("\n")


def test_coco_tile_is_plain_resize_to_256(coco_dir: Path) -> None:
    source = CocoCaptionSource(coco_dir)
    name = coco_file_name(5)  # the grayscale one
    tile = source.load_tile(name)
    assert tile.size == (TILE_SIZE, TILE_SIZE) and tile.mode == "RGB"
    with Image.open(coco_dir / "val2014" / name) as original:
        assert original.mode == "L"
        expected = original.resize((TILE_SIZE, TILE_SIZE), Image.Resampling.BICUBIC).convert("RGB")
    assert tile.tobytes() == expected.tobytes()


def test_coco_fingerprint_tracks_content(tmp_path: Path) -> None:
    write_coco(tmp_path / "a", count=6)
    write_coco(tmp_path / "b", count=6)
    first, second = CocoCaptionSource(tmp_path / "a"), CocoCaptionSource(tmp_path / "b")
    assert first.fingerprint() == second.fingerprint()
    (tmp_path / "b" / "val2014" / coco_file_name(0)).write_bytes(b"x" * 10)
    assert CocoCaptionSource(tmp_path / "b").fingerprint() != first.fingerprint()


def test_coco_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="COCO source folder not found"):
        CocoCaptionSource(tmp_path / "nope")
    root = tmp_path / "coco"
    write_coco(root, count=6)
    captions = root / "annotations" / "captions_val2014.json"

    captions.write_text("{not json")
    with pytest.raises(BuildError, match=r"malformed caption file .*captions_val2014.json: not valid JSON"):
        CocoCaptionSource(root)

    captions.write_text(json.dumps({"images": [], "annotations": [{"image_id": 1}]}))
    with pytest.raises(
        BuildError, match=r"annotations\[0\] should be an object with 'image_id' and a string 'caption'"
    ):
        CocoCaptionSource(root)

    captions.write_text(json.dumps({"annotations": []}))
    with pytest.raises(BuildError, match="expected an object with lists 'images' and 'annotations'"):
        CocoCaptionSource(root)

    # Two images lose their captions: both are named.
    doc = {
        "images": [{"id": i, "file_name": coco_file_name(i)} for i in range(6)],
        "annotations": [{"image_id": i, "caption": "c"} for i in range(4)],
    }
    captions.write_text(json.dumps(doc))
    with pytest.raises(
        BuildError, match=rf"2 image\(s\) in .* have no caption .*{coco_file_name(4)}, {coco_file_name(5)}"
    ):
        CocoCaptionSource(root)

    captions.unlink()
    with pytest.raises(BuildError, match="caption file not found: .*captions_val2014.json"):
        CocoCaptionSource(root)


def test_unreadable_image_is_named(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    write_coco(root, count=6)
    broken = root / "val2014" / coco_file_name(2)
    broken.write_bytes(b"not a jpeg")
    source = CocoCaptionSource(root)
    with pytest.raises(BuildError, match=f"unreadable image: .*{coco_file_name(2)}"):
        source.load_tile(coco_file_name(2))


def _build_coco(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return run_builders(
        "build", "mmneedle", "--source", f"coco={root}", "--configs", "m1_n2_k1", "--limit", "2", "--quiet",
        "--num-proc", "1", "--out", str(out),
    )  # fmt: skip


@pytest.mark.slow  # the builders command in a child process
def test_a_coco_file_linked_out_of_its_folder_stops_the_build_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    write_coco(root, count=6)
    linked = root / "val2014" / coco_file_name(3)
    linked.unlink()
    linked.symlink_to(outside_jpeg(tmp_path))
    result = _build_coco(root, tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"builders: error: {root / 'val2014'}: entry {coco_file_name(3)}: path '{coco_file_name(3)}' leads out of "
        f"{root / 'val2014'} through a symbolic link (to {tmp_path / 'outside.jpg'})"
    ]
    assert not (tmp_path / "out").exists()  # stopped before anything was written
    linked.unlink()
    write_coco(tmp_path / "other", count=6)
    captions = root / "annotations" / "captions_val2014.json"
    captions.unlink()
    captions.symlink_to(tmp_path / "other" / "annotations" / "captions_val2014.json")
    with pytest.raises(
        BuildError,
        match=r"captions_val2014\.json: path 'captions_val2014\.json' leads out of "
        r".*annotations through a symbolic link",
    ):
        CocoCaptionSource(root)
    # The folders themselves may be links: a COCO kept elsewhere.
    (tmp_path / "linked").mkdir()
    for folder in ("val2014", "annotations"):
        (tmp_path / "linked" / folder).symlink_to(tmp_path / "other" / folder)
    assert len(CocoCaptionSource(tmp_path / "linked")) == 6


@pytest.mark.slow  # the builders command in a child process
def test_a_truncated_coco_jpeg_stops_the_build_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    write_coco(root, count=6)
    for i in range(6):
        write_truncated_jpeg(root / "val2014" / coco_file_name(i))
    with pytest.raises(BuildError, match=rf"unreadable image: .*{coco_file_name(2)} \(image file is truncated"):
        CocoCaptionSource(root).load_tile(coco_file_name(2))
    result = _build_coco(root, tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert (
        line.startswith(f"builders: error: unreadable image: {root / 'val2014'}/COCO_val2014_") and "truncated" in line
    )
    assert not (tmp_path / "out").exists()


def test_synthetic_source_is_deterministic_and_distinct() -> None:
    a, b = SyntheticCaptionSource(seed=7, num_images=800), SyntheticCaptionSource(seed=7, num_images=800)
    assert a.names == b.names == sorted(a.names)
    captions = [a.caption(n) for n in a.names]
    assert captions == [b.caption(n) for n in b.names]
    assert len(set(captions)) == 800
    pixels = {a.load_tile(n).tobytes() for n in a.names[:300]}
    assert len(pixels) == 300
    assert SyntheticCaptionSource(seed=8, num_images=800).fingerprint() != a.fingerprint()
    bigger = SyntheticCaptionSource(seed=7, num_images=900)
    assert [bigger.caption(n) for n in a.names] == captions  # a larger source extends a smaller one


def test_synthetic_caption_describes_the_drawing() -> None:
    source = SyntheticCaptionSource(seed=0, num_images=200)
    for name in source.names:
        scene, caption = source.scene(name), source.caption(name)
        image = source.load_tile(name)
        assert caption.endswith(f"{scene.background} background.")
        occupied = set()
        cell = TILE_SIZE / 3
        for obj in scene.objects:
            assert f"{obj.size} {obj.colour} {obj.shape} {CELL_PHRASES[obj.cell]}" in caption
            row, col = divmod(obj.cell, 3)
            centre = (int((col + 0.5) * cell), int((row + 0.5) * cell))
            assert image.getpixel(centre) == COLOURS[obj.colour], (name, caption)
            occupied.add(obj.cell)
        for empty in set(range(9)) - occupied:
            row, col = divmod(empty, 3)
            assert image.getpixel((int((col + 0.5) * cell), int((row + 0.5) * cell))) == COLOURS[scene.background]


def test_open_source_specs(coco_dir: Path) -> None:
    assert open_source("synthetic:50").names[:2] == ["synthetic_000000", "synthetic_000001"]
    assert len(open_source("synthetic:50")) == 50
    assert open_source(f"coco={coco_dir}").kind == "coco"
    for bad in ("synthetic:0", "synthetic:x", "imagenet", "coco"):
        with pytest.raises(BuildError, match="source"):
            open_source(bad)


def test_coco_image_already_256_is_decoded_not_resized(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    write_coco(root, count=3)
    exact = Image.new("RGB", (256, 256), (10, 200, 30))
    exact.save(root / "val2014" / coco_file_name(1), quality=95)
    tile = CocoCaptionSource(root).load_tile(coco_file_name(1))
    assert tile.size == (256, 256)
    assert max(abs(a - b) for a, b in zip(tile.getpixel((128, 128)), (10, 200, 30), strict=True)) <= 3
