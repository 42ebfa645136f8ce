"""`--source fixture:full`: a length-true release. Every built row counts (text tokens + image tokens, as the
builder counts them) at most its length label and less than one unit (passage, image, demonstration, page)
short of it; the depths of an id share one haystack with the needle where its depth says; a longer length shows
more of the same haystack; the same arguments write the same bytes."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders.cli import main
from builders.core import contract
from builders.core.tokens import ApproxTokenCounter
from builders.mmlongbench.build import build_mmlongbench
from builders.mmlongbench.full_fixture import full_source_files, pool_ids, write_full_source
from builders.mmlongbench.leaves import CONFIGS, LEAVES

CONFIGS_8K = [f"{leaf.name}_8k" for leaf in LEAVES]
LONG = "niah_vh_single_128k"
# Where the context ends in each official template: the question, the test image or the closing request.
CONTEXT_ENDS = ("Question: ", "Now classify this image: ", "Now please summarize")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = build_mmlongbench(
        source="fixture:full", out_dir=tmp_path_factory.mktemp("full"), configs=[*CONFIGS_8K, LONG], fixture_ids=2
    )
    assert built is not None
    return built


@functools.cache
def rows(built: Path, config: str) -> list[dict]:
    """The config's rows, read from the Parquet files its manifest lists."""
    return [row for path in contract.split_files(built, config, "test") for row in pq.read_table(path).to_pylist()]


def counted(row: dict) -> int:
    return row[contract.TEXT_TOKENS] + sum(row[contract.IMAGE_TOKENS])


def unit_tokens(row: dict, counter: ApproxTokenCounter) -> int:
    """The largest unit of the row's context, read off its prompt: the blank-line separated pieces between the
    instruction and the question (a passage, a page, a demonstration), and each image of a run of bare image
    placeholders (VH's haystack), each with its images' tokens."""
    pieces = row["prompt"].split("\n\n")
    tokens = iter(row[contract.IMAGE_TOKENS])
    units = []
    for k, piece in enumerate(pieces):
        parts = piece.split("\n") if set(piece.split("\n")) == {contract.IMAGE_PLACEHOLDER} else [piece]
        for part in parts:
            cost = counter.count(part.replace(contract.IMAGE_PLACEHOLDER, "")) + sum(
                next(tokens) for _ in range(part.count(contract.IMAGE_PLACEHOLDER))
            )
            if k > 0 and not part.startswith(CONTEXT_ENDS):
                units.append(cost)
    return max(units)


@pytest.mark.parametrize("config", [*CONFIGS_8K, LONG])
@pytest.mark.slow  # the module's fixture:full build
def test_every_row_fills_its_length_within_one_unit(built: Path, config: str) -> None:
    counter = ApproxTokenCounter()
    data = rows(built, config)
    variants = CONFIGS[config].leaf.variants
    assert len(data) == 2 * variants * (2 if config.startswith("icl_inat2021") else 1)  # 2 ids (per iNat domain)
    for row in data:
        unit = unit_tokens(row, counter)
        assert unit <= 2600, (config, row["id"], unit)  # a page and its label at most: the bound means something
        assert row["length"] - unit < counted(row) <= row["length"], (config, row["id"], counted(row), unit)


def _before(row: dict, needle: str, is_image: bool) -> tuple[str, list[str]]:
    """The prompt text and the images before the needle (an image's sha256, or a gold passage)."""
    if not is_image:
        text = row["prompt"][: row["prompt"].index(needle)]
        return text, row[contract.IMAGE_SHA256][: text.count(contract.IMAGE_PLACEHOLDER)]
    k = row[contract.IMAGE_SHA256].index(needle)
    text = contract.IMAGE_PLACEHOLDER.join(row["prompt"].split(contract.IMAGE_PLACEHOLDER)[: k + 1])
    return text, row[contract.IMAGE_SHA256][:k]


