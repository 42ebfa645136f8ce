"""A LoCoVQA source whose records share an id is refused: one line naming the file, the id and both records (rows
collapsing onto one id downstream would otherwise build silently)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from builders.core.errors import BuildError
from builders.locovqa.mmstar import MmstarSource
from builders.locovqa.okvqa import OkVqaSource


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 40, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_mmstar_parquet_with_an_index_twice_names_both_rows(tmp_path: Path) -> None:
    # The Hub release's columns (`Lin-Chen/MMStar`, `mmstar.parquet`); rows 0 and 2 share index 7.
    rows = [
        {
            "index": index,
            "question": "Which?\nOptions: A: red, B: blue",
            "answer": "A",
            "image": {"bytes": _png(), "path": None},
            "meta_info": {"source": "mmbench"},
        }
        for index in (7, 8, 7)
    ]
    path = tmp_path / "mmstar.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(BuildError, match=rf"^MMStar index '7' twice, the records {path} row 0 and {path} row 2;"):
        MmstarSource(path)


def test_an_mmstar_tsv_with_an_index_twice_names_both_lines(tmp_path: Path) -> None:
    # VLMEvalKit's `MMStar.tsv`: a header line, then one record a line (lines 2 and 4 share index 3).
    image = base64.b64encode(_png()).decode()
    lines = ["index\tquestion\tanswer\tA\tB\tbench\timage"]
    lines += [f"{index}\tWhich?\tA\tred\tblue\tmmbench\t{image}" for index in (3, 4, 3)]
    path = tmp_path / "MMStar.tsv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BuildError, match=rf"^MMStar index '3' twice, the records {path}:2 and {path}:4;"):
        MmstarSource(path)


def _okvqa(folder: Path, question_ids: list[int], answered_ids: list[int]) -> Path:
    """OK-VQA's two JSON files (`OpenEnded_mscoco_val2014_questions.json`, `mscoco_val2014_annotations.json`)."""
    folder.mkdir()
    questions = [{"image_id": 1, "question": "What is it?", "question_id": qid} for qid in question_ids]
    answers = [{"question_id": qid, "image_id": 1, "answers": [{"answer": "x"}] * 10} for qid in answered_ids]
    (folder / "OpenEnded_mscoco_val2014_questions.json").write_text(json.dumps({"questions": questions}))
    (folder / "mscoco_val2014_annotations.json").write_text(json.dumps({"annotations": answers}))
    return folder


def test_an_okvqa_question_id_twice_names_both_records_in_either_file(tmp_path: Path) -> None:
    folder = _okvqa(tmp_path / "questions", [10, 11, 10], [10, 11])
    with pytest.raises(
        BuildError,
        match=rf"^{folder}/OpenEnded_mscoco_val2014_questions.json: question_id 10 twice, the records questions\[0\] "
        r"and questions\[2\]$",
    ):
        OkVqaSource(folder, tmp_path / "coco")
    folder = _okvqa(tmp_path / "answers", [10, 11], [11, 10, 11])
    with pytest.raises(
        BuildError,
        match=rf"^{folder}/mscoco_val2014_annotations.json: question_id 11 twice, the records annotations\[0\] "
        r"and annotations\[2\]$",
    ):
        OkVqaSource(folder, tmp_path / "coco")
