"""Fuzz: a build's columns (issue 99). Whatever types and values a verified build's columns hold, and whatever its
files declare them to be (its Parquet rewritten and re-hashed in its manifest, so integrity holds), loading a task's
data ends in rows whose every column is stored as its features declare, the contract's columns declared as the
contract says and holding what it says, the task's prompt and target strings; or in one line naming the file and the
column. Never a traceback, and nothing loaded (so nothing scored) from a column of the wrong type.

The oracle is `datasets` itself (`Features.from_dict(...).arrow_schema`) and the rows read back in Python, not the
harness's own reading of the features."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features
from hypothesis import given
from hypothesis import strategies as st

from builders.core import contract
from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.running.task.task import Task
from tests.conftest import rewrite_table

from .conftest import bounded, budget, counted

CONFIG, ROWS = "colors", 6  # the toy build's config toy_colors reads, and its rows
READ_AS_TEXT = ("prompt", "answer")  # the toy task's doc_to_text and doc_to_target

_INT32 = {"dtype": "int32", "_type": "Value"}
_IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
_IMAGES = st.fixed_dictionaries({"bytes": st.binary(max_size=4) | st.none(), "path": st.text(max_size=4) | st.none()})


def _value(dtype: str) -> dict[str, str]:
    return {"dtype": dtype, "_type": "Value"}


def _list(feature: dict) -> dict:
    return {"feature": feature, "_type": "List"}


# (its Arrow type, a value of it, its feature): the kinds of column a build's files hold
KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any], dict]] = {
    "string": (pa.string(), st.text(max_size=6), _value("string")),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1), _INT32),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1), _value("int64")),
    "float64": (pa.float64(), st.floats(), _value("float64")),
    "bool": (pa.bool_(), st.booleans(), _value("bool")),
    "list<string>": (
        pa.list_(pa.string()),
        st.lists(st.text(max_size=4) | st.none(), max_size=3),
        _list(_value("string")),
    ),
    "list<int32>": (pa.list_(pa.int32()), st.lists(st.integers(-3, 3) | st.none(), max_size=3), _list(_INT32)),
    "list<list<int32>>": (
        pa.list_(pa.list_(pa.int32())),
        st.lists(st.lists(st.integers(0, 99) | st.none(), max_size=3) | st.none(), max_size=3),
        _list(_list(_INT32)),
    ),
    "Image": (_IMAGE, _IMAGES, {"_type": "Image"}),
    "List(Image)": (pa.list_(_IMAGE), st.lists(_IMAGES, max_size=2), _list({"_type": "Image"})),
}


KEPT = object()  # a row's value left as the build wrote it


@st.composite
def edited(draw: Callable[..., Any], columns: list[str]) -> Callable[[pa.Table], pa.Table]:
    """An edit of the table: one to three columns stored as another kind (values of it, nulls among them), or of
    their own kind with some values nulled or moved to another row; each declared as it is stored, as it was, or as
    another kind; or the features dropped."""
    changes = []
    for name in draw(st.lists(st.sampled_from(columns), min_size=1, max_size=3, unique=True)):
        # as often as not its own kind, its values mostly kept and its declaration too: a build that loads is drawn
        # as often as one that does not
        kind = draw(st.just("kept") | st.sampled_from(list(KINDS)), label=f"{name} stored as")
        if kind == "kept":  # each row: its own value, a null, or another row's
            cell = st.just(KEPT) | st.just(KEPT) | st.sampled_from([None, *range(ROWS)])
        else:
            cell = st.none() | KINDS[kind][1]
        every = st.just([KEPT] * ROWS) if kind == "kept" else st.nothing()
        values = draw(every | st.lists(cell, min_size=ROWS, max_size=ROWS), label=f"{name} values")
        # or a feature of lists nested some levels deep (issue 106, item 7: past 990, deeper than Python's JSON reader)
        kinds = st.sampled_from(["as stored", "as it was"]) | st.sampled_from(list(KINDS))
        declared = draw(kinds | st.sampled_from([2, 33, 500, 1200]) | st.integers(1, 1200), label="declared")
        changes.append((name, kind, values, declared))
    drop_features = draw(st.integers(0, 19)) == 19

    def edit(table: pa.Table) -> pa.Table:
        metadata = dict(table.schema.metadata)
        features = json.loads(metadata[b"huggingface"])["info"]["features"]
        for name, kind, values, declared in changes:
            if kind == "kept":
                arrow, feature, old = table.column(name).type, features[name], table.column(name).to_pylist()
                cells = [
                    old[row] if v is KEPT else old[v] if isinstance(v, int) else None for row, v in enumerate(values)
                ]
            else:
                arrow, _, feature = KINDS[kind]
                cells = values
            column = pa.array(cells, type=arrow)
            table = table.set_column(table.schema.get_field_index(name), pa.field(name, arrow), column)
            if isinstance(declared, int):  # written as text below: `json.dumps` stops at Python's depth too
                features[name] = {"_type": f"Nested{declared}"}
            elif declared != "as it was":
                features[name] = feature if declared == "as stored" else KINDS[declared][2]
        if drop_features:
            return table.replace_schema_metadata(None)
        info = json.dumps({"info": {"features": features}})
        for _, _, _, declared in changes:
            if isinstance(declared, int):
                deep = '{"feature": ' * declared + json.dumps(_value("string")) + ', "_type": "List"}' * declared
                info = info.replace(json.dumps({"_type": f"Nested{declared}"}), deep)
        return table.replace_schema_metadata({**metadata, b"huggingface": info.encode()})

    return edit


def _null_inside(value: Any) -> bool:
    return value is None or (isinstance(value, list) and any(map(_null_inside, value)))


def _loaded_as_declared(parquet: Path) -> None:
    """What a loaded build must be: each column stored as declared, the contract's and the task's as they read them."""
    table = pq.read_table(parquet)
    features = json.loads(table.schema.metadata[b"huggingface"])["info"]["features"]
    stored = Features.from_dict(features).arrow_schema
    for name in table.column_names:
        assert stored.field(name).type.equals(table.schema.field(name).type), name
    contract_columns = contract.row_feature_dicts()
    rows = table.to_pylist()
    for name in table.column_names:
        if name in contract_columns:
            assert features[name] == contract_columns[name], name
        if name in READ_AS_TEXT:
            assert features[name] == _value("string"), name
        if (name in contract_columns and name != contract.IMAGES) or name in READ_AS_TEXT:
            assert not any(_null_inside(row[name]) for row in rows), name
    for row in rows:
        assert row[contract.NUM_IMAGES] >= 0 and row[contract.TEXT_TOKENS] >= 0
        for name in (contract.IMAGE_SHA256, contract.IMAGE_SIZES, contract.IMAGE_TOKENS):
            assert len(row[name]) == row[contract.NUM_IMAGES], name


@budget(fuzz=400, ci=25)
@given(data=st.data())
def test_any_column_types_and_values_load_as_declared_or_fail_in_one_line(toy_build, data: st.DataObject) -> None:
    counted()
    data_dir, tasks = toy_build
    (parquet,) = (data_dir / "toy" / CONFIG).glob("*.parquet")
    edit = data.draw(edited(pq.read_schema(parquet).names), label="edit")
    config = TaskIndex([tasks], include_defaults=False).tasks["toy_colors"]
    with tempfile.TemporaryDirectory() as folder, bounded(60, "a task's data"):
        root = Path(folder)
        shutil.copytree(data_dir, root, dirs_exist_ok=True)
        shard = rewrite_table(root / "toy", CONFIG, edit)
        try:
            task = Task(config)
            task.load(root)
        except UserError as err:
            message = str(err)
            assert "\n" not in message.strip() and message.startswith(f"{shard}: "), message
            assert len(message) < len(str(shard)) + 400, message  # bounded, however deep or long the features
            assert any(words in message for words in ("column '", "declares no features", "schema metadata")), message
            return
        assert len(task) == ROWS
        _loaded_as_declared(shard)
