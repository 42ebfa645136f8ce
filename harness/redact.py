"""Keep credentials out of everything the harness writes: results, journals, logs and the terminal.

Secrets are known by name and found by value:
- a model argument whose name says so (`api_key`, `hf_token`, `client_secret`, `password`, ...; names that
  merely contain the word, like `max_batch_tokens` or `token_param`, are not secrets);
- the credentials inside any URL argument (`http://user:KEY@host/v1`);
- every environment variable with such a name (`OPENAI_API_KEY`, `HF_TOKEN`, ...), as a server error may
  quote the key the client read from it.
A run registers its secrets once (`register`); `scrub` then removes each secret's value wherever it
appears, and `scrubbed_output` does so for everything printed. Mappings written out (results' `config`)
also get secret-named values replaced by `redact_mapping`.
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

REDACTED = "<redacted>"
_SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|passw(or)?d|credential|bearer|authorization|(^|[_-])(key|token|auth)$)", re.IGNORECASE
)
_URL_CREDENTIALS = re.compile(r"[a-z][a-z0-9+.-]*://(?P<userinfo>[^/@\s]+)@", re.IGNORECASE)
# Shorter values are not scrubbed by value (a key "k" or "EMPTY", as `vllm serve` clients pass, would blank out
# every such letter or word of the results); secret-named fields are still redacted by name, whatever their length.
MIN_ENV_SECRET = 8


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


def _strings(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for key, value in values.items():
        if isinstance(value, Mapping):
            yield from _strings(value)
        elif isinstance(value, str) and value:
            yield str(key), value


def url_credentials(text: str) -> list[str]:
    """The secret of every URL in `text` that carries credentials: the password of `user:password@`, or the
    whole `token@` (the user name alone is not secret)."""
    found = []
    for match in _URL_CREDENTIALS.finditer(text):
        userinfo = match["userinfo"]
        found.append(userinfo.split(":", 1)[1] if ":" in userinfo else userinfo)
    return [f for f in found if f]


def secret_values(values: Mapping[str, Any]) -> list[str]:
    """The values of secret-named entries (at any depth), longest first."""
    found = [value for key, value in _strings(values) if is_secret_name(key)]
    return sorted(set(found), key=lambda value: (-len(value), value))


def collect_secrets(values: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret of a run: secret-named arguments, URL credentials, secret-named environment variables."""
    found = set(secret_values(values))
    for _, value in _strings(values):
        found.update(url_credentials(value))
    for name, value in (os.environ if environ is None else environ).items():
        if is_secret_name(name) and len(value) >= MIN_ENV_SECRET:
            found.add(value)
    return sorted(found, key=lambda value: (-len(value), value))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


class _Registry:
    def __init__(self) -> None:
        self.secrets: list[str] = []
        self.lock = threading.Lock()


_REGISTRY = _Registry()


def register(secrets: Iterable[str]) -> None:
    """Add secrets that `scrub` removes from now on (longest first, so a secret containing another goes whole)."""
    with _REGISTRY.lock:
        merged = set(_REGISTRY.secrets) | {s for s in secrets if len(s) >= MIN_ENV_SECRET}
        _REGISTRY.secrets = sorted(merged, key=lambda value: (-len(value), value))


def scrub(text: str) -> str:
    """`text` with every registered secret replaced by `<redacted>`."""
    return redact_text(text, _REGISTRY.secrets) if _REGISTRY.secrets else text


class ScrubbingStream(io.TextIOBase):
    """A text stream that scrubs what is written before passing it on."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(scrub(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """Scrub everything printed to stdout and stderr (messages, progress bars, logging) while inside."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingStream(saved[0]), ScrubbingStream(saved[1])  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
