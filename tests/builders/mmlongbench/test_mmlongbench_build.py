"""The MMLongBench builder on release-format fixtures: every config loads, each row shows exactly the images
its release line names, token figures fit the length, archives equal folders, builds are deterministic, the
official sample is the one kept, ICL rows draw their shots independently with the official distribution, the
ablation sets read the release as the official ablation loaders do, and bad input fails naming the file, the
line and what was expected."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import datasets
import numpy as np
import pytest

from builders.core import contract
from builders.core.errors import BuildError
from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.fixture import write_fixture
from builders.mmlongbench.leaves import ABLATION_CONFIGS, ALL_CONFIGS, CONFIGS, LEAF_BY_NAME, LENGTHS
from builders.mmlongbench.plan import plan_config
from tests.support.builder_fixtures import (
    assert_refused_in_one_line,
    built_fixture,
    check_archive_edges,
    load_split,
    outside_jpeg,
    release_fixture,
    run_builders,
    sha256_hex,
    write_truncated_jpeg,
)

# Which release fields name a row's images, in prompt order, per official loader (data.py @26197d2).
IMAGE_FIELDS = {
    "vrag": ("image",),
    "vh": ("ctxs",),
    "mmniah_text": ("image_list",),
    "mmniah_image_count": ("image_list", "needle_image_list"),
    "mmniah_image_mc": ("image_list", "choices_image"),
    "govreport": ("image_list",),
    "multilexsum": ("image_list",),
    "docqa": ("page_list",),
    "text_rag": (),
    "text_docqa": (),
}


release = release_fixture(write_fixture, "mmlb")
built = built_fixture(build_mmlongbench, "mmlb_out")


def release_lines(release: Path, file: str) -> list[dict]:
    return [json.loads(line) for line in (release / "mmlb_data" / file).read_text().splitlines() if line.strip()]


def expected_images(release: Path, config: str) -> dict[str, list[str]]:
    """Row id -> the sha256 of each image its release line names, read straight from the release."""
    cfg = ALL_CONFIGS[config]
    seen: dict[str, int] = defaultdict(int)
    out = {}
    for line in release_lines(release, cfg.file):
        paths: list[str] = []
        for key in IMAGE_FIELDS[cfg.leaf.loader]:
            value = line[key]
            paths += [value] if isinstance(value, str) else value
        source_id = str(line["id"])
        row_id = f"{source_id}#{seen[source_id]}" if cfg.leaf.variants > 1 else source_id
        seen[source_id] += 1
        out[row_id] = [sha256_hex((release / "mmlb_image" / p).read_bytes()) for p in paths]
    return out


@pytest.mark.slow
def test_every_config_loads_and_each_row_shows_its_release_images(built: Path, release: Path) -> None:
    # A default build of the fixture: the 95 configs and every ablation config.
    assert sorted(p.name for p in built.iterdir() if p.is_dir()) == sorted([*ALL_CONFIGS, contract.IMAGE_TABLE_CONFIG])
    for config, cfg in ALL_CONFIGS.items():
        if cfg.leaf.loader == "vrag_occlusion":
            continue  # one row per id: test_ablation_sets_read_the_release_as_the_official_ablation_loaders
        # The user's way for the benchmark's configs; the manifest's files for the ablations (a card parse each).
        rows = (
            datasets.load_dataset(str(built), config, split="test") if config in CONFIGS else load_split(built, config)
        )
        assert len(rows) > 0, config
        assert set(rows["length"]) == {cfg.tokens} and set(rows["dataset"]) == {cfg.leaf.dataset}
        if cfg.leaf.loader == "icl":
            continue  # the exemplars are drawn: test_icl_rows_show_exemplars_then_the_test_image
        expected = expected_images(release, config)
        assert sorted(rows["id"]) == sorted(expected), config  # the fixture has < 100 ids: all are kept
        for row in rows:
            assert row[contract.IMAGE_SHA256] == expected[row["id"]], (config, row["id"])
            assert row["prompt"].count(contract.IMAGE_PLACEHOLDER) == row[contract.NUM_IMAGES]
    row = datasets.load_dataset(str(built), "docvqa_slidevqa_16k", split="test")[0]
    images = contract.load_images(str(built), row)
    assert [list(im.size) for im in images] == row[contract.IMAGE_SIZES] and len(images) == row[contract.NUM_IMAGES]


@pytest.mark.slow
def test_icl_rows_show_exemplars_then_the_test_image(built: Path, release: Path) -> None:
    for length in LENGTHS:
        config = f"icl_food101_{length}"
        data = json.loads((release / "mmlb_data" / CONFIGS[config].file).read_text())
        (domain,) = data.values()
        tests = {
            sha256_hex((release / "mmlb_image" / t["image"]).read_bytes()): t["answer"] for t in domain["test_example"]
        }
        exemplars = {
            sha256_hex((release / "mmlb_image" / shot["image"]).read_bytes())
            for candidate in domain["exemplar_list"]
            for round_ in candidate
            for shot in round_
        }
        rows = load_split(built, config)
        assert len(rows) == len(domain["test_example"])
        for row in rows:
            *shots, test = row[contract.IMAGE_SHA256]
            assert json.loads(row["answer"]) == tests[test]
            assert set(shots) <= exemplars and len(shots) == sum(len(r) for r in domain["exemplar_list"][0])


@pytest.mark.slow
def test_icl_rows_repeat_shot_sequences_no_more_than_independent_draws_would(built: Path, release: Path) -> None:
    """Identical shot sequences within a config only as often as chance makes them. (Replaying the official
    8 forked workers from one state, as before, gave every row of a domain here the same sequence.)"""
    observed, expected = 0, 0.0
    for config, cfg in CONFIGS.items():
        if cfg.leaf.loader != "icl":
            continue
        data = json.loads((release / "mmlb_data" / cfg.file).read_text())
        by_domain: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for row in load_split(built, config):
            by_domain[row["source_id"].split("/")[0]].append(tuple(row[contract.IMAGE_SHA256][:-1]))
        for domain, sequences in by_domain.items():
            sets = data[domain]["exemplar_list"]  # distinct sets, each round a permutation of distinct shots
            possible = len(sets) * math.prod(math.factorial(len(r)) for r in sets[0])
            expected += math.comb(len(sequences), 2) / possible
            observed += sum(a == b for a, b in combinations(sequences, 2))
    assert observed <= expected + 3 * math.sqrt(expected) + 1, (observed, expected)


def write_icl_file(path: Path, tests: int, classes: int = 5, rounds: int = 2, sets: int = 3) -> Path:
    """An ICL release file in the official layout: one domain, `sets` exemplar sets of `rounds` rounds, each
    round one shot per class (image names say set, round and class)."""

    def shot(s: int, r: int, label: int) -> dict:
        return {"image": f"icl/x/set{s}_round{r}_class{label}.jpg", "id": label}

    data = {
        "all": {
            "exemplar_list": [[[shot(s, r, c) for c in range(classes)] for r in range(rounds)] for s in range(sets)],
            "test_example": [{"image": f"icl/x/test{t}.jpg", "answer": t % classes} for t in range(tests)],
        }
    }
    path.write_text(json.dumps(data))
    return path


def test_icl_draws_follow_the_official_distribution_row_by_row(tmp_path: Path) -> None:
    cfg = CONFIGS["icl_food101_8k"]
    file = write_icl_file(tmp_path / "icl.json", 600)
    rows = list(plan_config(cfg, file, full=True))
    labels = [re.findall(r"label: (\d+)", row.prompt) for row in rows]
    assert all(sorted(seq[:5]) == sorted(seq[5:]) == list("01234") for seq in labels)  # one shot per class a round
    # Each label equally likely at each of the 10 positions: chi-square over 40 degrees of freedom, p = 0.001.
    chi2 = sum((Counter(seq[pos] for seq in labels)[str(c)] - 120) ** 2 / 120 for pos in range(10) for c in range(5))
    assert chi2 < 73.4, chi2
    # Each exemplar set equally likely (2 degrees of freedom, p = 0.001).
    chosen = Counter(row.images[0].split("_")[0] for row in rows)
    assert len(chosen) == 3 and sum((n - 200) ** 2 / 200 for n in chosen.values()) < 13.8, chosen
    # 3 x 120 x 120 possible sequences: about 4 pairs of the 600 rows coincide by chance.
    assert len({tuple(row.images[:-1]) for row in rows}) >= 600 - 15
    # The official sample (seed 42: the first 100 of the shuffled test examples) shows each row drawn as in the
    # full file: a row's draw is its own, whatever else is drawn, and the build is deterministic.
    sampled = list(plan_config(cfg, file, full=False))
    order = list(range(600))
    random.Random(42).shuffle(order)
    assert [row.source_id for row in sampled] == [f"all/{k}" for k in order[:100]]
    by_id = {row.source_id: row.images for row in rows}
    assert all(row.images == by_id[row.source_id] for row in sampled)
    assert [row.images for row in plan_config(cfg, file, full=True)] == [row.images for row in rows]


@pytest.mark.slow
def test_token_figures_fit_each_rows_length(built: Path) -> None:
    manifest = json.loads((built / contract.MANIFEST_NAME).read_text())
    for config, cfg in ALL_CONFIGS.items():
        assert manifest["configs"][config]["over_length_rows"] == 0
        rows = load_split(built, config).select_columns(
            [contract.TEXT_TOKENS, contract.IMAGE_TOKENS, contract.IMAGE_SIZES]
        )
        for row in rows:
            assert 0 < row[contract.TEXT_TOKENS] + sum(row[contract.IMAGE_TOKENS]) <= cfg.tokens
            assert row[contract.IMAGE_TOKENS] == [contract.image_tokens(w, h) for w, h in row[contract.IMAGE_SIZES]]


@pytest.mark.slow
def test_golds_prefixes_and_generation_lengths_are_the_official_ones(built: Path) -> None:
    expected = {
        "vrag": ("Answer:", 128),
        "niah": ("Answer:", 128),
        "icl": ("label:", 128),
        "summ": ("Summary:", 384),
        "docvqa": ("Answer:", 128),
    }
    for config in (
        "vrag_infoseek_8k",
        "niah_mmniah_count_image_32k",
        "icl_inat2021_8k",
        "summ_govreport_8k",
        "docvqa_longdocurl_64k",
        "niah_mmniah_ret_image_8k",
    ):
        row = load_split(built, config)[0]
        assert (row["answer_prefix"], row["max_new_tokens"]) == expected[row["category"]]
        gold = json.loads(row["answer"])
        if config.startswith("vrag"):
            assert gold == ["Paris", "City of Light"]
        if "count_image" in config:
            assert isinstance(gold, list) and all(isinstance(c, int) for c in gold)
        if "ret_image" in config:
            assert isinstance(gold, int) and row["prompt"].endswith("\nD. " + contract.IMAGE_PLACEHOLDER)
        if config.startswith("summ"):
            assert gold.startswith("Why GAO Did This Study:\n") and row["claims"]
        if config.startswith("docvqa"):
            assert row["answer_format"] in ("Integer", "Float", "String", "None", "List") and row["answer_pages"]
    depth_rows = load_split(built, "niah_vh_single_8k")
    assert sorted(set(depth_rows["depth"])) == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert depth_rows["eval_index"] == list(range(len(depth_rows)))


@pytest.mark.slow
def test_ablation_sets_read_the_release_as_the_official_ablation_loaders(built: Path, release: Path) -> None:
    for length in LENGTHS:
        # triviaqa: the ViQuAE rows (same sample, same depths) asking the original question, no image.
        viquae_file = CONFIGS[f"vrag_viquae_{length}"].file
        trivia = load_split(built, f"ablation_triviaqa_{length}")
        assert trivia["id"] == load_split(built, f"vrag_viquae_{length}")["id"]
        for row, line in zip(trivia, release_lines(release, viquae_file), strict=True):  # < 100 ids: all kept
            assert row["num_images"] == 0 and contract.IMAGE_PLACEHOLDER not in row["prompt"]
            assert "question about a named entity." in row["prompt"]
            assert row["prompt"].endswith("\n\nQuestion: " + line["original_question"])
            assert json.loads(row["answer"]) == line["answer"] and row["depth"] is not None
        # occ_vrag: the first row of each id, its gold passages gone, the image kept; no needle left to place.
        for dataset in ("infoseek", "viquae"):
            file = CONFIGS[f"vrag_{dataset}_{length}"].file
            first = {line["id"]: line for line in reversed(release_lines(release, file))}
            occluded = load_split(built, f"ablation_occ_vrag_{dataset}_{length}")
            assert occluded["id"] == [
                f"{i}#0" for i in dict.fromkeys(line["id"] for line in release_lines(release, file))
            ]
            for row in occluded:
                line = first[row["source_id"]]
                gold = {c["doc_id"] for c in line["positive_ctxs"]}
                kept = [f"Document (Title: {c['title']}): {c['text']}" for c in line["ctxs"] if c["doc_id"] not in gold]
                assert len(kept) < len(line["ctxs"]) and "\n\n".join(kept) + "\n\nQuestion: <image>" in row["prompt"]
                assert row[contract.IMAGE_SHA256] == [sha256_hex((release / "mmlb_image" / line["image"]).read_bytes())]
                assert (row["needle"], row["needle_position"], row["depth"]) == ("", -1, None)
        # text_doc: MMLongBench-Doc's sample in its order, each page's OCR text where its image was.
        text_doc = load_split(built, f"ablation_text_doc_{length}")
        assert text_doc["source_id"] == load_split(built, f"docvqa_mmlongbench_doc_{length}")["source_id"]
        lines = {
            line["id"]: line for line in release_lines(release, ABLATION_CONFIGS[f"ablation_text_doc_{length}"].file)
        }
        for row in text_doc:
            line = lines[row["source_id"]]
            pages = [
                f"Document {line['doc_name'][:15]} (page {path.split('page')[-1].split('.')[0]}): \n{text}"
                for path, text in zip(line["page_list"], line["page_text_list"], strict=True)
            ]
            assert row["prompt"].startswith("You are given a document, and a question.") and row["num_images"] == 0
            assert "\n\n".join(pages) + f"\n\nQuestion: Based on Document {line['doc_name'][:15]}, " in row["prompt"]
            assert (json.loads(row["answer"]), row["answer_format"]) == (line["answer"], line["answer_format"])


def test_a_default_build_leaves_out_the_ablations_a_release_lacks_and_a_named_one_fails(
    tmp_path: Path, release: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = shutil.copytree(release, tmp_path / "release")
    for file in (root / "mmlb_data" / "documentQA").glob("text_mmlongdoc_*.jsonl"):
        file.unlink()
    viquae = CONFIGS["vrag_viquae_8k"].file
    write_release(
        root, viquae, [{k: v for k, v in r.items() if k != "original_question"} for r in release_lines(root, viquae)]
    )
    assert build_mmlongbench(source=str(root), out_dir=tmp_path / "plan", dry_run=True) is None
    err = capsys.readouterr().err
    assert (
        "note: 6 ablation config(s) left out, the release cannot give them: ablation_triviaqa_8k "
        "(vrag/viquae_K8_dep6.jsonl rows have no 'original_question'); ablation_text_doc_8k "
        "(documentQA/text_mmlongdoc_K8.jsonl is not in the release)" in err
    )
    with pytest.raises(BuildError, match="text_mmlongdoc_K8.jsonl is not in .*the file the official config reads"):
        build_mmlongbench(source=str(root), out_dir=tmp_path / "named", configs=["ablation_text_doc_8k"])
    with pytest.raises(
        BuildError,
        match=r"vrag/viquae_K8_dep6.jsonl:1 \(id 'viquae_0'\): missing field "
        r"'original_question'",
    ):
        build_mmlongbench(source=str(root), out_dir=tmp_path / "named", configs=["ablation_triviaqa_8k"])


def test_archives_read_in_place_give_the_same_rows_and_builds_are_byte_identical(tmp_path: Path) -> None:
    configs = ["vrag_viquae_16k", "icl_sun397_8k", "docvqa_slidevqa_8k", "niah_vh_multi_32k"]
    folders = build_mmlongbench(source="fixture", out_dir=tmp_path / "a", configs=configs)
    again = build_mmlongbench(source="fixture", out_dir=tmp_path / "b", configs=configs)
    archives = build_mmlongbench(source="fixture:archives", out_dir=tmp_path / "c", configs=configs)
    assert not list((tmp_path / "c").rglob("mmlb_image"))  # nothing unpacked beside the build

    def files(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): sha256_hex(p.read_bytes()) for p in sorted(root.rglob("*.parquet"))}

    assert files(folders) == files(again) == files(archives) and len(files(folders)) == len(configs) + 1


def write_release(root: Path, file: str, rows: list[dict]) -> None:
    path = root / "mmlb_data" / file
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_official_sample_is_kept_and_full_converts_everything(tmp_path: Path, release: Path) -> None:
    root = shutil.copytree(release, tmp_path / "release")
    image = "vrag/infoseek/entity_0.jpg"
    vrag = [
        {
            "id": f"q{i:03d}",
            "question": " Where?",
            "answer": ["Paris"],
            "image": image,
            "ctxs": [{"title": "T", "text": f"passage {i} {d}"}],
        }
        for i in range(150)
        for d in range(3)
    ]
    write_release(root, CONFIGS["vrag_infoseek_8k"].file, vrag)
    page = "docqa/slidevqa/slidevqa-report-0000/slidevqa-report-0000-1-1024.jpg"
    docs = [
        {
            "id": f"d{i}",
            "doc_name": f"d{i}",
            "page_list": [page],
            "question": f"q{i}",
            "answer": str(i),
            "answer_format": "Integer",
            "ans_page_list": [1],
        }
        for i in range(150)
    ]
    write_release(root, CONFIGS["docvqa_slidevqa_8k"].file, docs)
    out = build_mmlongbench(
        source=str(root), out_dir=tmp_path / "paper", configs=["vrag_infoseek_8k", "docvqa_slidevqa_8k"]
    )
    rows = load_split(out, "vrag_infoseek_8k")
    kept = set(random.Random(42).sample(sorted({r["id"] for r in vrag}), 100))  # data.py: random.sample, seed 42
    assert len(rows) == 300 and set(rows["source_id"]) == kept
    in_file_order = [f"{r['id']}#{i % 3}" for i, r in enumerate(vrag) if r["id"] in kept]
    assert rows["id"] == in_file_order
    docs_rows = load_split(out, "docvqa_slidevqa_8k")
    order = np.random.default_rng(42).permutation(150)[:100]  # Dataset.shuffle(seed=42).select(range(100))
    assert docs_rows["source_id"] == [f"d{i}" for i in order]
    full = build_mmlongbench(source=str(root), out_dir=tmp_path / "full", configs=["vrag_infoseek_8k"], full=True)
    assert len(load_split(full, "vrag_infoseek_8k")) == 450


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("missing_image", ["1 image(s) not found", "vrag/infoseek/nowhere.jpg", "infoseek_K8_dep3.jsonl:2"]),
        ("bad_json", ["infoseek_K8_dep3.jsonl:2", "JSON"]),
        ("bad_gold", ["infoseek_K8_dep3.jsonl:1", "'answer' should be a string or a non-empty list of strings"]),
    ],
)
def test_bad_release_lines_fail_naming_file_line_and_what_was_expected(
    tmp_path: Path, release: Path, damage: str, expected: list[str]
) -> None:
    root = shutil.copytree(release, tmp_path / "release")
    file = root / "mmlb_data" / CONFIGS["vrag_infoseek_8k"].file
    lines = file.read_text().splitlines()
    if damage == "missing_image":
        row = json.loads(lines[1])
        row["image"] = "vrag/infoseek/nowhere.jpg"
        lines[1] = json.dumps(row)
    elif damage == "bad_json":
        lines[1] = lines[1][:40]
    else:
        row = json.loads(lines[0])
        row["answer"] = []
        lines[0] = json.dumps(row)
    file.write_text("\n".join(lines) + "\n")
    with pytest.raises(BuildError) as error:
        build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=["vrag_infoseek_8k"])
    for text in expected:
        assert text in str(error.value)
    assert not (tmp_path / "out" / "mmlongbench").exists()


def _set_image(root: Path, line: int, value: str) -> None:
    file = CONFIGS["vrag_infoseek_8k"].file
    rows = release_lines(root, file)
    rows[line]["image"] = value
    write_release(root, file, rows)


def _link_out(path: Path) -> None:
    """Replace a release file by a symbolic link to a file outside the release."""
    path.unlink()
    path.symlink_to(outside_jpeg(path.parents[4]))


def _latin1_line(path: Path, index: int) -> None:
    """Re-encode one line of a jsonl file in Latin-1 (an 'é' in it), as an editor on another system might."""
    lines = path.read_text().splitlines()
    lines[index] = lines[index].replace("Paris", "Paris, café")
    path.write_bytes(
        b"".join((line.encode("latin-1") if i == index else line.encode()) + b"\n" for i, line in enumerate(lines))
    )


INFOSEEK = "vrag/infoseek_K8_dep3.jsonl"
# Issue 17: what a hostile or broken release did (each built with exit 0, or stopped with a traceback).
HOSTILE = {
    "path out through ..": (
        lambda root: _set_image(root, 0, "../../outside.jpg"),
        rf"{INFOSEEK}:1 \(id 'infoseek_0'\): image: path '\.\./\.\./outside\.jpg' leads out of the "
        r"release \(through '\.\.'\)",
    ),
    "absolute path": (
        lambda root: _set_image(root, 2, "/etc/hostname"),
        rf"{INFOSEEK}:3 \(id 'infoseek_0'\): image: path '/etc/hostname' is absolute",
    ),
    "symlink out": (
        lambda root: _link_out(root / "mmlb_image/vrag/infoseek/entity_0.jpg"),
        rf"{INFOSEEK}:1 \(id 'infoseek_0'\): image: path 'vrag/infoseek/entity_0\.jpg' leads out of "
        r".*mmlb_image through a symbolic link \(to .*outside\.jpg\)",
    ),
    "truncated jpeg": (
        lambda root: write_truncated_jpeg(root / "mmlb_image/vrag/infoseek/entity_0.jpg"),
        rf"image vrag/infoseek/entity_0\.jpg \(needed by {INFOSEEK}:1 \(id 'infoseek_0'\)\) is damaged "
        r"\(cut short: no end-of-image marker after its image data\); pass --skip-bad-images",
    ),
    "not utf-8": (
        lambda root: _latin1_line(root / "mmlb_data" / INFOSEEK, 1),
        rf"{INFOSEEK}:2: not UTF-8 text \(invalid continuation byte at byte \d+ of the line\)",
    ),
    "empty file": (
        lambda root: (root / "mmlb_data" / INFOSEEK).write_bytes(b""),
        rf"{INFOSEEK}: the release file holds no rows \(config vrag_infoseek_8k reads it\)",
    ),
    "non-utf-8 claims": (
        lambda root: (root / "mmlb_data/summ/gov_claims.jsonl").write_bytes(b'{"id": "\xff"}\n'),
        r"summ/gov_claims\.jsonl:1: not UTF-8 text",
    ),
}


def assert_damaged_release_refused(
    tmp_path: Path, release: Path, damage: Callable[[Path], object], message: str, config: str
) -> None:
    """A copy of the release, changed by `damage(root)`, stops the build of `config` with a `BuildError` matching
    `message`, and leaves no dataset, no work folder and no lock behind: nothing was stored."""
    root = shutil.copytree(release, tmp_path / "release")
    damage(root)
    with pytest.raises(BuildError, match=message):
        build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=[config])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", sorted(HOSTILE))
def test_a_hostile_or_broken_release_is_one_error_naming_file_line_and_path(
    tmp_path: Path, release: Path, damage: str
) -> None:
    make, message = HOSTILE[damage]
    config = "summ_govreport_8k" if "claims" in damage else "vrag_infoseek_8k"
    assert_damaged_release_refused(tmp_path, release, make, message, config)


def _set_icl(root: Path, change) -> None:
    path = root / "mmlb_data" / CONFIGS["icl_stanford_cars_8k"].file
    data = json.loads(path.read_text())
    change(data["all"])
    path.write_text(json.dumps(data))


def _set_pages(root: Path, value: object) -> None:
    file = CONFIGS["docvqa_slidevqa_8k"].file
    rows = release_lines(root, file)
    rows[0]["ans_page_list"] = value
    write_release(root, file, rows)


SLIDEVQA, CARS = "documentQA/slidevqa_K8.jsonl:1 \\(id 'slidevqa-report-0000'\\)", "ICL/cars196_K8.json \\(domain 'all'"
# Issue 30: release rows of the wrong shape that ended in a traceback (or, for a string of digits, in made-up pages).
WRONG_SHAPE = {
    "ans_page_list a string": (
        "docvqa_slidevqa_8k",
        lambda root: _set_pages(root, "12"),
        rf"^{SLIDEVQA}: field 'ans_page_list' should be a list of page numbers, got \"12\"$",
    ),
    "ans_page_list of words": (
        "docvqa_slidevqa_8k",
        lambda root: _set_pages(root, ["two"]),
        rf"^{SLIDEVQA}: field 'ans_page_list' should be a list of page numbers, got \[\"two\"\]$",
    ),
    "exemplar set a number": (
        "icl_stanford_cars_8k",
        lambda root: _set_icl(root, lambda d: d["exemplar_list"].__setitem__(0, 5)),
        rf"^{CARS}, exemplar_list\[0\]\): expected a list of demonstration rounds, got 5$",
    ),
    "exemplar a number": (
        "icl_stanford_cars_8k",
        lambda root: _set_icl(root, lambda d: d["exemplar_list"][0][0].__setitem__(1, 7)),
        rf"^{CARS}, exemplar_list\[0\]\[0\]\[1\]\): expected an exemplar {{\"image\": path, "
        r"\"id\": class id}, got 7$",
    ),
    "test example a number": (
        "icl_stanford_cars_8k",
        lambda root: _set_icl(root, lambda d: d["test_example"].__setitem__(0, 3)),
        rf"^{CARS}, test_example 0\): expected an object with 'image' and 'answer', got 3$",
    ),
}


@pytest.mark.parametrize("damage", sorted(WRONG_SHAPE))
def test_a_release_row_of_the_wrong_shape_is_one_error_naming_file_row_and_expected(
    tmp_path: Path, release: Path, damage: str
) -> None:
    config, make, message = WRONG_SHAPE[damage]
    assert_damaged_release_refused(tmp_path, release, make, message, config)


def cli_build(release: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`builders build mmlongbench --source RELEASE OPTIONS --quiet --out OUT`, in a child process."""
    return run_builders("build", "mmlongbench", "--source", str(release), *options, "--quiet", "--out", str(out))


