"""LoCoVQA's builder on sources in their public formats (OK-VQA JSON + COCO folders and instance annotations,
MMStar Parquet and TSV, MNIST IDX), written by the offline stand-in's writer and by hand: every config loads,
the content image is in every context exactly once at its recorded position (cmp: its grid cell, pixel-wise),
accepted distractors pass the collision rule, an item keeps its distractors as the length grows, and bad input
is an error or a recorded failure, never a quietly shorter build."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from builders.cli import main as builders_main
from builders.core.contract import load_images, read_manifest
from builders.core.errors import BuildError
from builders.locovqa import build_locovqa
from builders.locovqa.compose import fit_cell
from builders.locovqa.entities import entity_set
from builders.locovqa.fixture import write_fixture
from builders.locovqa.mnist import read_idx
from tests.support.builder_fixtures import outside_jpeg, write_truncated_jpeg

CELL = 48
CONFIGS = [
    "okvqa_cmp_4",
    "okvqa_int_9",
    "okvqa_cmp_7",
    "mmstar_cmp_9",
    "mmstar_int_4",
    "mnist_cmp_9",
    "mnist_int_4",
    "needle_cmp_4",
    "needle_int_9",
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_fixture(tmp_path_factory.mktemp("locovqa_sources"))


def _source_args(src: dict[str, Path]) -> list[str]:
    return [f"okvqa={src['okvqa']}", f"coco={src['coco']}", f"mmstar={src['mmstar']}", f"mnist={src['mnist']}"]


@pytest.fixture(scope="module")
def built(sources: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("locovqa_build")
    return build_locovqa(
        _source_args(sources),
        out,
        CONFIGS,
        limit=3,
        cell_size=CELL,
        num_proc=2,
        entity_lister=[f"mmstar=cache:{sources['mmstar_entities']}"],
    )


def rows(folder: Path, config: str) -> datasets.Dataset:
    return datasets.load_dataset(str(folder), config, split="test")


def coco_entities(sources: dict[str, Path]) -> dict[str, frozenset[str]]:
    """Image key -> its categories, read straight from the instance annotations (top 5 by area, as the lister)."""
    doc = json.loads((sources["coco"] / "annotations" / "instances_val2014.json").read_text())
    names = {c["id"]: c["name"] for c in doc["categories"]}
    shown: dict[int, set[str]] = {}
    for ann in doc["annotations"]:
        shown.setdefault(ann["image_id"], set()).add(names[ann["category_id"]])
    return {f"coco2014/{im['file_name']}": entity_set(sorted(shown.get(im["id"], ()))) for im in doc["images"]}


def okvqa_image_key(question_id: str) -> str:
    return f"coco2014/COCO_val2014_{int(question_id) // 10:012d}.jpg"  # the stand-in's question id = image id * 10 + 5


def test_every_config_loads_with_its_rows(built: Path) -> None:
    counts = {name: len(rows(built, name)) for name in CONFIGS}
    # 3 questions; MNIST: 3 contexts per digit count (1..min(8, n)); needle: 3 digits x n positions.
    assert counts == {
        "okvqa_cmp_4": 3,
        "okvqa_int_9": 3,
        "okvqa_cmp_7": 3,
        "mmstar_cmp_9": 3,
        "mmstar_int_4": 3,
        "mnist_cmp_9": 24,
        "mnist_int_4": 12,
        "needle_cmp_4": 12,
        "needle_int_9": 27,
    }
    manifest = read_manifest(built)
    assert all(manifest["configs"][name]["failed_rows"] == 0 for name in CONFIGS)
    assert manifest["request"]["entity_listers"]["okvqa"]["name"] == "coco"
    assert manifest["request"]["entity_listers"]["mmstar"]["name"] == "cache:entities.jsonl"
    row = rows(built, "okvqa_int_9")[0]
    assert row["num_images"] == 9 and row["prompt"].startswith("<image>" * 9 + "\n") and row["entity_lister"] == "coco"
    assert row["prompt"].endswith("your answer should be <answer>apple</answer>.")


def test_interleaved_content_is_once_at_its_position_with_the_sources_bytes(built: Path, sources) -> None:
    for row in rows(built, "okvqa_int_9"):
        content = okvqa_image_key(row["item_id"])
        (position,) = row["content_positions"]
        assert row["context_ids"].count(content) == 1 and row["context_ids"][position] == content
        source_bytes = (sources["coco"] / "val2014" / content.split("/")[1]).read_bytes()
        assert row["image_sha256"][position] == hashlib.sha256(source_bytes).hexdigest()
        assert len(set(row["context_ids"])) == 9


def test_composed_content_sits_in_its_grid_cell(built: Path, sources) -> None:
    for config, side in (("okvqa_cmp_4", 2), ("okvqa_cmp_7", 3)):
        for row in rows(built, config):
            (grid,) = load_images(built, row)
            assert grid.size == (side * CELL, side * CELL) and row["grid_side"] == side
            content = okvqa_image_key(row["item_id"])
            assert row["context_ids"].count(content) == 1
            expected = np.asarray(
                fit_cell(Image.open(sources["coco"] / "val2014" / content.split("/")[1]), CELL), dtype=float
            )
            pixels = np.asarray(grid, dtype=float)
            errors = []
            for cell in range(side * side):
                r, c = divmod(cell, side)
                errors.append(np.abs(pixels[r * CELL : (r + 1) * CELL, c * CELL : (c + 1) * CELL] - expected).mean())
            (position,) = row["content_positions"]
            assert int(np.argmin(errors)) == position and errors[position] < 8, (config, errors)
            for cell in range(row["context_length"], side * side):  # past n: black
                r, c = divmod(cell, side)
                assert pixels[r * CELL : (r + 1) * CELL, c * CELL : (c + 1) * CELL].mean() < 4  # JPEG bleeds a little


def test_accepted_distractors_share_no_entity_with_the_content(built: Path, sources) -> None:
    listed = coco_entities(sources)
    for config in ("okvqa_cmp_4", "okvqa_int_9"):
        for row in rows(built, config):
            content = okvqa_image_key(row["item_id"])
            assert listed[content]
            for key in row["context_ids"]:
                if key != content:
                    assert not listed[key] & listed[content], (row["id"], key)
    cache = {
        json.loads(line)["sha256"]: entity_set(json.loads(line)["entities"])
        for line in sources["mmstar_entities"].read_text().splitlines()
    }
    for row in rows(built, "mmstar_int_4"):
        shown = [cache[sha] for sha in row["image_sha256"]]
        (position,) = row["content_positions"]
        assert all(not s & shown[position] for i, s in enumerate(shown) if i != position)


def test_an_item_keeps_its_distractors_as_the_length_grows(built: Path) -> None:
    short = {r["item_id"]: r for r in rows(built, "okvqa_cmp_4")}
    for long in rows(built, "okvqa_int_9"):
        s = short[long["item_id"]]
        drop = lambda r: [k for i, k in enumerate(r["context_ids"]) if i != r["content_positions"][0]]  # noqa: E731
        assert drop(long)[:3] == drop(s)


def test_mnist_digits_are_the_idx_digits_in_context_order(built: Path, sources) -> None:
    labels = read_idx(sources["mnist"] / "train-labels-idx1-ubyte.gz", 2049, 1)
    for config in ("mnist_cmp_9", "mnist_int_4"):
        seen = set()
        for row in rows(built, config):
            digit_keys = [k for k in row["context_ids"] if k.startswith("digit/")]
            assert [row["context_ids"].index(k) for k in digit_keys] == row["content_positions"]
            assert [int(labels[int(k.split("/")[1])]) for k in digit_keys] == row["digits"]
            assert row["answer"] == ", ".join(map(str, row["digits"])) and row["num_digits"] == len(digit_keys)
            assert all(k.startswith("coco-val2017/") for k in row["context_ids"] if not k.startswith("digit/"))
            seen.add(row["num_digits"])
        assert seen == set(range(1, min(8, rows(built, config)[0]["context_length"]) + 1))


def test_needle_visits_every_position_with_one_haystack_per_digit(built: Path) -> None:
    ds = rows(built, "needle_int_9")
    by_digit: dict[int, list] = {}
    for row in ds:
        by_digit.setdefault(row["digits"][0], []).append(row)
    for digit_rows in by_digit.values():
        assert sorted(r["content_positions"][0] for r in digit_rows) == list(range(9))
        hay = {tuple(k for k in r["context_ids"] if not k.startswith("digit/")) for r in digit_rows}
        assert len(hay) == 1
        assert [r["needle_depth"] for r in digit_rows] == pytest.approx([p / 8 for p in range(9)])


# COCO-sized distractors (the sizes the issue measured with): a digit is sized against the tallest of them.
COCO_SIZES = [(640, 480), (480, 640), (640, 427)]


@pytest.fixture(scope="module")
def coco_sized(sources: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """MNIST from the stand-in; `coco/val2017` of twelve plain photos at COCO's common sizes."""
    val2017 = tmp_path_factory.mktemp("coco_sized") / "coco" / "val2017"
    val2017.mkdir(parents=True)
    for i in range(12):
        size = COCO_SIZES[i % len(COCO_SIZES)]
        Image.new("RGB", size, (60 + 15 * i, 120, 200 - 10 * i)).save(val2017 / f"{i:012d}.jpg", quality=90)
    return [f"mnist={sources['mnist']}", f"coco={val2017.parent}"]


