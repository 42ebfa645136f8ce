"""A number past Python's 4,300-digit `int(str)` limit in a release file (issue 41, item 7): `json.loads` raises a
plain `ValueError` for it, which every release reader let through as a traceback. Each reader now answers with
one line naming the file (and the line, for a jsonl file); through the CLI, exit 2 and no build."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builders import cli
from builders.core.errors import BuildError

HUGE = "9" * 5000  # an integer Python's json refuses to read (sys.get_int_max_str_digits() is 4,300)
TOO_MANY = "holds an integer of more than 4,300 digits"


def with_huge_id(text: str) -> str:
    """The first JSON object of `text` with its "id" replaced by a 5,000-digit integer."""
    first = json.loads(text.splitlines()[0])
    first["id"] = 0
    return json.dumps(first).replace('"id": 0', f'"id": {HUGE}', 1) + "\n" + "\n".join(text.splitlines()[1:])


def test_an_mmlongbench_row_id_past_the_limit_is_one_line_naming_the_file_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from builders.mmlongbench.fixture import write_fixture
    from builders.mmlongbench.leaves import BUILDABLE_CONFIGS

    release = write_fixture(tmp_path / "release")
    cfg = BUILDABLE_CONFIGS["niah_vh_single_8k"]
    path = release / "mmlb_data" / cfg.file
    path.write_text(with_huge_id(path.read_text()))
    out = tmp_path / "out"
    code = cli.main(
        ["build", "mmlongbench", "--source", str(release), "--configs", cfg.name, "--out", str(out), "--quiet"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert err.startswith(f"builders: error: {cfg.file}:1: not valid JSON for a release: it {TOO_MANY}"), err
    assert not (out / "mmlongbench").exists()


def _mmlb_icl(tmp_path: Path) -> None:
    from builders.mmlongbench.fixture import fixture_files
    from builders.mmlongbench.leaves import BUILDABLE_CONFIGS
    from builders.mmlongbench.plan import plan_config

    cfg = BUILDABLE_CONFIGS["icl_food101_8k"]
    data = json.loads(fixture_files()[0][cfg.file])
    block = next(iter(data.values()))
    block["exemplar_list"][0][0][0]["id"] = "HUGE"  # the class id of the first exemplar
    path = tmp_path / "icl.json"
    path.write_text(json.dumps(data).replace('"HUGE"', HUGE, 1))
    list(plan_config(cfg, path, full=True))


def _mmlb_claims(tmp_path: Path) -> None:
    from builders.mmlongbench.release import read_claims

    path = tmp_path / "gov_claims.jsonl"
    path.write_text(f'{{"id": {HUGE}, "claims": ["a"]}}\n')
    read_claims(path, "summ/gov_claims.jsonl")


def _milebench_annotation(tmp_path: Path) -> None:
    from builders.milebench.release import parse_annotation

    parse_annotation(f'{{"meta_data": {{}}, "data": [{{"sample_id": {HUGE}}}]}}'.encode(), "ALFRED/ALFRED.json")


def _mmneedle_metadata(tmp_path: Path) -> None:
    from builders.mmneedle.official import OfficialMetadata

    (tmp_path / "2_2.json").write_text(f'{{"COCO_val2014_stitched_0000.jpg": {HUGE}}}')
    OfficialMetadata(tmp_path).pool(2)


def _mmneedle_captions(tmp_path: Path) -> None:
    from builders.mmneedle.sources import parse_coco_captions

    parse_coco_captions(f'{{"images": [{{"id": {HUGE}}}], "annotations": []}}'.encode(), tmp_path / "captions.json")


def _okvqa(tmp_path: Path) -> None:
    from builders.locovqa.okvqa import ANNOTATIONS, QUESTIONS, OkVqaSource

    (tmp_path / QUESTIONS).write_text(f'{{"questions": [{{"question_id": {HUGE}, "image_id": 1, "question": "?"}}]}}')
    (tmp_path / ANNOTATIONS).write_text('{"annotations": []}')
    OkVqaSource(tmp_path, tmp_path)


def _coco_instances(tmp_path: Path) -> None:
    from builders.locovqa.coco import instance_entities

    path = tmp_path / "instances_val2014.json"
    path.write_text(f'{{"categories": [{{"id": {HUGE}, "name": "cat"}}], "images": [], "annotations": []}}')
    instance_entities(path)


@pytest.mark.parametrize(
    ("reader", "where"),
    [
        (_mmlb_icl, "ICL/food101_K8.json"),
        (_mmlb_claims, "summ/gov_claims.jsonl:1"),
        (_milebench_annotation, "ALFRED/ALFRED.json"),
        (_mmneedle_metadata, "2_2.json"),
        (_mmneedle_captions, "captions.json"),
        (_okvqa, "OpenEnded_mscoco_val2014_questions.json"),
        (_coco_instances, "instances_val2014.json"),
    ],
    ids=[
        "mmlongbench-icl",
        "mmlongbench-claims",
        "milebench",
        "mmneedle-metadata",
        "mmneedle-captions",
        "okvqa",
        "coco",
    ],
)
def test_every_release_reader_answers_a_number_past_the_limit_in_one_line(
    tmp_path: Path, reader: Callable[[Path], None], where: str
) -> None:
    with pytest.raises(BuildError) as caught:
        reader(tmp_path)
    message = str(caught.value)
    assert where in message and "\n" not in message and len(message) < 700, message
    assert f"not valid JSON for a release: it {TOO_MANY}, which no release holds" in message, message
