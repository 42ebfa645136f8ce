"""`--model_args` and `--gen_kwargs` strings, and the one parser every backend builds its settings with.

`k=v,k2=v2`, with quotes for values holding commas; a key given twice is refused (which one was meant?).
A backend declares its arguments as a dataclass; `settings_from_args` converts each string by the field's
annotation (int, float, bool, str, or `X | None`), rejects unknown names (listing the known ones) and
missing required ones, and numbers below the field's minimum: 0 for every number (no backend takes a
negative count, size, length or time), or what the field declares with `at_least(n)`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

from harness.errors import UserError
from harness.redact import is_secret_name

S = TypeVar("S", bound="DataclassInstance")  # a backend's settings dataclass
MINIMUM = "minimum"  # field metadata: the smallest value a numeric model argument takes (default 0)
TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def _split_fields(text: str, flag: str) -> list[str]:
    """Split on commas outside single or double quotes. Errors never quote the text: it may hold a key."""
    fields, current, quote, opened = [], [], "", 0
    for position, char in enumerate(text):
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote, opened = char, position
            current.append(char)
        elif char == ",":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    if quote:
        raise UserError(f"{flag}: unbalanced {quote}: the quote opened at character {opened + 1} is never closed")
    fields.append("".join(current))
    return fields


def parse_kv(text: str | None, flag: str = "--model_args") -> dict[str, str]:
    """`answer="1, 2, 3",seed=0` -> {"answer": "1, 2, 3", "seed": "0"}. Empty text -> {}.

    A value wrapped in matching quotes loses them; commas inside quotes do not split.
    """
    if not text or not text.strip():
        return {}
    out: dict[str, str] = {}
    fields = _split_fields(text, flag)
    for number, field in enumerate(fields, start=1):
        if not field.strip():
            continue
        key, sep, value = field.partition("=")
        if not sep or not key.strip():
            # The field is not shown: a key pasted without its name (or after a stray comma) would be.
            after = f" (after {', '.join(out)})" if out else ""
            raise UserError(
                f"{flag}: expected key=value, but field {number} of {len(fields)}{after} has "
                f"{'no name before its =' if sep else 'no ='} "
                '(quote values holding commas: answer="1, 2, 3")'
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        key = key.strip()
        if key in out:  # the values are not shown: one of them may be a key
            raise UserError(f"{flag}: {key!r} is given twice; give each argument once")
        out[key] = value
    return out


def at_least(minimum: int | float, default: object = None) -> Any:
    """A settings field whose numeric model argument must be at least `minimum` (e.g. a context length)."""
    return dataclasses.field(default=default, metadata={MINIMUM: minimum})


def typed(value: str) -> Any:
    """A `--gen_kwargs` value as int, float, bool or None where it reads as one, else the string."""
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def convert(value: str, annotation: object, name: str, backend: str) -> Any:
    """One model argument, from its string, as its field's annotation says."""
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    if type(None) in options and value.strip().lower() in ("", "none", "null"):
        return None
    kinds = [t for t in options if t is not type(None)]
    kind = kinds[0] if kinds else str
    try:
        if kind is bool:
            lowered = value.strip().lower()
            if lowered in TRUE | FALSE:
                return lowered in TRUE
            raise ValueError("expected true or false")
        if kind is int:
            return int(value)
        if kind is float:
            number = float(value)
            if not math.isfinite(number):
                raise ValueError("expected a finite number")
            return number
        return value
    except ValueError as err:
        if is_secret_name(name):  # its value is not shown, whatever its type
            raise ValueError(f"{backend} backend: model argument {name}: not a valid {kind.__name__}") from None
        raise ValueError(f"{backend} backend: model argument {name}={value!r}: {err}") from None


def check_minimum(value: object, minimum: int | float, name: str, backend: str) -> Any:
    """`value`, or a `ValueError` naming the argument when it is a number below `minimum`."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value < minimum:
        need = "must not be negative" if minimum == 0 else f"must be at least {minimum}"
        raise ValueError(f"{backend} backend: model argument {name}={value!r}: {need}")
    return value


def settings_from_args(
    cls: type[S], args: Mapping[str, object], backend: str, aliases: Mapping[str, str] | None = None
) -> S:
    """Build the settings dataclass `cls` from `--model_args` strings; raise `ValueError` naming the argument."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if f.init}
    values: dict[str, Any] = {}
    for raw_name, raw in args.items():
        name = (aliases or {}).get(raw_name, raw_name)
        if name not in known:
            raise ValueError(
                f"{backend} backend: unknown model argument {raw_name!r}; known: {', '.join(sorted(known))}"
            )
        if name in values:
            raise ValueError(f"{backend} backend: model argument {name!r} given twice (as {raw_name!r})")
        required = _required(known[name])
        # (an empty value is no `none`: the hf screen's `pretrained=""` is "no checkpoint named")
        if required and isinstance(raw, str) and raw.strip().lower() in ("none", "null"):
            raise ValueError(
                f"{backend} backend: model argument {raw_name}={raw!r}: {name} cannot be none, give a value"
            )
        value = convert(raw, hints[name], raw_name, backend) if isinstance(raw, str) else raw
        values[name] = check_minimum(value, known[name].metadata.get(MINIMUM, 0), raw_name, backend)
    missing = [name for name, field in known.items() if _required(field) and name not in values]
    if missing:
        given = " ".join(f"--model_args {name}=..." for name in missing)
        raise ValueError(f"{backend} backend: model argument {', '.join(missing)} is required: give {given}")
    return cls(**values)


def _required(field: dataclasses.Field[object]) -> bool:
    """A field the settings cannot be built without (no default), which no `none` can stand for."""
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