@pytest.mark.parametrize(
    "config",
    [
        "niah_vh_single_8k",
        LONG,
        "vrag_viquae_8k",
        "niah_mmniah_ret_text_8k",
        "niah_mmniah_ret_image_8k",
        "niah_mmniah_reason_image_8k",
    ],
)
@pytest.mark.slow  # the module's fixture:full build
def test_depths_share_the_context_before_the_needle(built: Path, config: str) -> None:
    """What precedes the needle at one depth begins the row at every deeper depth (a prompt cache reuses it),
    and depth 0 opens the context with the needle."""
    by_id: dict[str, list[dict]] = {}
    for row in rows(built, config):
        by_id.setdefault(row["source_id"], []).append(row)
    for same_id in by_id.values():
        same_id.sort(key=lambda r: r["depth"])
        assert [r["depth"] for r in same_id] == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
        first = same_id[0]
        if config.startswith("vrag"):  # the gold passage: the first after the instruction at depth 0
            needle, is_image = first["prompt"].split("\n\n")[1], False
        elif "mmniah" in config and "text" in config:  # the needle sentence, first at depth 0
            needle, is_image = first["prompt"].split("\n\n")[1], False
        else:  # the needle image (MM-NIAH: the photo with the cartoon pasted in), first at depth 0
            needle, is_image = first[contract.IMAGE_SHA256][0], True
        befores = [_before(r, needle, is_image) for r in same_id]
        assert befores[0][1] == [] and len(befores[-1][0]) > len(befores[0][0])
        for (text, images), deeper in zip(befores, same_id[1:], strict=False):
            assert deeper["prompt"].startswith(text) and deeper[contract.IMAGE_SHA256][: len(images)] == images
        if config.startswith("niah_vh"):  # images only: the needle sits at round(depth x haystack images)
            haystack = first[contract.NUM_IMAGES] - 1
            assert [r[contract.IMAGE_SHA256].index(needle) for r in same_id] == [
                round(r["depth"] * haystack) for r in same_id
            ]


@pytest.mark.slow  # the module's fixture:full build
def test_a_longer_length_shows_more_of_the_same_haystack(built: Path) -> None:
    short, long = rows(built, "niah_vh_single_8k"), rows(built, LONG)
    for source_id in {r["source_id"] for r in short}:
        short_row = next(r for r in short if r["source_id"] == source_id and r["depth"] == 1.0)
        long_row = next(r for r in long if r["source_id"] == source_id and r["depth"] == 1.0)
        short_haystack = short_row[contract.IMAGE_SHA256][:-1]
        assert long_row[contract.IMAGE_SHA256][: len(short_haystack)] == short_haystack
        assert long_row[contract.NUM_IMAGES] > 10 * short_row[contract.NUM_IMAGES]


def test_same_arguments_write_the_same_bytes(tmp_path: Path) -> None:
    def tree(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    leaves = ["niah_mmniah_count_text", "icl_inat2021", "docvqa_longdocurl", "summ_multilexsum"]
    first = write_full_source(tmp_path / "a", ids_per_file=2, lengths={"8k": 8192}, leaves=leaves)
    second = write_full_source(tmp_path / "b", ids_per_file=2, lengths={"8k": 8192}, leaves=leaves)
    assert tree(first) == tree(second)
    assert len(tree(first)) > 20


@pytest.mark.slow  # the module's fixture:full build and a second one
def test_a_rebuild_of_some_configs_gives_the_same_files_and_rows(built: Path, tmp_path: Path) -> None:
    """Same arguments, same bytes: the release files and the rows (which name their images by sha256), whichever
    other configs the build holds."""
    some = ["niah_mmniah_count_image_8k", "icl_inat2021_8k", "docvqa_slidevqa_8k", "summ_multilexsum_8k"]
    again = build_mmlongbench(source="fixture:full", out_dir=tmp_path, configs=some, fixture_ids=2)
    assert again is not None
    first, second = (json.loads((b / contract.MANIFEST_NAME).read_text()) for b in (built, again))
    assert second["request"]["source"] == first["request"]["source"] == "fixture-full-v1-ids2"
    for config in some:
        for key in ("file_sha256", "content_sha256"):
            assert second["configs"][config][key] == first["configs"][config][key], (config, key)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--source", "fixture", "--fixture-ids", "2"], "--fixture-ids sets the ids per file of --source fixture:full"),
        (["--source", "fixture:full", "--fixture-ids", "0"], "--fixture-ids should be at least 1, got 0"),
    ],
)
def test_a_misused_fixture_ids_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    code = main(["build", "mmlongbench", *argv, "--configs", "vrag_infoseek_8k", "--out", str(tmp_path)])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and expected in lines[0], lines


