"""Fuzz: release files per benchmark (issue 30). A release row of any shape, read through the builder's own path,
becomes a planned row or a `BuildError` naming the file and the row, never a traceback: MMLongBench's rows of
every loader and its ICL files, MileBench's annotation files, MMNeedle's COCO captions, LoCoVQA's OK-VQA files
and MNIST IDX files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from builders.core.errors import BuildError
from builders.milebench.fixture import subset_files
from builders.milebench.gold import gold_index
from builders.milebench.records import plan_file
from builders.milebench.release import parse_annotation
from builders.milebench.subsets import CONFIGS as MILEBENCH_CONFIGS
from builders.mmlongbench.fixture import fixture_files
from builders.mmlongbench.leaves import CONFIGS as MMLB_CONFIGS
from builders.mmlongbench.plan import plan_config
from builders.mmneedle.sources import parse_coco_captions

from .conftest import JSON, bounded, budget, counted, deep, mutated

TEXTS, _ = fixture_files()
# One 8K config per MMLongBench loader, with a row of its release file.
MMLB: dict[str, tuple[str, object]] = {}
for name, cfg in MMLB_CONFIGS.items():
    if name.endswith("_8k") and cfg.leaf.loader not in MMLB:
        text = TEXTS[cfg.file].decode()
        MMLB[cfg.leaf.loader] = (
            name,
            json.loads(text) if cfg.leaf.loader == "icl" else json.loads(text.splitlines()[0]),
        )


def case_and_variant(cases: dict[str, tuple]) -> st.SearchStrategy[tuple[tuple, object]]:
    """One of `cases` (a tuple whose last item is a good value of the release), and a value like that good one: the
    good value mutated, or any JSON at all."""
    return st.sampled_from(sorted(cases)).flatmap(
        lambda key: st.tuples(st.just(cases[key]), st.one_of(mutated(cases[key][-1]), JSON))
    )


@budget(fuzz=900, ci=30)
@given(case=case_and_variant(MMLB))
def test_mmlongbench_rows_of_any_shape_plan_or_fail_in_one_line(case: tuple[tuple[str, object], object]) -> None:
    counted()
    (config, _), row = case
    cfg = MMLB_CONFIGS[config]
    loader = cfg.leaf.loader
    with tempfile.TemporaryDirectory() as folder, bounded(20, "an MMLongBench row"):
        path = Path(folder) / "release_file"
        path.write_text(json.dumps(row) if loader == "icl" else json.dumps(row) + "\n")
        try:
            list(plan_config(cfg, path, full=True, claims=None))
        except BuildError as err:
            assert str(err).startswith(cfg.file), err


MILEBENCH = {}
for cfg in MILEBENCH_CONFIGS.values():
    if cfg.subset.family not in MILEBENCH:
        MILEBENCH[cfg.subset.family] = (cfg, json.loads(subset_files(cfg.subset)[cfg.release_file]))


@budget(fuzz=600, ci=25)
@given(case=case_and_variant(MILEBENCH), data=st.data())
def test_milebench_annotations_of_any_shape_plan_or_fail_in_one_line(
    case: tuple[tuple[object, object], object], data: st.DataObject
) -> None:
    counted()
    (cfg, _), document = case
    raw = data.draw(
        st.one_of(st.just(json.dumps(document).encode()), st.binary(max_size=30), st.just(deep(5000).encode())),
        label="bytes",
    )
    where = f"{cfg.subset.name}/{cfg.release_file}"
    with bounded(20, "a MileBench annotation"):
        try:
            plan_file(parse_annotation(raw, where).content, cfg, where, gold_index)
        except BuildError as err:
            assert str(err).startswith(where), err


COCO = {
    "images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}],
    "annotations": [{"image_id": 1, "caption": "a cat"}, {"image_id": 2, "caption": "a dog"}],
}


@budget(fuzz=600, ci=25)
@given(document=st.one_of(mutated(COCO), JSON), raw=st.one_of(st.none(), st.binary(max_size=30)))
def test_mmneedle_caption_files_of_any_shape_parse_or_fail_in_one_line(document: object, raw: bytes | None) -> None:
    counted()
    path = Path("annotations/captions_val2014.json")
    with bounded(20, "a caption file"):
        try:
            parse_coco_captions(raw if raw is not None else json.dumps(document).encode(), path)
        except BuildError as err:
            assert str(path) in str(err), err


OKVQA = (
    {"questions": [{"question_id": 1, "image_id": 2, "question": "What is it?"}]},
    {"annotations": [{"question_id": 1, "answers": [{"answer": "a cat"}, {"answer": "cat"}]}]},
)


@budget(fuzz=400, ci=15)
@given(
    questions=st.one_of(mutated(OKVQA[0]), JSON),
    annotations=st.one_of(mutated(OKVQA[1]), JSON),
    idx=st.binary(max_size=40),
)
def test_locovqa_source_files_of_any_shape_load_or_fail_in_one_line(
    questions: object, annotations: object, idx: bytes
) -> None:
    from builders.locovqa.mnist import read_idx
    from builders.locovqa.okvqa import ANNOTATIONS, COCO_VAL2014, QUESTIONS, OkVqaSource

    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(20, "LoCoVQA source files"):
        root = Path(folder)
        (root / "okvqa").mkdir()
        (root / "coco" / COCO_VAL2014).mkdir(parents=True)
        (root / "okvqa" / QUESTIONS).write_text(json.dumps(questions))
        (root / "okvqa" / ANNOTATIONS).write_text(json.dumps(annotations))
        try:
            OkVqaSource(root / "okvqa", root / "coco")
        except BuildError as err:
            assert str(root) in str(err) or "OK-VQA" in str(err), err
        (root / "labels-idx1-ubyte").write_bytes(idx)
        try:
            read_idx(root / "labels-idx1-ubyte", 2049, 1)
        except BuildError as err:
            assert "labels-idx1-ubyte" in str(err), err
