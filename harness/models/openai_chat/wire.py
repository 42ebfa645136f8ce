"""The chat-completions wire format, pure functions: request messages from a `Request` (images as
base64 data URLs of their own encoded bytes), a response body to a `Response` (refusals, content
filters and malformed bodies become per-sample errors), and `Retry-After` parsing."""

from __future__ import annotations

import base64
import email.utils
import io
import ipaddress
import json
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from PIL import Image

from harness.api import ImagePart, ImageRef, Request, Response, TextPart
from harness.sent import Sent, sent_images

# --- request building (pure) ---------------------------------------------------------------------


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


def image_data_url(image: ImageRef) -> str:
    """The image's own bytes as a data URL, once they are known to decode (a server might accept bytes
    that no model can see, and the answer would be scored as if it had)."""
    data = image.data()
    mime = image_mime_type(data)
    if mime is None:
        raise ValueError(f"image {image.sha256[:12]}: unrecognised encoding (starts with {data[:8].hex()})")
    try:
        with Image.open(io.BytesIO(data)) as decoded:
            decoded.load()
    except Exception as err:  # Pillow raises OSError, SyntaxError, ValueError, ... for broken files
        raise ValueError(f"image {image.sha256[:12]} does not decode: {type(err).__name__}: {err}") from None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def build_messages(
    request: Request,
    image_detail: str | None = None,
    prefill: bool = False,
    url: Callable[[ImageRef], str] | None = None,
) -> list[dict[str, Any]]:
    """Chat-completions messages: roles and content parts in the request's order; images inline. The answer prefix
    is a final assistant message only with `prefill` (a server that continues it, as `vllm serve` does with
    `continue_final_message`): an API that does not would answer after an extra assistant turn, where the official
    wrappers send the user turn only. `url`: how an image is named (default: its bytes inline, a data URL)."""
    url = url or image_data_url
    out: list[dict[str, Any]] = []
    for message in request.as_sent:
        has_image = any(isinstance(p, ImagePart) for p in message.content)
        if not has_image and message.role in ("system", "assistant"):
            # Plain strings: some servers accept part lists only in user turns.
            out.append(
                {"role": message.role, "content": "".join(p.text for p in message.content if isinstance(p, TextPart))}
            )
            continue
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                if part.text:  # an empty text part is rejected by some servers and means nothing
                    parts.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                image_url: dict[str, Any] = {"url": url(part.image)}
                if image_detail:
                    image_url["detail"] = image_detail
                parts.append({"type": "image_url", "image_url": image_url})
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        out.append({"role": message.role, "content": parts})
    if request.assistant_prefix and prefill:
        out.append({"role": "assistant", "content": request.assistant_prefix})
    return out


def sent_messages(request: Request, image_detail: str | None, prefill: bool) -> Sent:
    """The messages `build_messages` makes for `request`, as JSON, each image named by its content hash
    (`sha256:<hash>`) where its bytes go, with the detail it is sent at (`harness.sent`)."""
    messages = build_messages(request, image_detail, prefill=prefill, url=lambda ref: f"sha256:{ref.sha256}")
    images = [(image.sha256, image.width, image.height) for image in request.images]
    return Sent(json.dumps(messages, ensure_ascii=False), sent_images(images, {"image_detail": image_detail}))


# --- response parsing (pure) ---------------------------------------------------------------------


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


def _flatten_usage(usage: object, prefix: str = "", depth: int = 0) -> dict[str, int]:
    out: dict[str, int] = {}
    if not isinstance(usage, Mapping) or depth > 4:  # token counts nest a level or two; deeper is not usage
        return out
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            out[prefix + str(key)] = value
        elif isinstance(value, Mapping):
            out.update(_flatten_usage(value, f"{prefix}{key}.", depth + 1))
    return out


def _content_text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # some gateways answer with a list of text parts
        texts = []
        for part in content:
            if not (
                isinstance(part, Mapping)
                and part.get("type", "text") in ("text", "output_text")
                and isinstance(part.get("text"), str)
            ):
                raise ValueError(f"message.content holds a non-text part: {str(part)[:100]}")
            texts.append(part["text"])
        return "".join(texts)
    raise ValueError(f"message.content of type {type(content).__name__}")


def error_message(body: object) -> tuple[str, str | None]:
    """(message, code) from an OpenAI-style error body, or its text; at most 500 characters of each."""
    try:
        message, code = _error_message(body)
    except RecursionError:
        return "an error body nested too deeply to read", None
    return message[:500], (code[:500] if code is not None else None)


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
    return str(body)[:500], None


def parse_completion(body: object) -> Response:
    """One chat-completions body -> Response (refusals and malformed bodies become per-sample errors)."""
    try:
        if not isinstance(body, Mapping):
            raise ValueError(f"body is {type(body).__name__}, not an object")
        if "error" in body and not body.get("choices"):
            problem, _ = error_message(body)
            return Response(text=None, error=f"provider_error: {problem}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ValueError("no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise ValueError("choices[0] has no message")
        finish_reason = choice.get("finish_reason")
        finish_reason = str(finish_reason) if finish_reason is not None else None
        usage = _flatten_usage(body.get("usage"))
        refusal = message.get("refusal")
        if refusal:
            return Response(
                text=None, error=f"refused: {refusal}", refused=True, finish_reason=finish_reason, usage=usage
            )
        if finish_reason == "content_filter":
            return Response(
                text=None,
                error="refused: the provider's content filter stopped the answer",
                refused=True,
                finish_reason=finish_reason,
                usage=usage,
            )
        text = _content_text(message.get("content"))
        if text is None:
            if finish_reason in ("stop", "length"):
                text = ""  # the model produced nothing (e.g. a reasoning model spent its whole budget)
            else:
                return Response(
                    text=None,
                    error=f"empty_response: no content (finish_reason={finish_reason})",
                    finish_reason=finish_reason,
                    usage=usage,
                )
        return Response(text=text, finish_reason=finish_reason, usage=usage)
    except (ValueError, TypeError, AttributeError) as err:
        return Response(text=None, error=f"malformed_response: {str(err)[:300]}")
    except RecursionError:  # a value nested too deeply to print or walk
        return Response(text=None, error="malformed_response: a value nested too deeply to read")


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
