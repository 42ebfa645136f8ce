"""A build's columns checked against what it declares, where its files are read: each column's Arrow type against the
`datasets` feature its files declare (their `huggingface` schema metadata), the contract's columns against the
contract (`builders.core.contract.row_feature_dicts`, `image_table_feature_dicts`), the columns a task names
(`doc_to_text`, `doc_to_target`) as the strings it reads, and the values of those and of the contract's columns (no
null, no negative count, one size, hash and token figure per image). Hashes prove a file is the one its manifest
lists, not that it holds what its features say: a file rewritten after `builders build`, its hash rewritten with
it, is stopped here in one line naming the file, the column, the first bad row and what was expected, before a
sample is scored from it. The features themselves are read here too (`hf_features`): metadata that is not `datasets`'
features, or a feature nested past `FEATURE_DEPTH_MOST` levels, is one line naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from builders.core import contract
from harness.errors import UserError

IMAGE_STRUCT = "struct<bytes: binary, path: string>"  # how `datasets` stores an `Image()`
LISTS = ("List", "Sequence", "LargeList")
STRINGS = ("string", "large_string")
HF_METADATA = b"huggingface"  # the schema metadata key under which `datasets` writes a table's features
FEATURE_DEPTH_MOST = 32  # levels of nested features (the contract's deepest: `List(List(Value))`)


def hf_features(schema: pa.Schema, location: str = "") -> dict[str, object]:
    """Each column's `datasets` feature as the schema's `huggingface` metadata records it (`Features.to_dict()`), {}
    where it records none (`datasets` then infers plain features from the Arrow types: no image columns)."""
    raw = (schema.metadata or {}).get(HF_METADATA)
    if raw is None:
        return {}
    try:
        features = json.loads(raw)["info"]["features"]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        why = "nested too deep to read" if isinstance(err, RecursionError) else str(err)[:200]
        raise UserError(
            f"{location}: its {HF_METADATA.decode()} schema metadata is not datasets' features ({why})"
        ) from None
    if not isinstance(features, dict):
        return {}
    for name, feature in features.items():
        if _depth(feature) > FEATURE_DEPTH_MOST:
            raise UserError(
                f"{location}: column {str(name)[:100]!r} is declared a feature nested more than "
                f"{FEATURE_DEPTH_MOST} levels deep in its {HF_METADATA.decode()} schema metadata"
            )
    return features


def _depth(feature: object) -> int:
    """How deep `feature` nests (a value: 0), counted without recursion, and at most one past `FEATURE_DEPTH_MOST`."""
    depth, level = 0, [feature]
    while level and depth <= FEATURE_DEPTH_MOST:
        level = [v for f in level for v in (f.values() if isinstance(f, dict) else f if isinstance(f, list) else ())]
        depth += 1 if level else 0
    return depth


def with_features(table: pa.Table, features: Mapping[str, object]) -> pa.Table:
    """`table` with `features` (of its columns) as its `huggingface` metadata, or none where there are none."""
    return table.replace_schema_metadata(features_metadata(features))


def features_metadata(features: Mapping[str, object]) -> dict[bytes, str] | None:
    return {HF_METADATA: json.dumps({"info": {"features": features}})} if features else None


def is_image_feature(feature: object) -> bool:
    """A feature that is or holds an `Image()` (the contract's `images`: a list of them)."""
    if isinstance(feature, dict):
        return feature.get("_type") == "Image" or any(is_image_feature(value) for value in feature.values())
    return isinstance(feature, list) and any(is_image_feature(value) for value in feature)


def feature_name(feature: object) -> str:
    """A feature as `datasets` writes it in code (`List(Image())`, `Value('int32')`), for a message."""
    if isinstance(feature, list):
        return f"[{', '.join(map(feature_name, feature))}]"
    if not isinstance(feature, dict):
        return repr(feature)
    kind = feature.get("_type")
    if kind is None:
        return "{" + ", ".join(f"{k!r}: {feature_name(v)}" for k, v in feature.items()) + "}"
    if kind == "Value":
        return f"Value({feature.get('dtype')!r})"
    if kind in LISTS:
        length = feature.get("length", -1)
        return f"{'List' if kind == 'Sequence' else kind}({feature_name(feature.get('feature'))}" + (
            f", length={length})" if length not in (-1, None) else ")"
        )
    return f"{kind}()"


def shown(feature: object, most: int = 200) -> str:
    """`feature_name(feature)`, cut to `most` characters, for a message of one line."""
    name = feature_name(feature)
    return name if len(name) <= most else f"{name[:most]}..."


def arrow_text(arrow: pa.DataType) -> str:
    """An Arrow type as text, list fields unnamed (`list<element: string>` and `list<item: string>` are one type)."""
    if pa.types.is_fixed_size_list(arrow):
        return f"fixed_size_list<{arrow_text(arrow.value_type)}>[{arrow.list_size}]"
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return f"{'large_list' if pa.types.is_large_list(arrow) else 'list'}<{arrow_text(arrow.value_type)}>"
    if pa.types.is_struct(arrow):
        return "struct<" + ", ".join(f"{f.name}: {arrow_text(f.type)}" for f in arrow) + ">"
    return str(arrow)


def feature_arrow(feature: object) -> str | None:
    """The Arrow type (`arrow_text`) `datasets` stores `feature` as; None for a feature this check does not type
    (Audio, Video, ...: no task of the project reads one)."""
    if isinstance(feature, list):  # `[feature]`: a list of them
        inner = feature_arrow(feature[0]) if len(feature) == 1 else None
        return None if inner is None else f"list<{inner}>"
    if not isinstance(feature, dict):
        return None
    kind = feature.get("_type")
    if kind is None:  # a dict of features: a struct
        fields = {name: feature_arrow(value) for name, value in feature.items()}
        return None if None in fields.values() else "struct<" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + ">"
    if kind == "Value":
        try:
            return arrow_text(pa.type_for_alias(str(feature.get("dtype"))))
        except (ValueError, KeyError):
            return f"no Arrow type ({feature.get('dtype')!r})"
    if kind == "Image":
        return IMAGE_STRUCT
    if kind == "ClassLabel":
        return "int64"
    if kind not in LISTS:
        return None
    inner_feature, length = feature.get("feature"), feature.get("length", -1)
    if kind == "Sequence" and isinstance(inner_feature, dict) and "_type" not in inner_feature:
        # a Sequence of a dict is stored as a dict of lists
        return feature_arrow({k: {"feature": v, "length": length, "_type": "List"} for k, v in inner_feature.items()})
    inner = feature_arrow(inner_feature)
    if inner is None:
        return None
    if length not in (-1, None):
        return f"fixed_size_list<{inner}>[{length}]"
    return f"{'large_list' if kind == 'LargeList' else 'list'}<{inner}>"


def _same_feature(declared: object, expected: object) -> bool:
    """Whether two features are one (`Sequence` and `List` of a non-dict feature are the same list)."""
    return feature_name(declared) == feature_name(expected)


def check_schema(
    schema: pa.Schema, features: Mapping[str, object], file: str, contract_features: Mapping[str, object]
) -> None:
    """Each column of `schema` stored as its declared feature, and the contract's columns declared as the contract
    says; else a `UserError` naming `file`, the column and what was expected."""
    for name in schema.names:
        declared = features.get(name)
        if name in contract_features and declared is not None and not _same_feature(declared, contract_features[name]):
            raise UserError(
                f"{file}: column {name!r} is declared {shown(declared)} from row 0, where the data contract "
                f"says {feature_name(contract_features[name])}"
            )
        if declared is None:
            raise UserError(f"{file}: column {name!r} has no declared feature (its features declare {len(features)})")
        expected = feature_arrow(declared)
        found = arrow_text(schema.field(name).type)
        if expected is not None and expected != found:
            raise UserError(
                f"{file}: column {name!r} holds {found[:200]} from row 0, where its features declare "
                f"{shown(declared)} ({expected[:200]})"
            )


class Expected(NamedTuple):
    """What a column's every value must be, in words for a message, and why (the contract, a task's key)."""

    words: str
    why: str


def contract_values(columns: list[str]) -> dict[str, Expected]:
    """The contract's columns among `columns`: none null, none holding a null."""
    why = "the data contract"
    words = {
        contract.ID: "a string",
        contract.NUM_IMAGES: "a count of images (0 or more)",
        contract.TEXT_TOKENS: "a count of tokens (0 or more)",
        contract.IMAGE_SHA256: "a sha256 per image",
        contract.IMAGE_SIZES: "a [width, height] per image",
        contract.IMAGE_TOKENS: "a count of tokens per image",
    }
    return {name: Expected(text, why) for name, text in words.items() if name in columns}


def _first(mask: pa.ChunkedArray | pa.Array) -> int | None:
    """The first row where `mask` is true (a null counts as true), None where none is. No Python value is made an
    Arrow scalar (`pc.fill_null(mask, True)`, `pc.index(..., True)`) nor a NumPy array: pyarrow's conversions import
    pandas, which a run keeps out."""
    filled = pc.or_kleene(mask, pc.is_null(mask))
    hits = pc.indices_nonzero(filled)
    return int(hits[0].as_py()) if len(hits) else None


def _null_inside(column: pa.ChunkedArray) -> int | None:
    """The first row holding a null at any depth of its lists."""
    first = _first(column.is_null())
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    rows = None
    while pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        parents = pc.list_parent_indices(values)
        rows = parents if rows is None else pc.take(rows, parents)
        values = pc.list_flatten(values)
        inner = _first(values.is_null())
        if inner is not None:
            row = int(rows[inner].as_py())
            first = row if first is None else min(first, row)
    return first


def _bad_count(column: pa.ChunkedArray) -> int | None:
    if not pa.types.is_integer(column.type):
        return None
    return _first(pc.less(column, pc.subtract(column, column)))  # below 0, with no Python 0 made a scalar


def first_bad_rows(table: pa.Table, expected: Mapping[str, Expected]) -> list[tuple[int, str, str]]:
    """(row, column, what it holds) of the first bad value of each column of `expected` in `table`."""
    bad: list[tuple[int, str, str]] = []
    for name in expected:
        column = table.column(name)
        null = _null_inside(column)
        if null is not None:
            bad.append((null, name, "a null"))
        negative = _bad_count(column) if name in (contract.NUM_IMAGES, contract.TEXT_TOKENS) else None
        if negative is not None:
            bad.append((negative, name, f"{column[negative].as_py()}"))
    if contract.NUM_IMAGES in expected and pa.types.is_integer(table.column(contract.NUM_IMAGES).type):
        counts = table.column(contract.NUM_IMAGES)
        for name in (contract.IMAGE_SHA256, contract.IMAGE_SIZES, contract.IMAGE_TOKENS):
            if name in expected:
                lengths = pc.list_value_length(table.column(name))
                row = _first(pc.not_equal(pc.cast(lengths, counts.type), counts))
                if row is not None:
                    entries = f"{lengths[row].as_py()} {'entry' if lengths[row].as_py() == 1 else 'entries'}"
                    bad.append((row, name, f"{entries} for num_images {counts[row].as_py()}"))
    return bad


def check_values(table: pa.Table, expected: Mapping[str, Expected], where: Callable[[int], str]) -> None:
    """A `UserError` at the first row of `table` whose value of a column of `expected` is not what it must be, naming
    where the row lies (`where(row)`: its file and row there), the column and what was expected."""
    bad = first_bad_rows(table, expected)
    if bad:
        row, name, found = min(bad)
        words, why = expected[name]
        raise UserError(f"{where(row)}: column {name!r} holds {found}, where {why} expects {words}")


def read_as_text(features: Mapping[str, object], name: str, key: str, file: str) -> Expected:
    """A column a task names as its `key` (`doc_to_text`, `doc_to_target`), read as text: declared a string (a
    list of strings for a target, lm-eval's several right answers); else a `UserError`."""
    declared = features.get(name)
    arrow = feature_arrow(declared)
    fits = arrow in STRINGS or (key == "doc_to_target" and arrow in tuple(f"list<{s}>" for s in STRINGS))
    if declared is not None and not fits:
        raise UserError(
            f"{file}: column {name!r} is declared {shown(declared)} from row 0, where the task's {key} reads a string"
        )
    return Expected("a string", f"the task's {key}")
