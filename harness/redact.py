"""Keep credentials out of everything the harness writes: results, journals, sample logs, the judge log,
the response cache, the lock file, logs and the terminal.

Secrets are known by name and found by value:
- a model or judge argument whose name says so (`api_key`, `hf_token`, `client_secret`, `password`, ...;
  names that merely contain the word, like `max_batch_tokens` or `token_param`, are not secrets);
- the credentials inside any URL, in an argument or in the environment (`http://user:KEY@host/v1`, and a
  secret-named query parameter such as `?api-key=KEY`);
- every environment variable with such a name (`OPENAI_API_KEY`, `HF_TOKEN`, ...), as a server error may
  quote the key the client read from it.
A run collects its secrets once, before it writes anything (`collect_secrets`), and registers them
(`register`). A secret is then removed in every form it can take on its way out (`encodings`): as is,
percent-decoded and URL-encoded, JSON-escaped (once or twice), as Python's repr writes it, base64, and the
HTTP basic-auth token (`base64(user:KEY)`) a URL's credentials become in a request header. `scrub` does so
for text, every file the harness writes goes through it, and `scrubbed_output` applies it to everything
printed. Mappings written out (results' `config`) also get secret-named values replaced by
`redact_mapping`, and a command line (lock file, results) gets them replaced by name by `redact_command`,
whatever their length.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any, TextIO
from urllib.parse import quote, quote_plus, unquote

REDACTED = "<redacted>"
_SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|passw(or)?d|credential|bearer|authorization|(^|[_-])(key|token|auth)$)", re.IGNORECASE
)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@", re.IGNORECASE)
_URL_QUERY_PARAM = re.compile(r"[?&](?P<name>[^=&#\s]+)=(?P<value>[^&#\s]*)")
# Shorter values are not scrubbed by value (a key "k" or "EMPTY", as `vllm serve` clients pass, would blank out
# every such letter or word of the results); secret-named fields are still redacted by name, whatever their length.
MIN_ENV_SECRET = 8


# A prompt style's `text_key` (the key a text part's text goes under, "text") ends like a key's name but names a
# field of the message the template is given, not a credential.
_NOT_SECRET = frozenset({"text_key"})


def is_secret_name(name: str) -> bool:
    return name.lower() not in _NOT_SECRET and bool(_SECRET_NAME.search(name))


def redact_mapping(values: Mapping[str, object]) -> dict[str, Any]:
    """A copy with every secret-named value (at any depth) replaced by `<redacted>`, and every URL's credentials,
    whatever their length."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if is_secret_name(str(key)) and value not in (None, ""):
            out[key] = REDACTED
        elif isinstance(value, Mapping):
            out[key] = redact_mapping(value)
        elif isinstance(value, str) and "://" in value:
            out[key] = redact_urls(value)
        else:
            out[key] = value
    return out


