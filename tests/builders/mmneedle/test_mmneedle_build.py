"""Properties of built MMNeedle datasets, checked on the Parquet bytes the builder wrote."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from PIL import ImageChops, ImageStat

from builders.mmneedle import CONFIGS, FEATURES, build_mmneedle
from builders.mmneedle.sources import CocoCaptionSource, SyntheticCaptionSource
from tests.support.builder_fixtures import COCO_CONFIGS, SYNTH_CONFIGS, decode, read_rows

CONTRACT_COLUMNS = [
    "id", "sample_id", "M", "N", "K", "is_positive", "in_paper_subset", "images", "image_sha256", "image_sizes",
    "num_images", "prompt", "prompt_paper", "captions", "answer", "needle_index", "needle_row", "needle_col",
    "needle_files", "all_locations", "haystack_ids", "haystack_subimages", "text_tokens", "image_tokens",
]  # fmt: skip


def _mean_abs_diff(a, b) -> float:  # noqa: ANN001
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


def _cell(stitched, row: int, col: int):  # noqa: ANN001, ANN202
    return stitched.crop(((col - 1) * 256, (row - 1) * 256, col * 256, row * 256))


@pytest.mark.parametrize("config", COCO_CONFIGS)
def test_labels_point_at_the_needle_pixels(coco_build: Path, coco_dir: Path, config: str) -> None:
    """Decode the stitched image, crop cell (r, c) of image m: it is the needle's source image
    resized to 256 (up to JPEG loss), and closer to it than any other cell of that image."""
    source = CocoCaptionSource(coco_dir)
    checked = 0
    for row in read_rows(coco_build, config):
        if not row["is_positive"]:
            continue
        N = row["N"]
        for needle, m, r, c in zip(
            row["needle_files"], row["needle_index"], row["needle_row"], row["needle_col"], strict=True
        ):
            stitched = decode(row["images"][m - 1])
            assert stitched.size == (256 * N, 256 * N)
            expected = source.load_tile(needle)
            diffs = {
                (rr, cc): _mean_abs_diff(_cell(stitched, rr, cc), expected)
                for rr in range(1, N + 1)
                for cc in range(1, N + 1)
            }
            assert diffs[(r, c)] < 4.0, (row["id"], diffs[(r, c)])
            assert min(diffs, key=diffs.get) == (r, c)
            checked += 1
    assert checked >= 4


def test_synthetic_labels_point_at_the_needle_pixels(synth_build: Path) -> None:
    source = SyntheticCaptionSource(seed=0)
    for config in SYNTH_CONFIGS:
        for row in read_rows(synth_build, config):
            for needle, m, r, c in zip(
                row["needle_files"], row["needle_index"], row["needle_row"], row["needle_col"], strict=True
            ):
                if m < 0:
                    continue
                cell = _cell(decode(row["images"][m - 1]), r, c)
                assert _mean_abs_diff(cell, source.load_tile(needle)) < 3.0, row["id"]


@pytest.mark.parametrize("build", ["synth_build", "coco_build"])
def test_haystack_structure_and_needles(build: str, request: pytest.FixtureRequest) -> None:
    folder: Path = request.getfixturevalue(build)
    manifest = json.loads((folder / "build_manifest.json").read_text())
    for config in manifest["request"]["configs"]:
        cfg = CONFIGS[config]
        rows = read_rows(folder, config)
        assert [r["sample_id"] for r in rows] == cfg.sample_ids(limit=manifest["request"]["limit"])
        for row in rows:
            M, N, K = row["M"], row["N"], row["K"]
            assert (M, N, K) == (cfg.M, cfg.N, cfg.K) and row["num_images"] == M
            assert row["id"] == f"{config}-{row['sample_id']:05d}"
            assert row["is_positive"] == (row["sample_id"] < 5000)
            assert row["in_paper_subset"]
            grids = row["haystack_subimages"]
            assert len(row["images"]) == len(grids) == len(row["haystack_ids"]) == M
            assert len(set(row["haystack_ids"])) == M  # no repeated stitched image in a haystack
            for grid in grids:
                assert len(grid) == N * N and len(set(grid)) == N * N  # no repeated sub-image
            inside = {name for grid in grids for name in grid}
            assert len(row["captions"]) == len(row["needle_files"]) == K
            if row["is_positive"]:
                slots = list(zip(row["needle_index"], row["needle_row"], row["needle_col"], strict=True))
                if K <= M * N * N:
                    assert len(set(slots)) == K  # K distinct slots (as the official sampler; images may repeat)
                for (m, r, c), needle, locations in zip(slots, row["needle_files"], row["all_locations"], strict=True):
                    assert 1 <= m <= M and 1 <= r <= N and 1 <= c <= N
                    assert grids[m - 1][(r - 1) * N + (c - 1)] == needle
                    brute = [
                        f"{mm + 1}, {k // N + 1}, {k % N + 1}"
                        for mm, g in enumerate(grids)
                        for k, x in enumerate(g)
                        if x == needle
                    ]
                    assert locations == brute and f"{m}, {r}, {c}" in locations
                assert row["answer"] == "; ".join(f"{m}, {r}, {c}" for m, r, c in slots)
            else:
                assert not set(row["needle_files"]) & inside  # negatives are absent from the haystack
                assert len(set(row["needle_files"])) == K
                assert row["needle_index"] == row["needle_row"] == row["needle_col"] == [-1] * K
                assert row["all_locations"] == [[]] * K
                assert row["answer"] == "; ".join(["-1"] * K)


def test_five_needles_in_four_slots_repeat_only_when_exhausted(synth_build: Path) -> None:
    for row in read_rows(synth_build, "m1_n2_k5"):
        if row["is_positive"]:
            slots = list(zip(row["needle_row"], row["needle_col"], strict=True))
            assert len(set(slots)) == 4  # every slot once, then one repeat (as the official sampler)


def test_needles_take_distinct_slots_not_distinct_images_as_the_official_sampler() -> None:
    """Official rule (sample_multiple_needles.py): K distinct slots; the image in two slots may be the same
    when it repeats across the stitched images of a haystack (the official K=5 output has such rows)."""
    from builders.mmneedle.configs import CONFIGS
    from builders.mmneedle.plan import RegeneratePlanner

    source = SyntheticCaptionSource(seed=0, num_images=700)  # 640 sub-images per haystack: images repeat
    planner, cfg = RegeneratePlanner(source.names, 0), CONFIGS["m10_n8_k5"]
    plans = [planner.plan(cfg, i) for i in range(200)]
    repeated = [p.sample_id for p in plans if len(set(p.needle_files)) < cfg.K]
    assert repeated == [21, 153, 178, 199]
    for plan in plans:
        assert len(set(plan.locations)) == cfg.K  # never the same slot twice


def test_images_prompts_and_token_columns(synth_build: Path) -> None:
    source = SyntheticCaptionSource(seed=0)
    for row in read_rows(synth_build, "m10_n1_k5"):
        assert row["prompt"].startswith("<image>" * 10 + "Given 10 images")
        assert row["prompt"].count("<image>") == 10
        assert row["prompt_paper"].startswith(
            "<image>" * 10 + "Given 10 images indexed from 1 to 10, each divided into 1 \u00d7 1 sub-image,"
        )
        assert row["captions"] == [source.caption(n) for n in row["needle_files"]]
        for i, caption in enumerate(row["captions"], start=1):
            assert f"\nCaption_{i}: {caption}" in row["prompt"]
        assert row["image_sizes"] == [[256, 256]] * 10
        assert row["image_tokens"] == [81] * 10
        from builders.core.tokens import ApproxTokenCounter

        assert row["text_tokens"] == ApproxTokenCounter().count(row["prompt"].replace("<image>", ""))
        import hashlib

        assert row["image_sha256"] == [hashlib.sha256(im["bytes"]).hexdigest() for im in row["images"]]
        assert [im["path"] for im in row["images"]] == [f"{h}.jpg" for h in row["haystack_ids"]]


def test_schema_matches_the_contract(synth_build: Path) -> None:
    shard = next((synth_build / "m1_n2_k1").glob("test-*.parquet"))
    schema = pq.read_schema(shard)
    assert schema.names == CONTRACT_COLUMNS
    features = datasets.Features.from_arrow_schema(schema)
    assert features == FEATURES
    assert features["images"] == datasets.List(datasets.Image())
    assert features["needle_index"] == datasets.List(datasets.Value("int32"))
    assert features["image_sizes"] == datasets.List(datasets.List(datasets.Value("int32")))


def test_load_dataset_offline(synth_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert sorted(datasets.get_dataset_config_names(str(synth_build))) == sorted(SYNTH_CONFIGS)
    ds = datasets.load_dataset(str(synth_build), "m10_n2_k1", split="test", cache_dir=str(tmp_path))
    assert ds.num_rows == 6 and ds.features == FEATURES
    row = ds[0]
    assert len(row["images"]) == 10 and row["images"][0].size == (512, 512) and row["images"][0].mode == "RGB"
    assert row["id"] == "m10_n2_k1-00000" and isinstance(row["needle_index"][0], int)


def test_rows_do_not_depend_on_limit_or_workers(synth_build: Path, tmp_path: Path) -> None:
    """Row i is the same whether 3 or 5 rows are built, with 1 or 2 workers."""
    other = build_mmneedle(source="synthetic", out_dir=tmp_path, configs=["m1_n4_k2"], limit=5, num_proc=1)
    small, big = read_rows(synth_build, "m1_n4_k2"), read_rows(other, "m1_n4_k2")
    by_id = {r["sample_id"]: r for r in big}
    assert len(big) == 10
    for row in small:
        assert by_id[row["sample_id"]] == row


def test_paper_subset_and_full_ids() -> None:
    k1, k5 = CONFIGS["m10_n8_k1"], CONFIGS["m1_n2_k5"]
    assert k1.sample_ids() == list(range(1000)) + list(range(5000, 6000))
    assert k5.sample_ids() == list(range(100)) + list(range(5000, 5100))
    assert k5.sample_ids(full=True) == list(range(10000))
    assert k1.sample_ids(full=True, limit=2) == [0, 1, 5000, 5001]
    # A run of 201 samples (101 positives, 100 negatives): each side keeps its own count.
    assert k1.sample_ids(full=True, negative_start=101, end=201) == list(range(201))
    assert k5.sample_ids(negative_start=101, end=201) == list(range(100)) + list(range(101, 201))
    assert k1.sample_ids(limit=100, negative_start=101, end=201) == list(range(100)) + list(range(101, 201))
    assert k1.in_paper_subset(999) and not k1.in_paper_subset(1000) and k1.in_paper_subset(5999)
    assert k5.in_paper_subset(5099) and not k5.in_paper_subset(5100) and not k5.in_paper_subset(100)
    assert len(CONFIGS) == 21 and k1.min_source_images() == 641


def test_manifest_and_card(synth_build: Path) -> None:
    manifest = json.loads((synth_build / "build_manifest.json").read_text())
    assert manifest["request"]["source"]["kind"] == "synthetic" and manifest["request"]["seed"] == 0
    assert manifest["request"]["text_tokenizer"] == "approx-v1"
    for config, info in manifest["configs"].items():
        files = [synth_build / f["path"] for f in info["files"]]
        assert info["num_bytes"] == sum(f.stat().st_size for f in files)
        assert info["rows"] == 6 and info["positives"] == info["negatives"] == 3
        assert all(f.name.endswith("-of-00001.parquet") and f.parent.name == config for f in files)
    on_disk = sorted(p.relative_to(synth_build).as_posix() for p in synth_build.rglob("*") if p.is_file())
    listed = sorted(f["path"] for info in manifest["configs"].values() for f in info["files"])
    assert on_disk == sorted(["README.md", "build_manifest.json", *listed])  # no spool or partial files
    card = (synth_build / "README.md").read_text()
    assert card.startswith("---\n") and "configs:" in card and manifest["content_hash"] in card
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    configs = MetadataConfigs.from_dataset_card_data(DatasetCard.load(synth_build / "README.md").data)
    assert sorted(configs) == sorted(SYNTH_CONFIGS)
    assert configs["m1_n2_k1"]["data_files"] == [{"split": "test", "path": "m1_n2_k1/test-*"}]


def test_text_tokens_from_an_hf_tokenizer(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "Given": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    out = build_mmneedle(
        source="synthetic:300", out_dir=tmp_path / "out", configs=["m1_n2_k1"], limit=1, num_proc=1,
        text_tokenizer=f"hf:{tmp_path / 'tokenizer.json'}",
    )  # fmt: skip
    for row in read_rows(out, "m1_n2_k1"):
        text = row["prompt"].replace("<image>", "")
        assert row["text_tokens"] == len(tokenizer.encode(text, add_special_tokens=False).ids)
    assert json.loads((out / "build_manifest.json").read_text())["request"]["text_tokenizer"].startswith(
        "hf:tokenizer.json@"
    )


def test_strip_captions_option(coco_dir: Path, tmp_path: Path) -> None:
    out = build_mmneedle(
        source=f"coco={coco_dir}",
        out_dir=tmp_path,
        configs=["m1_n2_k1"],
        limit=4,
        num_proc=1,
        strip_captions=True,
    )
    for row in read_rows(out, "m1_n2_k1"):
        assert all(c == c.strip() for c in row["captions"])
        assert row["prompt"].endswith(row["captions"][0])


def test_largest_config_with_a_tiny_limit(tmp_path: Path) -> None:
    out = build_mmneedle(source="synthetic:700", out_dir=tmp_path, configs=["m10_n8_k1"], limit=1, num_proc=2)
    rows = read_rows(out, "m10_n8_k1")
    assert [r["sample_id"] for r in rows] == [0, 5000]
    assert rows[0]["image_sizes"] == [[2048, 2048]] * 10 and rows[0]["image_tokens"] == [5329] * 10
    negative = rows[1]
    inside = {n for grid in negative["haystack_subimages"] for n in grid}
    assert len(inside) > 64 and not inside & set(negative["needle_files"])
