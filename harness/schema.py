"""The harness's file formats validated by pydantic (issue 62 item 2): each is declared once, as the `TypedDict` its
writer builds (mypy checks it) and its reader checks against (`problem`, pydantic's strict validation, so an integer
is not a boolean and a string is not a number); its JSON Schema is pydantic's, kept in `docs/schemas/`
(`json_schema`, regenerated and compared by a test). Keys a declaration does not name are left alone.

A declaration validated here is a `typing_extensions.TypedDict`: pydantic reads no `typing.TypedDict` before Python
3.12.
"""

from __future__ import annotations

import functools
import json
import re

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

# What a value of each pydantic error type was expected to be, in the words the run's warnings use.
EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "a boolean",
    "dict_type": "an object",
    "typed_dict_type": "an object",
    "list_type": "a list",
    "none_required": "null",
}


@functools.cache
def adapter(declaration: type) -> TypeAdapter[object]:
    return TypeAdapter(declaration)


def where(loc: tuple[int | str, ...]) -> str:
    """A place in a file as its keys and indexes say it (`image_sizes[0][1]`, `metrics.acc`)."""
    said = ""
    for key in loc:
        said += f"[{key}]" if isinstance(key, int) else (f".{key}" if said else str(key))
    return said


def said(error: ErrorDetails) -> str:
    """One pydantic error as one line: "no sample_id", "status is a str, not one of ok, error"."""
    place, kind = where(error["loc"]), error["type"]
    if kind == "missing":
        return f"no {place}"
    if kind == "value_error":  # a validator's own words, said of the value ("is an integer too large for a float")
        return f"{place} {error.get('ctx', {}).get('error', error['msg'])}".strip()
    if kind == "literal_error":
        expected = "one of " + ", ".join(re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", ""))))
    else:
        expected = EXPECTED.get(kind, error["msg"].removeprefix("Input should be ").lower())
    found = type(error["input"]).__name__
    return f"{place} is a {found}, not {expected}" if place else f"a {found}, not {expected}"


def problem(value: object, declaration: type) -> str | None:
    """The first thing in `value` (parsed JSON) that is not as `declaration` says, as one line, or None."""
    try:
        adapter(declaration).validate_python(value, strict=True)
    except ValidationError as err:
        return said(err.errors(include_url=False)[0])
    return None


def json_schema(declaration: type) -> str:
    """`declaration`'s JSON Schema as `docs/schemas/` keeps it."""
    return json.dumps(adapter(declaration).json_schema(), indent=2, sort_keys=True) + "\n"