def _ink_height(pixels: np.ndarray, background: int, threshold: int) -> int:
    """Rows of `pixels` (H x W x 3) holding a pixel at least `threshold` away from the `background` grey level."""
    far = np.abs(pixels.astype(int) - background).max(axis=2) >= threshold
    found = np.flatnonzero(far.any(axis=1))
    return int(found[-1] - found[0] + 1) if found.size else 0


@pytest.mark.slow
def test_digits_are_sized_against_the_tallest_other_context_image(coco_sized: list[str], tmp_path: Path) -> None:
    """Paper §3.2.1: digits are resized "to between 1/6 and 1/2 of the maximum height of other context images".
    int: the strokes (not the 28 x 28 box) against the tallest other image as released; cmp: against the tallest
    other image as fitted into its cell (measured in the grid). Without another image: the cell."""
    cell = 192
    folder = build_locovqa(
        coco_sized,
        tmp_path,
        ["mnist_int_9", "mnist_cmp_9", "needle_int_1", "needle_cmp_1"],
        limit=2,
        cell_size=cell,
        num_proc=1,
    )
    ratios = []
    for row in rows(folder, "mnist_int_9"):
        images = load_images(folder, row)
        others = [h for i, (_, h) in enumerate(row["image_sizes"]) if i not in row["content_positions"]]
        tallest = max(others) if others else cell
        for position in row["content_positions"]:
            digit = np.asarray(images[position])
            assert digit.shape[:2] == (tallest, tallest)  # the canvas is as tall as the tallest other image
            ratios.append(_ink_height(digit, 255, 1) / tallest)
            assert 1 / 6 - 2 / tallest <= ratios[-1] <= 1 / 2 + 2 / tallest, (row["id"], ratios[-1])
    assert len(ratios) == 2 * sum(range(1, 9)) and min(ratios) < 0.25 and max(ratios) > 0.42
    for row in rows(folder, "mnist_cmp_9"):
        pixels = np.asarray(load_images(folder, row)[0])
        cells = {
            p: pixels[(p // 3) * cell : (p // 3 + 1) * cell, (p % 3) * cell : (p % 3 + 1) * cell] for p in range(9)
        }
        others = [_ink_height(cells[p], 0, 40) for p in range(9) if p not in row["content_positions"]]
        tallest = max(others) if others else cell
        assert not others or min(abs(tallest - h) for h in (cell, cell * 427 / 640, cell * 480 / 640)) <= 1
        for position in row["content_positions"]:
            ratio = _ink_height(cells[position], 255, 60) / tallest
            assert 1 / 6 - 3 / tallest <= ratio <= 1 / 2 + 3 / tallest, (row["id"], ratio)
    for config in ("needle_int_1", "needle_cmp_1"):
        for row in rows(folder, config):
            (digit,) = load_images(folder, row)
            assert digit.size == (cell, cell)
            assert 1 / 6 - 3 / cell <= _ink_height(np.asarray(digit), 255, 60) / cell <= 1 / 2 + 3 / cell


def test_an_image_without_listed_entities_is_never_a_distractor(tmp_path: Path) -> None:
    """COCO's instance annotations list nothing for some images: their entities are unknown, so they could never
    be found to collide (an empty set meets nothing). They are left out as distractors, fail their own item, and
    the manifest counts them. Here only the cat and the dog image are listed."""
    args = _tiny_okvqa(tmp_path, 10, [["cat"], ["dog"]] + [[]] * 8)
    folder = build_locovqa(args, tmp_path / "out", ["okvqa_int_2"])
    cat, dog = (f"coco2014/COCO_val2014_{i:012d}.jpg" for i in (1, 2))
    contexts = {r["item_id"]: r["context_ids"] for r in rows(folder, "okvqa_int_2")}
    assert set(contexts) == {"100", "101"} and set(contexts["100"]) == set(contexts["101"]) == {cat, dog}
    manifest = read_manifest(folder)
    reasons = {f["item_id"]: f["reason"] for f in manifest["configs"]["okvqa_int_2"]["failures"]}
    assert sorted(reasons) == [str(i) for i in range(102, 110)]
    assert all("lists no entity for it (its entities are unknown)" in r for r in reasons.values())
    planning = manifest["stats"]["planning"]["okvqa"]
    assert planning["images_unlisted"] == 8 and planning["items_content_unlisted"] == 8
    assert planning["distractors_skipped_unlisted"] >= 1  # 8 of the 9 candidates each item walks are unlisted


def test_the_same_request_gives_byte_identical_parquet(sources, tmp_path: Path) -> None:
    def build(out: Path) -> dict[str, str]:
        folder = build_locovqa(
            _source_args(sources), out, ["okvqa_int_4", "mnist_cmp_4"], limit=2, cell_size=32, num_proc=2
        )
        return {
            str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.parquet"))
        }

    assert build(tmp_path / "a") == build(tmp_path / "b")


def test_a_config_of_any_length_builds_from_the_command_line(tmp_path: Path, sources, capsys) -> None:
    code = builders_main(
        [
            "build",
            "locovqa",
            "--out",
            str(tmp_path),
            "--configs",
            "needle_cmp_2,okvqa_int_3",
            "--limit",
            "1",
            "--cell-size",
            "16",
            "--quiet",
            "--source",
            f"okvqa={sources['okvqa']}",
            "--source",
            f"coco={sources['coco']}",
            f"mnist={sources['mnist']}",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert len(rows(tmp_path / "locovqa", "needle_cmp_2")) == 2
    # The recorded command rebuilds the same thing: the harness's hint for a missing config repeats it.
    command = read_manifest(tmp_path / "locovqa")["build_command"]
    assert command[:3] == ["builders", "build", "locovqa"] and "--source" in command
    assert builders_main([*command[1:], "--out", str(tmp_path), "--configs", "needle_int_2", "--quiet"]) == 0
    assert read_manifest(tmp_path / "locovqa")["request"]["configs"] == ["okvqa_int_3", "needle_cmp_2", "needle_int_2"]
    assert builders_main(["build", "locovqa", "--out", str(tmp_path), "--configs", "okvqa_cmp_0"]) == 2
    assert "unknown config(s) okvqa_cmp_0" in capsys.readouterr().err


def test_mmstar_tsv_reads_like_the_parquet(sources, tmp_path: Path) -> None:
    table = pq.read_table(sources["mmstar"]).to_pylist()[:40]
    lines = ["index\tquestion\tanswer\tA\tB\tC\tD\tbench\timage"]
    for row in table:
        question, _, options = row["question"].partition("\nOptions: ")
        texts = [part.split(": ", 1)[1] for part in options.split(", ")]
        lines.append(
            "\t".join(
                [
                    str(row["index"]),
                    question,
                    row["answer"],
                    *texts,
                    row["meta_info"]["source"],
                    base64.b64encode(row["image"]["bytes"]).decode(),
                ]
            )
        )
    tsv = tmp_path / "MMStar.tsv"
    tsv.write_text("\n".join(lines) + "\n")
    folder = build_locovqa([f"mmstar={tsv}"], tmp_path / "out", ["mmstar_int_4"], limit=3, entity_lister=["none"])
    ds = rows(folder, "mmstar_int_4")
    assert len(ds) == 3 and all(len(r["choices"]) == 4 and r["answer"] in "ABCD" for r in ds)
    assert {r["subset"] for r in ds} <= {"seedbench", "mmbench", "mmmu", "mathvista", "scienceqa", "ai2d"}
    assert all(r["n_resamples"] == 0 and r["entity_lister"] == "none" for r in ds)


# ------------------------------------------------------------------------------------------ bad input


def _tiny_okvqa(root: Path, questions: int, shapes: list[list[str]], missing: int | None = None) -> list[str]:
    """An OK-VQA folder and a COCO folder of `len(shapes)` images whose instances name `shapes[i]`."""
    (root / "coco" / "val2014").mkdir(parents=True)
    (root / "coco" / "annotations").mkdir()
    (root / "okvqa").mkdir()
    images, anns, cats = [], [], sorted({s for group in shapes for s in group})
    for i, group in enumerate(shapes):
        name = f"COCO_val2014_{i + 1:012d}.jpg"
        images.append({"id": i + 1, "file_name": name})
        anns += [{"image_id": i + 1, "category_id": cats.index(s) + 1, "area": 10.0} for s in group]
        if i != missing:
            buffer = io.BytesIO()
            Image.new("RGB", (40, 30), (i * 20 % 255, 90, 200)).save(buffer, format="JPEG")
            (root / "coco" / "val2014" / name).write_bytes(buffer.getvalue())
    (root / "coco" / "annotations" / "instances_val2014.json").write_text(
        json.dumps(
            {
                "images": images,
                "annotations": anns,
                "categories": [{"id": k + 1, "name": c} for k, c in enumerate(cats)],
            }
        )
    )
    qs = [{"image_id": i + 1, "question": f"q{i}?", "question_id": 100 + i} for i in range(questions)]
    (root / "okvqa" / "OpenEnded_mscoco_val2014_questions.json").write_text(json.dumps({"questions": qs}))
    (root / "okvqa" / "mscoco_val2014_annotations.json").write_text(
        json.dumps(
            {
                "annotations": [
                    {"question_id": 100 + i, "image_id": i + 1, "answers": [{"answer": "x"}] * 10}
                    for i in range(questions)
                ]
            }
        )
    )
    return [f"okvqa={root / 'okvqa'}", f"coco={root / 'coco'}"]


def test_a_missing_image_names_its_question(tmp_path: Path) -> None:
    args = _tiny_okvqa(tmp_path, 4, [["cat"], ["dog"], ["car"], ["bus"]], missing=2)
    with pytest.raises(
        BuildError, match=r"1 OK-VQA image\(s\) missing .*question 102 \(COCO_val2014_000000000003.jpg\)"
    ):
        build_locovqa(args, tmp_path / "out", ["okvqa_int_2"])


def test_a_pool_too_small_after_the_filter_is_recorded_per_item(tmp_path: Path, capsys) -> None:
    # Question 0's image shows a cat; of the other five images only two show no cat: length 4 needs three.
    args = _tiny_okvqa(tmp_path, 6, [["cat"], ["cat", "dog"], ["car"], ["cat"], ["bus"], ["cat", "tree"]])
    folder = build_locovqa(args, tmp_path / "out", ["okvqa_int_3", "okvqa_int_4"])
    manifest = read_manifest(folder)
    failed = manifest["configs"]["okvqa_int_4"]
    assert (
        failed["failed_rows"] >= 1
        and {"item_id": "100", "reason": "the pool ran out: 2 collision-free distractor(s) in a pool of 5"}
        in failed["failures"]
    )
    assert failed["rows"] + failed["failed_rows"] == 6
    assert "100" in {r["item_id"] for r in rows(folder, "okvqa_int_3")}  # a shorter context still fits
    assert "limited" in manifest["caveats"]
    assert "row(s) could not be built" in capsys.readouterr().err


def test_a_resample_cap_and_a_lister_without_entries_fail_items_with_their_reason(tmp_path: Path) -> None:
    args = _tiny_okvqa(tmp_path, 5, [["cat"], ["cat"], ["cat"], ["dog"], ["bus"]])
    folder = build_locovqa(args, tmp_path / "out", ["okvqa_int_2"], max_resamples=0)
    reasons = {f["item_id"]: f["reason"] for f in read_manifest(folder)["configs"]["okvqa_int_2"]["failures"]}
    assert any("resamples in a row all collided" in r for r in reasons.values())
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(
        BuildError,
        match=r"config okvqa_int_2: no row could be built .*the content image was not "
        r"listed: no entry for sha256",
    ):
        build_locovqa(args, tmp_path / "out2", ["okvqa_int_2"], entity_lister=[f"cache:{empty}"])


def _link_out(path: Path, outside: Path) -> None:
    path.unlink()
    path.symlink_to(outside)


def test_a_source_file_linked_out_of_its_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    args = _tiny_okvqa(tmp_path / "a", 4, [["cat"], ["dog"], ["car"], ["bus"]])
    outside = outside_jpeg(tmp_path)
    _link_out(tmp_path / "a/coco/val2014/COCO_val2014_000000000002.jpg", outside)
    with pytest.raises(
        BuildError,
        match=r"val2014: image coco2014/COCO_val2014_000000000002\.jpg: path "
        r"'COCO_val2014_000000000002\.jpg' leads out of .*val2014 through a symbolic "
        r"link \(to .*outside\.jpg\)",
    ):
        build_locovqa(args, tmp_path / "out", ["okvqa_int_2"])
    sources = write_fixture(tmp_path / "b")
    pool = sources["coco"] / "val2017"
    _link_out(pool / sorted(p.name for p in pool.iterdir())[3], outside)
    with pytest.raises(
        BuildError,
        match=r"val2017: entry \d+\.jpg: path '\d+\.jpg' leads out of .*val2017 through a "
        r"symbolic link",
    ):
        build_locovqa([f"mnist={sources['mnist']}", f"coco={sources['coco']}"], tmp_path / "out", ["needle_int_2"])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("config", ["okvqa_int_2", "okvqa_cmp_2"])
def test_a_truncated_jpeg_is_an_error_naming_it_in_both_modes(tmp_path: Path, config: str) -> None:
    args = _tiny_okvqa(tmp_path, 4, [["cat"], ["dog"], ["car"], ["bus"]])
    for name in sorted((tmp_path / "coco/val2014").iterdir()):
        write_truncated_jpeg(name)  # every image, so the row's context surely shows one
    with pytest.raises(
        BuildError,
        match=r"image coco2014/COCO_val2014_\d+\.jpg \(.*val2014/COCO_val2014_\d+\.jpg\) "
        r"(is damaged \(cut short|does not decode: image file is truncated)",
    ):
        build_locovqa(args, tmp_path / "out", [config])


def test_a_memory_budget_below_one_megabyte_is_a_usage_error(tmp_path: Path, capsys) -> None:
    for value in ("-1", "0"):
        assert builders_main(["build", "locovqa", "--out", str(tmp_path), "--memory-budget-mb", value]) == 2
        assert f"error: --memory-budget-mb must be at least 1, got {value}" in capsys.readouterr().err
    with pytest.raises(BuildError, match="--memory-budget-mb must be at least 1, got -1"):
        build_locovqa(None, tmp_path, ["needle_cmp_1"], memory_budget_mb=-1)
    assert list(tmp_path.iterdir()) == []


def test_a_tsv_or_entity_cache_that_is_not_utf8_is_an_error_naming_it(tmp_path: Path) -> None:
    tsv = tmp_path / "MMStar.tsv"
    tsv.write_bytes("index\tquestion\tanswer\timage\n1\tQuelle caf\u00e9?\tA\tAAAA\n".encode("latin-1"))
    with pytest.raises(BuildError, match=rf"^{tsv}: not UTF-8 text \(invalid continuation byte\)"):
        build_locovqa([f"mmstar={tsv}"], tmp_path / "out", ["mmstar_int_1"], entity_lister=["none"])
    cache = tmp_path / "entities.jsonl"
    cache.write_bytes('{"sha256": "ab", "entities": ["caf\u00e9"]}\n'.encode("latin-1"))
    with pytest.raises(BuildError, match=rf"^{cache}: not UTF-8 text \(invalid continuation byte at byte 34\)"):
        build_locovqa(None, tmp_path / "out", ["okvqa_int_1"], entity_lister=[f"cache:{cache}"])


def test_missing_sources_and_listers_are_named(tmp_path: Path, sources) -> None:
    with pytest.raises(BuildError, match=r"the mnist configs need --source mnist=\.\.\. and --source coco=\.\.\."):
        build_locovqa([f"okvqa={sources['okvqa']}"], tmp_path, ["mnist_cmp_4"])
    with pytest.raises(BuildError, match="MMStar's images have no offline entity lists"):
        build_locovqa([f"mmstar={sources['mmstar']}"], tmp_path, ["mmstar_cmp_4"])
    bad = tmp_path / "mnist"
    bad.mkdir()
    (bad / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x01" + b"\x00" * 12)
    (bad / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x00")
    with pytest.raises(BuildError, match=r"train-images-idx3-ubyte: IDX magic number 2049, expected 2051"):
        build_locovqa([f"mnist={bad}", f"coco={sources['coco']}"], tmp_path, ["needle_cmp_1"])


def test_strict_pairwise_keeps_distractors_apart_and_the_subset_pool_stays_in_its_benchmark(
    sources, tmp_path: Path
) -> None:
    # Five shapes in all: three images pairwise apart are rare, so some items fail (recorded) and some do not.
    folder = build_locovqa(
        _source_args(sources),
        tmp_path,
        ["okvqa_int_3", "mmstar_int_4"],
        limit=6,
        strict_pairwise=True,
        max_resamples=500,
        mmstar_pool="subset",
        entity_lister=[f"mmstar=cache:{sources['mmstar_entities']}"],
    )
    listed = coco_entities(sources)
    built_rows = rows(folder, "okvqa_int_3")
    assert len(built_rows) + read_manifest(folder)["configs"]["okvqa_int_3"]["failed_rows"] == 6
    for row in built_rows:
        shown = [listed[k] for k in row["context_ids"]]
        assert all(not shown[i] & shown[j] for i in range(3) for j in range(i + 1, 3)), row["id"]
    subset_of = {f"mmstar/{r['index']}": r["meta_info"]["source"] for r in pq.read_table(sources["mmstar"]).to_pylist()}
    for row in rows(folder, "mmstar_int_4"):
        assert len({subset_of[k] for k in row["context_ids"]}) == 1


def test_entity_answers_parse_and_fold() -> None:
    from builders.locovqa.entities import normalise, parse_entities

    assert parse_entities("Cake, Candles, Cupcake, Sandwiches, Dessert Tray") == [
        "Cake",
        "Candles",
        "Cupcake",
        "Sandwiches",
        "Dessert Tray",
    ]
    assert parse_entities(
        "Here are the entities:\n1. **Oranges**: a pile\n2) Leaves\n- Branches\n* Water Droplets"
    ) == ["Oranges", "Leaves", "Branches", "Water Droplets"]
    assert len(parse_entities("a; b; c; d; e; f; g")) == 5  # at most 5, as asked
    assert entity_set(["Oranges", "the orange ", "Boxes", "Traffic Lights", "Glass", "Berries"]) == {
        "orange",
        "box",
        "traffic light",
        "glass",
        "berry",
    }
    assert normalise("Bus") == "bus" and normalise("Winnie-the-Pooh") == "winnie-the-pooh"
