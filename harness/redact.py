"""Keep credentials out of everything the harness writes: results JSON, journal headers, messages.

A model argument is secret when its name says so (`api_key`, `hf_token`, `client_secret`, `password`,
...). Its value is replaced by `<redacted>` in mappings, and removed from free text such as the
recorded command line, wherever it appears. Names that merely contain the word, like
`max_batch_tokens` or `token_param`, are not secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"
_SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|passw(or)?d|credential|bearer|authorization|(^|[_-])(key|token|auth)$)", re.IGNORECASE
)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every secret-named value (at any depth) replaced by `<redacted>`."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if is_secret_name(str(key)) and value not in (None, ""):
            out[key] = REDACTED
        elif isinstance(value, Mapping):
            out[key] = redact_mapping(value)
        else:
            out[key] = value
    return out


def secret_values(values: Mapping[str, Any]) -> list[str]:
    """The values of secret-named entries (at any depth), longest first."""
    found: list[str] = []
    for key, value in values.items():
        if isinstance(value, Mapping):
            found += secret_values(value)
        elif is_secret_name(str(key)) and isinstance(value, str) and value:
            found.append(value)
    return sorted(set(found), key=lambda value: (-len(value), value))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text
