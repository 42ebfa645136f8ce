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

from builders.core import contract

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


def expected(error: ErrorDetails) -> str:
    """What a pydantic error's value was expected to be ("an integer", "one of ok, error")."""
    if error["type"] == "union":  # `first_error`'s: each member's words
        return error["msg"]
    if error["type"] in ("too_short", "too_long"):  # a list of a bounded length (a [start, end] pair)
        ctx = error.get("ctx", {})
        bound = (
            f"at least {ctx.get('min_length')}" if error["type"] == "too_short" else f"at most {ctx.get('max_length')}"
        )
        return f"a list of {bound} items"
    if error["type"] == "literal_error":
        return "one of " + ", ".join(re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", ""))))
    return EXPECTED.get(error["type"], error["msg"].removeprefix("Input should be ").lower())


def said(error: ErrorDetails) -> str:
    """One pydantic error as one line: "no sample_id", "status is a str, not one of ok, error"."""
    place, kind = where(error["loc"]), error["type"]
    if kind == "missing":
        return f"no {place}"
    if kind == "value_error":  # a validator's own words, said of the value ("is an integer too large for a float")
        return f"{place} {error.get('ctx', {}).get('error', error['msg'])}".strip()
    found = type(error["input"]).__name__
    return f"{place} is a {found}, not {expected(error)}" if place else f"a {found}, not {expected(error)}"


def first_error(value: object, declaration: type, *, keys_optional: bool = False) -> ErrorDetails | None:
    """The first thing in `value` (parsed JSON) that is not as `declaration` says, or None. `keys_optional`: a key a
    declaration requires may be absent, at any depth (a reader that takes older files, which lack keys added since)."""
    try:
        adapter(declaration).validate_python(value, strict=True)
    except ValidationError as err:
        errors = [e for e in err.errors(include_url=False) if not (keys_optional and e["type"] == "missing")]
        return _union(errors) if errors else None
    return None


def _union(errors: list[ErrorDetails]) -> ErrorDetails:
    """The first error, or where a union's members each refused the same value (pydantic places each under the
    member's name: `date.float`, `date.str`), one error at the value's own place expecting any of them."""
    first = errors[0]
    place, loc = first["loc"][:-1], first["loc"]
    members = [
        e for e in errors if len(e["loc"]) == len(loc) and e["loc"][:-1] == place and e["input"] is first["input"]
    ]
    if len(members) < 2 or not isinstance(loc[-1], str):
        return first
    said = " or ".join(dict.fromkeys(expected(member) for member in members))
    return ErrorDetails(type="union", loc=place, msg=said, input=first["input"])


def problem(value: object, declaration: type, *, keys_optional: bool = False) -> str | None:
    """`first_error` as one line, or None."""
    error = first_error(value, declaration, keys_optional=keys_optional)
    return None if error is None else said(error)


def must_be(value: object, declaration: type, *, keys_optional: bool = False) -> str | None:
    """`first_error` as a file's reader says it ("`rows[0].n_paired` must be an integer, got a string"), or None."""
    error = first_error(value, declaration, keys_optional=keys_optional)
    if error is None:
        return None
    return f"`{where(error['loc'])}` must be {expected(error)}, got {contract.kind_of(error['input'])}"


def json_schema(declaration: type) -> str:
    """`declaration`'s JSON Schema as `docs/schemas/` keeps it."""
    return json.dumps(adapter(declaration).json_schema(), indent=2, sort_keys=True) + "\n"
