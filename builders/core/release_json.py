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
