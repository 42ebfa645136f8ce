"""What every API backend reads the same way, pure functions: an image's MIME type from its bytes (and the bytes
checked to decode before they are sent), a reply body as JSON whatever its bytes, a provider's error message and
code, token usage flattened, `Retry-After` in its three forms, and whether a URL is on this machine. A provider's
text (an error body, a batch's status) is cut to an `excerpt` before it is printed or recorded: a server may answer
a megabyte where a sentence was expected."""

from __future__ import annotations

import email.utils
import io
import ipaddress
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from PIL import Image

from harness.api import ImageRef, Response


def image_mime_type(data: bytes) -> str | None:
    """MIME type from the magic number of encoded image bytes, or None if not recognised."""
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:2] == b"BM":
        return "image/bmp"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    return None


T = TypeVar("T")

EXCERPT_MOST = 500  # characters: a provider's error sentence, with its code and a request id, fits


def excerpt(text: object, most: int = EXCERPT_MOST) -> str:
    """`text` as it is when at most `most` characters; else its first `most` and a note of its full length."""
    said = str(text)
    if len(said) <= most:
        return said
    return f"{said[:most]}... (cut: {len(said):,} characters in all)"


def checked_image(image: ImageRef) -> tuple[str, bytes]:
    """(MIME type, the image's own bytes), once they are known to decode (a server might accept bytes that no model
    can see, and the answer would be scored as if it had)."""
    mime, data, _ = decoded_image(image, lambda decoded: decoded.load())
    return mime, data


def decoded_image(image: ImageRef, use: Callable[[Image.Image], T]) -> tuple[str, bytes, T]:
    """(MIME type, the image's own bytes, what `use` made of it decoded): its one decode, in an encoding a server
    recognises; a ValueError naming the image where it has none or does not decode."""
    data = image.data()
    mime = image_mime_type(data)
    if mime is None:
        raise ValueError(f"image {image.sha256[:12]}: unrecognised encoding (starts with {data[:8].hex()})")
    try:
        with Image.open(io.BytesIO(data)) as decoded:
            made = use(decoded)
    except Exception as err:  # Pillow raises OSError, SyntaxError, ValueError, ... for broken files
        raise ValueError(f"image {image.sha256[:12]} does not decode: {type(err).__name__}: {err}") from None
    return mime, data, made


def parse_body(raw: bytes) -> tuple[Any, str | None]:
    """(a response body's JSON value, None), or (None, why it is not JSON): never an exception, whatever the
    bytes (not UTF-8, not JSON, nested deeper than the parser goes)."""
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError as err:
        return None, f"body is not UTF-8 ({err.reason} at byte {err.start})"
    except ValueError:
        return None, f"body is not JSON: {raw[:200].decode('utf-8', 'replace')!r}"
    except RecursionError:
        return None, "body is JSON nested too deeply to read"


MOST_TOKENS = 2**53  # a token count past this (or below 0) is no count: its price would overflow a float


def flatten_usage(usage: object, prefix: str = "", depth: int = 0) -> dict[str, int]:
    """A reply's token counts by their dotted key; a value that is no count (negative, past `MOST_TOKENS`) is left
    out, as a server's garbage, so no bill is priced from it."""
    out: dict[str, int] = {}
    if not isinstance(usage, Mapping) or depth > 4:  # token counts nest a level or two; deeper is not usage
        return out
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            if 0 <= value <= MOST_TOKENS:
                out[prefix + str(key)] = value
        elif isinstance(value, Mapping):
            out.update(flatten_usage(value, f"{prefix}{key}.", depth + 1))
    return out


def refusal(why: str, finish: str | None, usage: dict[str, int]) -> Response:
    """A reply the provider refused to answer, saying `why`."""
    return Response(text=None, error=f"refused: {why}", refused=True, finish_reason=finish, usage=usage)


def text_or_empty(
    text: str | None, finish: str | None, finished: tuple[str, ...], missing: str, usage: dict[str, int]
) -> Response:
    """A reply's answer. One with no text is an empty answer where it finished as `finished` says a model that
    produced nothing does (e.g. a reasoning model that spent its whole budget), else an `empty_response` naming
    what was `missing` and the finish reason."""
    if text is None:
        if finish not in finished:
            return Response(
                text=None,
                error=f"empty_response: {missing} (finish_reason={finish})",
                finish_reason=finish,
                usage=usage,
            )
        text = ""
    return Response(text=text, finish_reason=finish, usage=usage)


def error_message(body: object) -> tuple[str, str | None]:
    """(message, code) from an OpenAI-style error body, or its text; at most 500 characters of each."""
    try:
        message, code = _error_message(body)
    except RecursionError:
        return "an error body nested too deeply to read", None
    return excerpt(message), (excerpt(code) if code is not None else None)


def _error_message(body: object) -> tuple[str, str | None]:
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = str(error.get("message") or error.get("detail") or error)
            code = error.get("code") or error.get("type")
            inner = error.get("innererror")
            if isinstance(inner, Mapping) and inner.get("code"):
                code = inner.get("code")
            return message, (str(code) if code is not None else None)
        return str(error), None
    return str(body), None


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds a server asks us to wait: `retry-after-ms`, `Retry-After` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
