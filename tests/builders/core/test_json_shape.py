"""A JSON file's shape declared once as Python types (`builders.core.contract.json_shape`): the reader's check is
derived from the writer's type, names the first place that differs, and says it in the rule's words."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, Required, TypedDict

import pytest

from builders.core.contract.json_shape import Rule, describe, kind_of, shape_problem


class Cell(TypedDict, total=False):
    mean: float | str | None
    n: Required[int]


class Doc(TypedDict):
    name: str
    status: Literal["ok", "error"]
    cells: dict[str, Cell]
    tags: NotRequired[list[str]]
    hash: Annotated[str, Rule("64 hex digits", test=lambda v: len(v) == 64)]
    counts: NotRequired[Annotated[dict[str, int] | None, Rule("an object of counts", said="holds no counts")]]


GOOD = {"name": "x", "status": "ok", "cells": {"a": {"mean": 0.5, "n": 2}}, "hash": "f" * 64}


def test_a_value_of_the_declared_type_passes_and_keys_it_does_not_name_are_left_alone() -> None:
    assert shape_problem({**GOOD, "extra": [1, {"x": None}]}, Doc) is None
    assert shape_problem({**GOOD, "tags": ["t"], "counts": None}, Doc) is None
    assert shape_problem({**GOOD, "cells": {"a": {"mean": "N/A", "n": 0}}}, Doc) is None  # an int is a number


@pytest.mark.parametrize(
    ("damage", "where", "expected", "said"),
    [
        ({"status": "done"}, "status", "one of ok, error", None),
        ({"cells": {"a": {"mean": 0.5}}}, "cells.a.n", "integer", None),  # Required inside total=False
        ({"cells": {"a": {"mean": [1], "n": 1}}}, "cells.a.mean", "number or string or null", None),
        ({"cells": []}, "cells", "an object", None),
        ({"tags": ["t", 3]}, "tags[1]", "string", None),
        ({"hash": "f"}, "hash", "64 hex digits", None),
        ({"hash": None}, "hash", "64 hex digits", None),  # the rule's words for a value of the wrong type too
        ({"counts": {"a": "many"}}, "counts", "an object of counts", "holds no counts"),  # said of the whole value
        ({"name": True}, "name", "string", None),
    ],
)
def test_the_first_place_that_differs_is_named_with_what_was_expected(
    damage: dict, where: str, expected: str, said: str | None
) -> None:
    found = shape_problem({**GOOD, **damage}, Doc)
    assert found is not None and (found.where, found.expected, found.said) == (where, expected, said)


def test_a_missing_key_is_named_unless_a_reader_takes_older_files_without_it() -> None:
    value = {k: v for k, v in GOOD.items() if k != "hash"}
    found = shape_problem(value, Doc)
    assert found is not None and found.missing and (found.where, found.expected) == ("hash", "64 hex digits")
    assert shape_problem(value, Doc, keys_optional=True) is None


def test_the_words_of_a_type_and_of_a_value() -> None:
    assert describe(list[str] | None) == "a list or null" and describe(float | None) == "number or null"
    assert describe(Doc) == "an object" and describe(Literal["a", "b"]) == "one of a, b"
    assert [kind_of(v) for v in (None, True, 1, 1.5, "s", [], {})] == [
        "null",
        "a boolean",
        "a number",
        "a number",
        "a string",
        "a list",
        "an object",
    ]