# One leaf of each family past 128K, at 256K: each grows from the pool fixture:full writes for it.
PAST_128K = [
    "vrag_infoseek_256k",
    "niah_vh_multi_256k",
    "niah_mmniah_ret_image_256k",
    "icl_food101_256k",
    "docvqa_longdocurl_256k",
]


@pytest.fixture(scope="module")
def built_past_128k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = build_mmlongbench(
        source="fixture:full", out_dir=tmp_path_factory.mktemp("past"), configs=PAST_128K, fixture_ids=1
    )
    assert built is not None
    return built


@pytest.mark.slow  # the module's second fixture:full build (pools to 256K: ~20 s)
@pytest.mark.parametrize("config", PAST_128K)
def test_past_128k_every_row_fills_its_length_within_one_unit(built_past_128k: Path, config: str) -> None:
    """With one id per file, the pool reaches 256K: no row (ICL: exemplar set) stops short, and every row is
    within its length and within one unit of it (its 128K row alone is half of it)."""
    counter = ApproxTokenCounter()
    manifest = json.loads((built_past_128k / contract.MANIFEST_NAME).read_text())
    assert manifest["request"]["source"] == "fixture-full-v1-ids1-pools256k"
    entry = manifest["configs"][config]
    short = "exemplar_sets_short_of_length" if config.startswith("icl") else "rows_short_of_length"
    assert entry[short] == 0 and entry["over_length_rows"] == 0, entry
    data = rows(built_past_128k, config)
    assert len(data) == CONFIGS[config.replace("_256k", "_8k")].leaf.variants
    for row in data:
        unit = unit_tokens(row, counter)
        assert unit <= 2600, (config, row["id"], unit)
        assert row["length"] == 262144 and row["length"] - unit < counted(row) <= row["length"], (
            config,
            row["id"],
            counted(row),
            unit,
        )


def test_the_pool_is_written_only_when_asked() -> None:
    """Without `pools` the files are today's; with them the 64K file keeps its ids' rows and adds pool ids (flat
    images), and the ICL 128K file keeps its two exemplar sets and adds sets of exemplars none of the others show."""
    vh = {"niah_vh_single": 262144}
    plain, _ = full_source_files(lengths={"64k": 65536}, leaves=["niah_vh_single"])
    pooled, src = full_source_files(lengths={"64k": 65536}, leaves=["niah_vh_single"], pools=vh)
    (name,) = plain
    assert pooled[name].startswith(plain[name]) and len(pooled[name]) > 2 * len(plain[name])
    ids = [json.loads(line)["id"] for line in pooled[name].decode().splitlines()]
    pool = sorted(set(ids) - {"vh_single_0"})
    assert len(pool) == pool_ids(262144, 2, 65536) >= 2 and all(int(i.rsplit("_")[-1]) >= 10_000 for i in pool), ids
    assert {src.images[p][0] for p in src.shown if "/10000/" in p} == {"flat"}
    assert full_source_files(lengths={"64k": 65536}, leaves=["niah_vh_single"], pools=vh)[0] == pooled  # same bytes

    icl_plain, _ = full_source_files(lengths={"128k": 131072}, leaves=["icl_food101"])
    icl_pooled, _ = full_source_files(lengths={"128k": 131072}, leaves=["icl_food101"], pools={"icl_food101": 262144})
    (icl_name,) = icl_plain
    before, after = (json.loads(d[icl_name])["all"]["exemplar_list"] for d in (icl_plain, icl_pooled))
    assert after[:2] == before and len(after) == 2 + pool_ids(262144, 1, 131072) >= 3
    images = [{item["image"] for demo_round in exemplar_set for item in demo_round} for exemplar_set in after[1:]]
    assert sum(map(len, images)) == len(set().union(*images))  # each pool set's exemplars are its own
    assert [len(s) for s in after[2:]] == [len(before[0])] * (len(after) - 2)  # same rounds: each counts the same
