"""Issue 99, item 1: a verified build is read only as far as its declared columns. Builds edited after `builders build`
and re-hashed in their manifest (so integrity holds and the content is wrong) stop in one line naming the file, the
column, the first bad row and what was expected, before a sample is scored; the results' `content_sha256` is what
was read. Before, `--model random` scored a build whose images were strings (exit 0), a `prompt` declared an Image
failed every sample on `KeyError`, a `num_images` of strings ended in a traceback, an int or null answer failed in
the scorer, a file without its features was told its `images` column was not among its columns (listing it), and
the results kept the manifest's stale content hash."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from tests.support.run_setups import answering_red, run_args

TASK, CONFIG = "mmneedle_m1_n2_k1_pos", "m1_n2_k1"


def _declared(table: pa.Table, name: str, feature: dict | None) -> pa.Table:
    """`table` whose `huggingface` metadata declares column `name` as `feature` (None: declares no features)."""
    if feature is None:
        return table.replace_schema_metadata(None)
    metadata = dict(table.schema.metadata)
    declared = json.loads(metadata[b"huggingface"])
    declared["info"]["features"][name] = feature
    return table.replace_schema_metadata({**metadata, b"huggingface": json.dumps(declared).encode()})


def _retyped(name: str, arrow: pa.DataType, values: Callable[[list], list], feature: dict | None = None):
    """An edit storing column `name` as `arrow` (`values` of its old ones), declared `feature` where given."""

    def edit(table: pa.Table) -> pa.Table:
        column = pa.array(values(table.column(name).to_pylist()), type=arrow)
        table = table.set_column(table.schema.get_field_index(name), pa.field(name, arrow), column)
        return _declared(table, name, feature) if feature is not None else table

    return edit


def _at(row: int, value: object) -> Callable[[list], list]:
    def put(values: list) -> list:
        values[row] = value
        return values

    return put


INT32, STRING = {"dtype": "int32", "_type": "Value"}, {"dtype": "string", "_type": "Value"}


def _nested(depth: int) -> Callable[[pa.Table], pa.Table]:
    """An edit declaring `prompt` a string in `depth` lists (written as text: past Python's JSON writer's depth)."""

    def edit(table: pa.Table) -> pa.Table:
        metadata = dict(_declared(table, "prompt", {"_type": "Deep"}).schema.metadata)
        deep = '{"feature": ' * depth + json.dumps(STRING) + ', "_type": "List"}' * depth
        metadata[b"huggingface"] = metadata[b"huggingface"].replace(b'{"_type": "Deep"}', deep.encode())
        return table.replace_schema_metadata(metadata)

    return edit


# name: (the edit, then what the one line says: column, row, what was expected)
EDITS = {
    "images stored as strings": (
        _retyped("images", pa.list_(pa.string()), lambda v: [[i["path"] for i in r] for r in v]),
        ("'images' holds list<string> from row 0", "its features declare List(Image())"),
    ),
    "images declared and stored as strings": (
        _retyped(
            "images",
            pa.list_(pa.string()),
            lambda v: [[i["path"] for i in r] for r in v],
            {"feature": STRING, "_type": "List"},
        ),
        ("'images' is declared List(Value('string')) from row 0", "the data contract says List(Image())"),
    ),
    "prompt declared an Image": (
        lambda table: _declared(table, "prompt", {"_type": "Image"}),
        ("'prompt' holds string from row 0", "its features declare Image()"),
    ),
    "num_images stored as strings": (
        _retyped("num_images", pa.string(), lambda v: [str(n) for n in v]),
        ("'num_images' holds string from row 0", "its features declare Value('int32')"),
    ),
    "num_images declared and stored as strings": (
        _retyped("num_images", pa.string(), lambda v: ["one"] * len(v), STRING),
        ("'num_images' is declared Value('string') from row 0", "the data contract says Value('int32')"),
    ),
    "answer stored as int": (
        _retyped("answer", pa.int64(), lambda v: [7] * len(v)),
        ("'answer' holds int64 from row 0", "its features declare Value('string')"),
    ),
    "answer declared and stored as int": (
        _retyped("answer", pa.int64(), lambda v: [7] * len(v), {"dtype": "int64", "_type": "Value"}),
        ("'answer' is declared Value('int64') from row 0", "the task's doc_to_target reads a string"),
    ),
    "a null answer": (
        _retyped("answer", pa.string(), _at(3, None)),
        ("row 3: column 'answer' holds a null", "the task's doc_to_target expects a string"),
    ),
    "no features": (
        lambda table: _declared(table, "", None),
        ("declares no features",),
    ),
    "a hash too many": (
        _retyped("image_sha256", pa.list_(pa.string()), _at(2, ["0" * 64, "1" * 64])),
        ("row 2: column 'image_sha256' holds 2 entries for num_images 1", "the data contract expects a sha256"),
    ),
    "a negative num_images": (
        _retyped("num_images", pa.int32(), _at(4, -1)),
        ("row 4: column 'image_sha256' holds 1 entry for num_images -1",),
    ),
    # Issue 106, item 7: a RecursionError from `json.loads` at 990 levels; a line of 6,207 characters at 500.
    "a feature nested 1,000 deep": (
        _nested(1000),
        ("its huggingface schema metadata is not datasets' features", "nested too deep"),
    ),
    "a feature nested 500 deep": (
        _nested(500),
        ("column 'prompt' is declared a feature nested more than 32 levels deep",),
    ),
    "a null inside image_sizes": (
        _retyped("image_sizes", pa.list_(pa.list_(pa.int32())), _at(5, [[None, 3]])),
        ("row 5: column 'image_sizes' holds a null", "the data contract expects a [width, height] per image"),
    ),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_build_edited_against_its_declared_columns_stops_in_one_line(
    tmp_path: Path, data_dir: Path, harness, edit_table, case: str
) -> None:
    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    edit, said = EDITS[case]
    shard = edit_table(root / "mmneedle", CONFIG, edit)
    run = harness(*run_args(TASK, "random", data_dir=root, out=tmp_path / "out"))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error")]  # one line stops it
    assert line.startswith(f"harness: error: {shard}: ") and all(words in line for words in said), line
    assert len(line) < len(str(shard)) + 300, line  # its length bounded, whatever the features
    assert not list((tmp_path / "out").glob("*/results_*.json"))  # nothing scored


@pytest.mark.parametrize("group", [24, 1])
def test_a_cell_past_the_stated_bound_is_refused_before_it_is_read(
    tmp_path: Path, data_dir: Path, harness, edit_table, monkeypatch, group: int
) -> None:
    """Issue 106, item 2: a cell larger than the harness reads of a row group (`ROW_GROUP_MOST`, lowered to 1 MiB
    here; a 2 MiB prompt in row 3) is refused from the file's metadata, before a byte of its row group is read,
    naming the column and the row (the row group's rows, where it holds more). Before, a 2 GiB cell was read: 6.3 GB,
    then `realloc of size 4294836224 failed`."""
    from builders.core import contract
    from harness.inputs import parquet_split

    monkeypatch.setattr(parquet_split, "ROW_GROUP_MOST", contract.MiB, raising=False)
    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    large = {"dtype": "large_string", "_type": "Value"}
    edit = _retyped("prompt", pa.large_string(), _at(3, "x" * (2 * contract.MiB)), large)
    shard = edit_table(root / "mmneedle", CONFIG, edit, row_group_size=group)
    run = harness(*run_args(TASK, "random", data_dir=root, out=tmp_path / "out"))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error")]
    rows = "row 3" if group == 1 else "row 0 and the 23 after it in its row group"
    assert line.startswith(f"harness: error: {shard}: {rows}: column 'prompt' holds 2.0 MiB decoded"), line
    assert "past the 1 MiB the harness reads of one row group at once; nothing of it was read" in line


def test_an_image_table_of_strings_stops_in_one_line(
    tmp_path: Path, toy_shared_dir: Path, toy_tasks: Path, harness, edit_table
) -> None:
    """A shared-storage build whose image table's `image` column holds strings (MM-NIAH's image table in the issue:
    a `TypeError` once an image was read)."""
    root = tmp_path / "data"
    shutil.copytree(toy_shared_dir / "toy", root / "toy")
    shard = edit_table(root / "toy", "image_table", _retyped("image", pa.string(), lambda v: ["x"] * len(v)))
    run = harness(*answering_red("toy_colors", toy_tasks, root, tmp_path / "out"))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error")]
    assert line == (
        f"harness: error: {shard}: column 'image' holds string from row 0, where its features declare Image() "
        "(struct<bytes: binary, path: string>)"
    )


def test_the_results_content_sha256_is_what_was_read(tmp_path: Path, data_dir: Path, harness, edit_table) -> None:
    """A prompt rewritten (its type kept) and its file re-hashed in the manifest, the config's `content_sha256` left
    stale: the results record the read files' hash, and the first run's journal is not resumed on it (before, its
    fingerprint was the stale hash, and the edited build's samples were the first run's)."""
    root = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", root / "mmneedle")
    out = tmp_path / "out"
    first = harness(*run_args(TASK, "random", data_dir=root, out=out))
    assert first.code == 0, first.err
    before = first.results("random")["datasets"][TASK]["fingerprint"]
    stale = json.loads((root / "mmneedle" / "build_manifest.json").read_text())["configs"][CONFIG]["content_sha256"]
    edit_table(root / "mmneedle", CONFIG, _retyped("prompt", pa.string(), lambda v: [p + " Say 1." for p in v]))
    resumed = harness(*run_args(TASK, "random", data_dir=root, out=out))
    assert resumed.code == 2 and "holds samples of a different run" in resumed.err, resumed.err
    run = harness(*run_args(TASK, "random", data_dir=root, out=tmp_path / "again"))
    assert run.code == 0, run.err
    manifest = json.loads((root / "mmneedle" / "build_manifest.json").read_text())
    assert manifest["configs"][CONFIG]["content_sha256"] == stale
    read = " ".join(f["sha256"] for f in manifest["configs"][CONFIG]["files"])
    dataset = run.results("random")["datasets"][TASK]
    assert dataset["config"]["content_sha256"] == hashlib.sha256(read.encode()).hexdigest() != stale
    assert dataset["fingerprint"] != before
