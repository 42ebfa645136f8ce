"""A release's JSON text parsed in one place, so that whatever it holds is a value or one line naming where.

    row = parse_json(line, f"{file}:{number}")

Besides text that is not JSON or not UTF-8, and nesting deeper than Python's recursion allows, JSON can hold a
number Python will not read: an integer of more than 4,300 digits (`sys.get_int_max_str_digits()`, the guard
CPython puts on `int(str)` since 3.11) is a `ValueError` from `json.loads`, not a `JSONDecodeError`. No release
holds one (their ids and counts have a few digits), so it is refused, not read with the guard lifted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from builders.core.errors import BuildError


def parse_json(text: str | bytes, where: str) -> Any:
    """`text` parsed as JSON; anything else is a `BuildError` naming `where` (the file, and the line or row)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BuildError(f"{where}: not valid JSON ({exc})"[:600]) from None
    except RecursionError:
        raise BuildError(f"{where}: not valid JSON (nested too deeply to read)") from None
    except ValueError as exc:  # an integer past the int(str) digit limit
        raise BuildError(
            f"{where}: not valid JSON for a release: it holds an integer of more than "
            f"{sys.get_int_max_str_digits():,} digits, which no release holds and Python does not read "
            f"({str(exc).split(':')[0]})"
        ) from None


def _trimmed(value: object) -> object:
    """`value` (a record as JSON holds it) with every string stripped of the white space at its ends."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {key: _trimmed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trimmed(item) for item in value]
    return value


def refuse_repeats(where: str, records: Iterable[tuple[str, object, str]]) -> None:
    """Each record of the file `where` (its place, "question 7", its value as JSON holds it, and what names it in a
    message, shown to 80 characters) that repeats an earlier one in every field would be built as a second row and scored twice: a
    `BuildError` naming both places. Equal but for white space at the ends of a string (a question with a trailing
    space) is a repeat too, and the line says so."""
    seen: dict[str, tuple[str, str]] = {}
    for place, value, named in records:
        exact = json.dumps(value, sort_keys=True)
        first, first_exact = seen.setdefault(json.dumps(_trimmed(value), sort_keys=True), (place, exact))
        if first != place:
            but = "" if first_exact == exact else " but for white space at the ends of its text"
            raise BuildError(
                f"{where}: {place} repeats {first} in every field{but} ({named:.80}); a question listed twice would be "
                "scored twice"
            )
