"""Integers of any length in the JSON and YAML both sides read, refused by name instead of by traceback.

Python converts a decimal string of more than `sys.get_int_max_str_digits()` digits (4,300 by default) to an `int`
only by raising a bare `ValueError` (and an `int` that long back to text the same way): `json.loads` of a file holding
one fails deep inside the parser, naming neither the file nor the field. Every reader of a file someone else may have
written (a build manifest, a journal, a results file, a JSON flag) parses it with `loads_json`, and a YAML reader checks
each integer scalar with `int_text_problem`: such a number is a `TooManyDigits` naming its field (`configs.m1.rows`),
which the reader turns into its one line naming the file. `kind_of` says a parsed value's kind in such a line.
"""

from __future__ import annotations

import json
import re
import sys

from typing_extensions import TypeAliasType

# What `json.loads` returns: a JSON document, every level of it one of these (a reader narrows before it trusts). A
# `TypeAliasType`, so that pydantic resolves its recursion wherever a declaration it validates names it.
JsonValue = TypeAliasType("JsonValue", "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]")

_PLAIN_KEY = re.compile(r"[\w,.:/-]{1,60}")


class TooManyDigits(ValueError):
    """An integer longer than Python converts; `where` is its field (`metrics.acc`, `[3].id`; empty for the whole
    document)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where = where
        self.problem = problem


def int_text_problem(text: str) -> str | None:
    """Why the integer written `text` (sign, digits, YAML's `_`) cannot be read as an `int`, or None."""
    limit = sys.get_int_max_str_digits()  # 0: no limit
    if not limit or len(text) <= limit:
        return None
    digits = sum(char.isdigit() for char in text)
    if digits <= limit:
        return None
    return f"an integer of {digits:,} digits (at most {limit:,} can be read)"


def int_problem(value: int) -> str | None:
    """Why `value` (read from a form Python converts without a limit, such as hexadecimal) cannot be written out in
    decimal, or None."""
    limit = sys.get_int_max_str_digits()
    digits = int(abs(value).bit_length() * 0.30103) + 1  # log10(2): at most one over the true count
    if not limit or digits <= limit:
        return None
    return f"an integer of about {digits:,} digits (at most {limit:,} can be read)"


class _Unread:
    """Stands where an integer too long to convert was, until its field is found."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


def loads_json(text: str | bytes) -> JsonValue:
    """`json.loads(text)`, where an integer of more digits than Python converts raises `TooManyDigits` naming its
    field (other errors are `json.loads`'s own)."""
    unread: list[_Unread] = []

    def parse_int(digits: str) -> int | _Unread:
        problem = int_text_problem(digits)
        if problem is None:
            return int(digits)
        unread.append(_Unread(problem))
        return unread[-1]

    value: JsonValue = json.loads(text, parse_int=parse_int)
    if unread:
        raise TooManyDigits(_place(value, unread[0]), unread[0].problem)
    return value


def _place(value: JsonValue, target: _Unread) -> str:
    """The path to `target` inside `value` (`a.b[2]`), walked without recursion: a document may nest deeply."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if item is target:
            return where
        if isinstance(item, dict):
            for key, child in item.items():
                if _PLAIN_KEY.fullmatch(key):
                    stack.append((child, f"{where}.{key}" if where else key))
                else:
                    stack.append((child, f"{where}[{key[:40]!r}]"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
    return ""


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
