"""An MMLongBench file whose records share an id where the official format keys one record by it is refused: one line
naming the file, the id and both records (VLMEvalKit's TSVs by `index`, the summarization claims by `id`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.core.errors import BuildError
from builders.mmlongbench.release import read_claims
from builders.mmlongbench.vlmevalkit.fixture import COLUMNS, write_tsv
from builders.mmlongbench.vlmevalkit.tsv import read_records


def _record(index: str) -> dict[str, str]:
    record = dict.fromkeys(COLUMNS, "")
    # A question holds newlines (quoted, over several physical lines), so the lines named are the records' first lines.
    record.update(index=index, question_id=f"q{index}", question="Which page?\n<image>\nAnswer:", answer="1")
    return record


def test_a_vlmevalkit_tsv_with_an_index_twice_names_both_records(tmp_path: Path) -> None:
    path = tmp_path / "MMLongBench_32K.tsv"
    write_tsv(path, [_record("0"), _record("1"), _record("0")])
    with pytest.raises(
        BuildError,
        match=r"^vlmevalkit/MMLongBench_32K.tsv: index '0' twice, the records of lines 2 and 8; VLMEvalKit keys",
    ):
        list(read_records(path, "vlmevalkit/MMLongBench_32K.tsv"))
    write_tsv(path, [_record("0"), _record("1"), _record("2")])
    assert [r.fields["index"] for r in read_records(path, "x")] == ["0", "1", "2"]


def test_a_claims_file_with_an_id_twice_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "gov_claims.jsonl"
    items = [{"id": "gov-1", "claims": ["a"]}, {"id": "gov-2", "claims": ["b"]}, {"id": "gov-1", "claims": ["c"]}]
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    with pytest.raises(
        BuildError, match=r"^summ/gov_claims.jsonl: id 'gov-1' twice, the records of lines 1 and 3; an id has one list"
    ):
        read_claims(path, "summ/gov_claims.jsonl")
