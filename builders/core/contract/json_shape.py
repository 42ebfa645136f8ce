"""A JSON file's shape, declared once as Python types, for its writer and its reader alike.

A `TypedDict` names an object's keys (`Required`/`NotRequired` as written, else its totality), `dict[str, T]` an object
of any keys, `list[T]` a list, `Literal[...]` the values a field takes, `T | None` a value that may be null, `str`,
`int` (not a boolean), `float` (any number), `bool`, `Any`; `Annotated[T, Rule(...)]` adds what a type cannot say (a
pattern, a count's sign, a path inside a folder) and the words a message says of the value. The writer annotates what
it writes with the type (mypy checks it); the reader checks what it parsed against the same type (`shape_problem`),
and gets the first thing that is not as declared, by its place in the file (`configs.m1.files[0].sha256`), which it
says in its own file's words (`Problem`). Keys a type does not name are left alone.

Importing it costs nothing: `typing` only.
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Required, Union


@dataclass(frozen=True)
class Rule:
    """What a value must be beyond its type: `expected` (as a message says it: "64 lowercase hex digits"), `test`
    (True: the value is good), `problem` (what is wrong with a value of the right type, in words of its own, or
    None), `said` (the words a failing value gets instead of "expected ..."). A problem anywhere inside an annotated
    value is said of the value itself, unless something inside has a rule of its own."""

    expected: str
    test: Callable[[Any], bool] | None = None
    problem: Callable[[Any], str | None] | None = None
    said: str | None = None


@dataclass(frozen=True)
class Problem:
    """The first thing in a value that is not as declared: where (`configs.m1.files[0]`; "" for the value itself),
    what was expected there, the value found (None for a key that is missing), and `said`: the problem in a rule's
    own words, where it has some."""

    where: str
    expected: str
    value: object
    said: str | None = None
    missing: bool = False
    ruled: bool = False  # found by a `Rule` (its `expected` is the rule's)


def shape_problem(value: object, shape: object, *, keys_optional: bool = False) -> Problem | None:
    """The first place where `value` (parsed JSON) is not of the type `shape`, or None. `keys_optional`: a key a
    `TypedDict` requires may be absent (a reader that takes older files, which lack keys added since)."""
    return _check(value, shape, "", keys_optional)


def _join(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def _check(value: object, shape: object, where: str, keys_optional: bool) -> Problem | None:
    origin = typing.get_origin(shape)
    if origin is typing.Annotated:
        inner, *extras = typing.get_args(shape)
        rule = next((extra for extra in extras if isinstance(extra, Rule)), None)
        problem = _check(value, inner, where, keys_optional)
        if rule is None:
            return problem
        if problem is not None:  # said of this value, unless a rule inside said it
            return problem if problem.ruled else _ruling(rule, where, value)
        if rule.test is not None and not rule.test(value):
            return _ruling(rule, where, value)
        said = rule.problem(value) if rule.problem is not None else None
        return Problem(where, rule.expected, value, said, ruled=True) if said else None
    if origin in (Union, types.UnionType):
        options = typing.get_args(shape)
        for option in options:
            if _check(value, option, where, keys_optional) is None:
                return None
        # a value of the right kind for one option: that option's problem, which is more precise
        kinds = [option for option in options if _kind_matches(value, option)]
        if len(kinds) == 1:
            return _check(value, kinds[0], where, keys_optional)
        return Problem(where, describe(shape), value)
    if origin is Literal:
        allowed = typing.get_args(shape)
        return None if value in allowed and not isinstance(value, bool) else Problem(where, describe(shape), value)
    if origin is dict:
        if not isinstance(value, dict):
            return Problem(where, describe(shape), value)
        item = typing.get_args(shape)[1]
        return next((p for key, v in value.items() if (p := _check(v, item, _join(where, key), keys_optional))), None)
    if origin is list:
        if not isinstance(value, list):
            return Problem(where, describe(shape), value)
        item = typing.get_args(shape)[0]
        return next((p for i, v in enumerate(value) if (p := _check(v, item, _join(where, i), keys_optional))), None)
    if typing.is_typeddict(shape):
        return _check_typeddict(value, shape, where, keys_optional)
    return None if _scalar_matches(value, shape) else Problem(where, describe(shape), value)


def _ruling(rule: Rule, where: str, value: object) -> Problem:
    return Problem(where, rule.expected, value, rule.said, ruled=True)


def _check_typeddict(value: object, shape: object, where: str, keys_optional: bool) -> Problem | None:
    if not isinstance(value, dict):
        return Problem(where, describe(shape), value)
    for key, (hint, required) in _keys(shape).items():
        if key not in value:
            if required and not keys_optional:  # said in the words of the key's own rule, where it has one
                ruled = typing.get_origin(hint) is typing.Annotated and any(
                    isinstance(extra, Rule) for extra in typing.get_args(hint)[1:]
                )
                return Problem(_join(where, key), describe(hint), None, missing=True, ruled=ruled)
            continue
        problem = _check(value[key], hint, _join(where, key), keys_optional)
        if problem is not None:
            return problem
    return None


@functools.cache
def _keys(shape: object) -> dict[str, tuple[object, bool]]:
    """A TypedDict's keys: (type, whether it is required), `Required`/`NotRequired` read from the annotations (under
    `from __future__ import annotations` Python 3.11 does not)."""
    keys = {}
    for key, hint in typing.get_type_hints(shape, include_extras=True).items():
        required = bool(getattr(shape, "__total__", True))
        if typing.get_origin(hint) in (Required, NotRequired):
            required = typing.get_origin(hint) is Required
            hint = typing.get_args(hint)[0]
        keys[key] = (hint, required)
    return keys


def _kind_matches(value: object, shape: object) -> bool:
    """Whether `value` is of the JSON kind `shape` is (an object, a list, a scalar of its kind), whatever inside."""
    origin = typing.get_origin(shape)
    if origin is typing.Annotated:
        return _kind_matches(value, typing.get_args(shape)[0])
    if origin is dict or typing.is_typeddict(shape):
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list)
    if origin is Literal:
        return any(type(value) is type(option) for option in typing.get_args(shape))
    return _scalar_matches(value, shape)


def _scalar_matches(value: object, shape: object) -> bool:
    if shape is Any or shape is object:
        return True
    if shape is None or shape is type(None):
        return value is None
    if shape is bool:
        return isinstance(value, bool)
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if shape is float:  # an integer past a float's range (10**400) is no number a reader can format or compare
        return isinstance(value, float) or (
            isinstance(value, int) and not isinstance(value, bool) and abs(value) <= sys.float_info.max
        )
    if shape is str:
        return isinstance(value, str)
    raise TypeError(f"json_shape: {shape!r} is no JSON type")


SCALAR_WORDS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def describe(shape: object) -> str:
    """What a value of `shape` is, in words: "an object", "a list or null", "number or string or null"."""
    origin = typing.get_origin(shape)
    if origin is typing.Annotated:
        rule = next((extra for extra in typing.get_args(shape)[1:] if isinstance(extra, Rule)), None)
        return rule.expected if rule is not None else describe(typing.get_args(shape)[0])
    if origin in (Union, types.UnionType):
        return " or ".join(describe(option) for option in typing.get_args(shape))
    if origin is Literal:
        return "one of " + ", ".join(str(option) for option in typing.get_args(shape))
    if origin is dict or typing.is_typeddict(shape):
        return "an object"
    if origin is list:
        return "a list"
    if shape is Any or shape is object:
        return "anything"
    return (
        SCALAR_WORDS[type(None) if shape is None else shape] if isinstance(shape, type) or shape is None else str(shape)
    )


def kind_of(value: object) -> str:
    """A JSON value's kind, as messages say it ("a string", "null")."""
    if value is None:
        return "null"
    if type(value) is int and abs(value) > sys.float_info.max:
        return "an integer past a float's range"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
