"""V1.1's rows (EdinburghNLP/MMLongBench at 22b9f27) against the official loaders' own decisions on synthetic release
files held apart from the fixture (`official_v1_1_rows.json`): VRAG's sample without image paths holding a double
quote, DocVQA's page labels; V1.1's configs as a version of their own (named apart, built only when named, recorded
in the manifest); the fixture in V1.1's layout."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from builders import cli
from builders.core import contract
from builders.core.errors import BuildError
from builders.mmlongbench.fixture_v1_1 import write_v1_1_fixture
from builders.mmlongbench.leaves import (
    LEAF_BY_NAME,
    PAPER,
    V1_1,
    V1_1_CONFIGS,
    Config,
)
from builders.mmlongbench.plan import plan_config
from builders.mmlongbench.version_configs import expand_config_sets
from builders.mmlongbench.versions import row_filter
from tests.support.builder_fixtures import read_rows

OFFICIAL = json.loads((Path(__file__).parent / "official_v1_1_rows.json").read_text(encoding="utf-8"))


def vrag_file(folder: Path, n_ids: int, quoted: list[int]) -> Path:
    """A ViQuAE file as the official decisions were made on: ids q0000..., two rows each, listed ones quoted."""
    path = folder / "viquae_K8_dep6.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n_ids):
            image = f"viquae/{'Q' + chr(34) if i in quoted else 'img'}_{i}.jpg"
            row = {
                "id": f"q{i:04d}",
                "question": " q?",
                "answer": ["a"],
                "image": image,
                "ctxs": [{"title": "t", "text": "x"}],
            }
            handle.write((json.dumps(row) + "\n") * 2)
    return path


@pytest.mark.parametrize("case", OFFICIAL["vrag_samples"], ids=lambda c: f"{c['n_ids']}ids-{len(c['quoted'])}quoted")
def test_vrag_samples_the_ids_the_official_loader_samples(tmp_path: Path, case: dict) -> None:
    path = vrag_file(tmp_path, case["n_ids"], case["quoted"])
    leaf = LEAF_BY_NAME["vrag_viquae"]
    for version, key in ((PAPER, "paper"), (V1_1, "v1_1")):
        rows = list(plan_config(Config(leaf, "8k", version), path, full=False))
        assert sorted({int(r.source_id[1:]) for r in rows}) == case[key], version
        assert len(rows) == 2 * len(case[key])  # every row of a sampled id
    if case["quoted"]:
        changed = set(case["paper"]) - set(case["v1_1"])
        assert changed and not set(case["quoted"]) & set(case["v1_1"])  # dropped before the draw: the draw moves


def test_the_v1_1_filter_reads_every_row_as_the_official_loop_does(tmp_path: Path) -> None:
    path = vrag_file(tmp_path, 3, [1])
    rows = list(plan_config(Config(LEAF_BY_NAME["vrag_viquae"], "8k", V1_1), path, full=True))
    assert [r.source_id for r in rows] == ["q0000", "q0000", "q0002", "q0002"]  # unsampled (`full`): still filtered
    paper = list(plan_config(Config(LEAF_BY_NAME["vrag_viquae"], "8k"), path, full=True))
    assert {r.source_id for r in paper} == {"q0000", "q0001", "q0002"}
    # the filter is load_vrag's alone: the ablations reading the same files (occlusion, triviaqa) were never filtered
    assert [
        row_filter(Config(LEAF_BY_NAME[n], "8k", V1_1)) for n in ("ablation_occ_vrag_viquae", "ablation_triviaqa")
    ] == [
        None,
        None,
    ]


def test_docvqa_prompts_are_the_official_loaders_at_both_commits(tmp_path: Path) -> None:
    rows = {case["row"]["id"]: case["row"] for case in OFFICIAL["docqa_prompts"]}
    path = tmp_path / "longdocurl_K8.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows.values()))
    leaf = LEAF_BY_NAME["docvqa_longdocurl"]
    ours = {
        (version, r.source_id): r.prompt
        for version in (PAPER, V1_1)
        for r in plan_config(Config(leaf, "8k", version), path, full=True)
    }
    for case in OFFICIAL["docqa_prompts"]:
        version = PAPER if case["commit"] == "paper" else V1_1
        assert ours[(version, case["row"]["id"])] == case["prompt"], (version, case["row"]["id"])
    assert all("(page" not in prompt for (version, _), prompt in ours.items() if version == V1_1)


def test_a_version_set_names_its_19_configs_and_the_default_build_makes_none(tmp_path: Path) -> None:
    assert expand_config_sets(["v1_1_8k,icl_food101_8k"]) == [
        *(name for name, cfg in V1_1_CONFIGS.items() if cfg.length == "8k"),
        "icl_food101_8k",
    ]
    assert len(V1_1_CONFIGS) == 95 and all(name.startswith("v1_1_") for name in V1_1_CONFIGS)


@pytest.fixture(scope="module")
def v1_1_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("v11")
    assert (
        cli.main(
            [
                "build",
                "mmlongbench",
                "--source",
                "fixture:v1.1",
                "--configs",
                "vrag_viquae_8k,v1_1_8k",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out / "mmlongbench"


def test_the_v1_1_layout_fixture_holds_the_hubs_archives_and_a_quoted_example(tmp_path: Path) -> None:
    root = write_v1_1_fixture(tmp_path / "release")
    names = sorted(p.name for p in root.iterdir())
    assert names == [
        "0_mmlb_data.tar.gz",
        "1_vrag_image.tar.gz",
        "2_mm-niah_image.tar.gz",
        "2_vh_image.tar.gz",
        "3_icl_image.tar.gz",
        "4_summ_image.tar.gz",
        "5_docqa_image.tar.gz",
    ]
    with tarfile.open(root / "1_vrag_image.tar.gz") as tar:
        assert 'mmlb_image/vrag/viquae/entity_"quoted".jpg' in tar.getnames()


def test_v1_1_drops_the_quoted_example_the_paper_keeps(v1_1_build: Path) -> None:
    paper = {r["source_id"] for r in read_rows(v1_1_build, "vrag_viquae_8k")}
    v1_1 = read_rows(v1_1_build, "v1_1_vrag_viquae_8k")
    assert "viquae_quoted" in paper and {r["source_id"] for r in v1_1} == paper - {"viquae_quoted"}
    docs = read_rows(v1_1_build, "v1_1_docvqa_slidevqa_8k")
    assert docs and all("(page" not in r["prompt"] for r in docs)
    # everything else is the paper's row, byte for byte: the same prompts as a paper build of the same source
    icl = read_rows(v1_1_build, "v1_1_icl_food101_8k")
    assert all(r["prompt"].startswith("You need to recognize entities in images.") for r in icl)


def test_the_manifest_names_each_config_s_version(v1_1_build: Path) -> None:
    manifest = json.loads((v1_1_build / "build_manifest.json").read_text())
    configs = manifest["configs"]
    assert "version" not in configs["vrag_viquae_8k"]
    assert configs["v1_1_vrag_viquae_8k"]["version"].startswith("MMLongBench V1.1 (EdinburghNLP/MMLongBench@22b9f27)")
    assert manifest["request"]["source"] == "fixture-v1.1-v1"
    assert contract.split_files(v1_1_build, "v1_1_niah_vh_single_8k", "test")


def test_a_default_build_makes_no_other_version(tmp_path: Path) -> None:
    from builders.mmlongbench.build import MMLongBenchBuild
    from builders.mmlongbench.leaves import ALL_CONFIGS
    from builders.mmlongbench.options import MMLongBenchOptions

    build = MMLongBenchBuild(MMLongBenchOptions(source="fixture"), None)
    build.open_source(tmp_path)
    assert [cfg.name for cfg in build.cfgs] == list(ALL_CONFIGS)  # the paper's 95 and its ablations, as before
    build.close()
    named = MMLongBenchBuild(MMLongBenchOptions(source="fixture"), ["vlmevalkit_32k"])
    assert {cfg.version for cfg in named.cfgs} == {"vlmevalkit"} and len(named.cfgs) == 19
    with pytest.raises(BuildError, match="unknown config"):
        MMLongBenchBuild(MMLongBenchOptions(source="fixture"), ["v1_1_2k"])