@pytest.mark.slow  # the builders command in a child process
def test_a_path_out_of_the_release_stops_the_cli_with_one_line(tmp_path: Path, release: Path) -> None:
    root = shutil.copytree(release, tmp_path / "release")
    _set_image(root, 1, "../../outside.jpg")
    outside_jpeg(tmp_path)  # the file the path names is there to be read
    result = cli_build(root, tmp_path / "out", "--configs", "vrag_infoseek_8k")
    assert_refused_in_one_line(
        result,
        f"builders: error: {INFOSEEK}:2 (id 'infoseek_0'): image: path '../../outside.jpg' "
        "leads out of the release (through '..')",
        tmp_path / "out",
    )


@pytest.mark.slow  # the builders command in a child process
def test_an_archive_member_out_of_the_release_or_a_truncated_archive_is_one_error(tmp_path: Path) -> None:
    archives = write_fixture(tmp_path / "archives", archives=True)
    # The text archive: read to its end, so a member anywhere in it is met.
    member = "mmlb_data/../../outside.jsonl"
    check_archive_edges(archives, "mmlb_data.tar.gz", member, "mmlongbench", "vrag_infoseek_8k", build_mmlongbench)


@pytest.mark.slow  # the builders command in a child process
def test_skipping_bad_images_leaves_out_their_rows_lists_them_and_flags_the_build(
    tmp_path: Path, release: Path
) -> None:
    root = shutil.copytree(release, tmp_path / "release")
    write_truncated_jpeg(root / "mmlb_image/vrag/infoseek/entity_1.jpg")
    shown = [f"{r['id']}" for r in release_lines(root, INFOSEEK) if r["image"] == "vrag/infoseek/entity_1.jpg"]
    assert shown
    result = cli_build(root, tmp_path / "out", "--configs", "vrag_infoseek_8k", "vrag_viquae_8k", "--skip-bad-images")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "mmlongbench"
    manifest = contract.read_manifest(out)
    entry = manifest["configs"]["vrag_infoseek_8k"]
    left_out = [row["id"] for row in entry["skipped"]]
    assert entry["skipped_rows"] == len(left_out) == len(shown) and {i.split("#")[0] for i in left_out} == set(shown)
    assert all(
        "vrag/infoseek/entity_1.jpg" in row["reason"] and "cut short" in row["reason"] for row in entry["skipped"]
    )
    rows = load_split(out, "vrag_infoseek_8k")
    assert not set(rows["id"]) & set(left_out) and len(rows) + len(left_out) == len(release_lines(root, INFOSEEK))
    assert "skipped_rows" not in manifest["configs"]["vrag_viquae_8k"]
    assert f"{len(left_out)} row(s) left out because an image they show is damaged" in manifest["caveats"]["limited"]
    assert "--skip-bad-images" in manifest[contract.BUILD_COMMAND]
    # Adding a config keeps the caveat of the configs carried over.
    added = run_builders(
        "build",
        "mmlongbench",
        "--source",
        str(root),
        "--configs",
        "icl_food101_8k",
        "--skip-bad-images",
        "--quiet",
        "--out",
        str(tmp_path / "out"),
    )
    assert added.returncode == 0, added.stderr
    assert contract.read_manifest(out)["caveats"]["limited"] == manifest["caveats"]["limited"]