def _strings(values: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    for key, value in values.items():
        if isinstance(value, Mapping):
            yield from _strings(value)
        elif isinstance(value, str) and value:
            yield str(key), value


def url_credentials(text: str) -> list[str]:
    """The secret of every URL in `text` that carries credentials: the password of `user:password@`, or the
    whole `token@` (the user name alone is not secret), and every secret-named query parameter's value."""
    found = []
    for match in _URL_CREDENTIALS.finditer(text):
        userinfo = match["userinfo"]
        found.append(userinfo.split(":", 1)[1] if ":" in userinfo else userinfo)
    if "://" in text:
        found += [m["value"] for m in _URL_QUERY_PARAM.finditer(text) if is_secret_name(unquote(m["name"]))]
    return [f for f in found if f]


def basic_auth_tokens(text: str) -> list[str]:
    """The `Authorization: Basic` token each URL with credentials in `text` becomes in an HTTP client
    (httpx: `base64(unquote(user) + ":" + unquote(password))`), as given and as percent-decoded."""
    tokens = []
    for match in _URL_CREDENTIALS.finditer(text):
        user, _, password = match["userinfo"].partition(":")
        for pair in {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}:
            tokens.append(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    return tokens


def secret_values(values: Mapping[str, object]) -> list[str]:
    """The values of secret-named entries (at any depth), longest first."""
    found = [value for key, value in _strings(values) if is_secret_name(key)]
    return _longest_first(found)


def _longest_first(values: Iterable[str]) -> list[str]:
    return sorted(set(values), key=lambda value: (-len(value), value))


def collect_secrets(values: Mapping[str, object], environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret of a run: secret-named arguments, URL credentials (and the basic-auth tokens they become)
    in arguments and in the environment, secret-named environment variables. Longest first."""
    found = set(secret_values(values))
    environ = os.environ if environ is None else environ
    texts = [value for _, value in _strings(values)] + [value for value in environ.values() if "://" in value]
    for text in texts:
        found.update(url_credentials(text))
        found.update(basic_auth_tokens(text))
    for name, value in environ.items():
        if is_secret_name(name) and len(value) >= MIN_ENV_SECRET:
            found.add(value)
    return _longest_first(found)


def _json_escaped(text: str) -> set[str]:
    return {json.dumps(text, ensure_ascii=ascii)[1:-1] for ascii in (True, False)}


def encodings(secret: str) -> set[str]:
    """Every form of `secret` a run might write: as is and percent-decoded; URL-encoded; base64 (standard and
    URL-safe, padded or not); each of those JSON-escaped once and twice (a JSON error body quoted inside a
    journal's JSON) and as Python's repr writes it."""
    plain = {secret, unquote(secret)}
    forms = set(plain)
    for text in plain:
        forms |= {quote(text, safe=""), quote(text), quote_plus(text)}
        raw = text.encode("utf-8")
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            forms |= {encoded.decode("ascii"), encoded.decode("ascii").rstrip("=")}
    for text in list(forms):
        for once in _json_escaped(text):
            forms |= {once, *_json_escaped(once)}
        forms.add(repr(text)[1:-1])
    return {form for form in forms if len(form) >= MIN_ENV_SECRET}


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def redact_urls(text: str) -> str:
    """`text` with the credentials of every URL in it replaced where they stand (`http://user:<redacted>@host`,
    `?api-key=<redacted>`), whatever their length."""

    def userinfo(match: re.Match[str]) -> str:
        user, colon, _ = match["userinfo"].partition(":")
        return f"{match['scheme']}{user}{colon}{REDACTED}@" if colon else f"{match['scheme']}{REDACTED}@"

    def parameter(match: re.Match[str]) -> str:
        if not is_secret_name(unquote(match["name"])) or not match["value"]:
            return match[0]
        return match[0][: match.start("value") - match.start()] + REDACTED

    text = _URL_CREDENTIALS.sub(userinfo, text)
    return _URL_QUERY_PARAM.sub(parameter, text) if "://" in text else text


def redact_pairs(text: str) -> str:
    """A `k=v,k2=v2` string (`--model_args`) fit for a message: every secret-named value and URL credential replaced."""

    def pair(match: re.Match[str]) -> str:
        return match[0] if not is_secret_name(match["key"].strip()) else f"{match['lead']}{match['key']}={REDACTED}"

    return redact_urls(re.sub(r"(?P<lead>^|,)(?P<key>[^=,]+)=(?P<value>\"[^\"]*\"|'[^']*'|[^,]*)", pair, text))


def command_line_secrets(argv: Iterable[str]) -> list[str]:
    """Every secret a command line holds, found before any of it is parsed (so that not even a message about a
    typo in it shows one): secret-named `key=value` values anywhere in an argument (quoted or not, as
    `--model_args` and `--judge_args` carry them), URL credentials and the basic-auth tokens they become."""
    found: set[str] = set()
    for arg in map(str, argv):
        for match in re.finditer(r"(?:^|[,\s])(?P<key>[^=,\s]+)=(?P<value>\"[^\"]*\"?|'[^']*'?|[^,\s]*)", arg):
            if is_secret_name(match["key"].lstrip("-")):
                value = match["value"]
                found |= {value, value.strip("\"'")}
        found.update(url_credentials(arg))
        found.update(basic_auth_tokens(arg))
    return _longest_first(f for f in found if f)


def _redact_arg(arg: str) -> str:
    flag, sep, rest = arg.partition("=") if arg.startswith("-") else ("", "", arg)  # --model_args=k=v,...
    return flag + sep + redact_pairs(rest) if sep else redact_pairs(arg)


def redact_command(argv: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line fit to be written: every known secret (`secrets`, then those registered) removed by
    value, and, whatever its length, every secret-named `key=value` and every URL's credentials."""
    known = _longest_first(s for s in secrets if len(s) >= MIN_ENV_SECRET)  # shorter ones go by name only
    return [scrub(_redact_arg(redact_text(str(arg), known))) for arg in argv]


class _Registry:
    def __init__(self) -> None:
        self.secrets: list[str] = []
        self.pattern: re.Pattern[str] | None = None
        self.lock = threading.Lock()


_REGISTRY = _Registry()


def register(secrets: Iterable[str]) -> None:
    """Add secrets that `scrub` removes from now on, in every form `encodings` gives (longest first, so a
    secret containing another goes whole)."""
    forms = {form for secret in secrets if len(secret) >= MIN_ENV_SECRET for form in encodings(secret)}
    with _REGISTRY.lock:
        merged = _longest_first(set(_REGISTRY.secrets) | forms)
        if merged != _REGISTRY.secrets:
            _REGISTRY.secrets = merged
            _REGISTRY.pattern = re.compile("|".join(re.escape(form) for form in merged)) if merged else None


def scrub(text: str) -> str:
    """`text` with every registered secret, in every form, replaced by `<redacted>`."""
    pattern = _REGISTRY.pattern
    return pattern.sub(REDACTED, text) if pattern is not None else text


_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: object, **kwargs: Any) -> str:
    """`json.dumps(value, **kwargs)` (`default=str`), scrubbed: how every JSON the harness writes is made. A lone
    surrogate (a server's `"\\ud800"`, a journal's) stays the JSON escape it came as, so the text encodes as UTF-8."""
    kwargs.setdefault("default", str)
    text = json.dumps(value, **kwargs)
    if not kwargs.get("ensure_ascii", True):
        text = _SURROGATE.sub(lambda match: f"\\u{ord(match[0]):04x}", text)
    return scrub(text)


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
    def encoding(self) -> str:  # type: ignore[override]  # the wrapped stream's, over TextIOBase's attribute
        return getattr(self.inner, "encoding", "utf-8")


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """Scrub everything printed to stdout and stderr (messages, progress bars) while inside, and every log
    message as it is made, whichever handler (one holding the original stderr, a file) writes it. A record factory
    set over ours meanwhile stays (and ours inside it): vLLM's adds the field its log format reads, and without it every
    line vLLM logs after the run (its shutdown's, at exit) is a `--- Logging error ---` traceback."""
    saved = sys.stdout, sys.stderr
    make_record = logging.getLogRecordFactory()

    def scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        if _REGISTRY.pattern is not None:
            with suppress(Exception):  # a malformed call: left for the handler to report, as logging does
                record.msg, record.args = scrub(record.getMessage()), None
        return record

    sys.stdout, sys.stderr = ScrubbingStream(saved[0]), ScrubbingStream(saved[1])
    logging.setLogRecordFactory(scrubbed_record)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        if logging.getLogRecordFactory() is scrubbed_record:
            logging.setLogRecordFactory(make_record)
