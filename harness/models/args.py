"""`--model_args` / `--gen_kwargs` strings: `k=v,k2=v2`, with quotes for values holding commas."""

from __future__ import annotations

from typing import Any

from harness.errors import UserError


def _split_fields(text: str, flag: str) -> list[str]:
    """Split on commas outside single or double quotes."""
    fields, current, quote = [], [], ""
    for char in text:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
            current.append(char)
        elif char == ",":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    if quote:
        raise UserError(f"{flag}: unbalanced {quote} in {text!r}")
    fields.append("".join(current))
    return fields


def parse_kv(text: str | None, flag: str = "--model_args") -> dict[str, str]:
    """`answer="1, 2, 3",seed=0` -> {"answer": "1, 2, 3", "seed": "0"}. Empty text -> {}.

    A value wrapped in matching quotes loses them; commas inside quotes do not split.
    """
    if not text or not text.strip():
        return {}
    out: dict[str, str] = {}
    for field in _split_fields(text, flag):
        if not field.strip():
            continue
        key, sep, value = field.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag}: expected key=value, got {field!r} in {text!r} "
                            '(quote values holding commas: answer="1, 2, 3")')
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


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


def take(args: dict[str, str], key: str, kind: type, default: Any = None, *, model: str) -> Any:
    """Pop `key` from parsed model args as `kind`; a bad value is a UserError naming the argument."""
    if key not in args:
        return default
    raw = args.pop(key)
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no"):
            raise UserError(f"--model_args {key}={raw!r} for {model}: expected true or false")
        return lowered in ("true", "1", "yes")
    try:
        return kind(raw)
    except ValueError:
        raise UserError(f"--model_args {key}={raw!r} for {model}: expected {kind.__name__}") from None


def reject_unknown(args: dict[str, str], model: str, known: list[str]) -> None:
    if args:
        raise UserError(f"--model_args: unknown argument(s) {sorted(args)} for {model}; known: {', '.join(sorted(known))}")