def test_a_row_longer_than_its_label_is_built_with_a_warning_naming_it(
    tmp_path: Path, release: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = shutil.copytree(release, tmp_path / "release")
    file = CONFIGS["vrag_viquae_8k"].file
    rows = release_lines(root, file)
    rows[0]["ctxs"][0]["text"] = "word " * 12000
    write_release(root, file, rows)
    out = build_mmlongbench(source=str(root), out_dir=tmp_path / "out", configs=["vrag_viquae_8k"])
    err = capsys.readouterr().err
    assert "warning: 1 row(s) count more tokens than their length label" in err
    assert f"vrag_viquae_8k {rows[0]['id']}#0:" in err
    assert json.loads((out / contract.MANIFEST_NAME).read_text())["configs"]["vrag_viquae_8k"]["over_length_rows"] == 1


@pytest.mark.slow  # the builders command in a child process
def test_cli_names_an_unknown_config_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    unknown = run_builders("build", "mmlongbench", "--configs", "summ_govreport_256k", "--out", str(tmp_path))
    assert unknown.returncode == 2 and "summ_govreport_256k" in unknown.stderr
    dry = run_builders(
        "build",
        "mmlongbench",
        "--configs",
        "vrag_infoseek_8k",
        "summ_govreport_128k",
        "--dry-run",
        "--out",
        str(tmp_path / "dry"),
    )
    assert dry.returncode == 0, dry.stderr
    assert "plan" in dry.stderr and not (tmp_path / "dry" / "mmlongbench").exists()
    listed = run_builders("list")
    assert "icl_food101_128k" in listed.stdout and "MMLongBench" in listed.stdout or "mmlongbench" in listed.stdout
    assert LEAF_BY_NAME["icl_food101"].paper_name == "Food101"
