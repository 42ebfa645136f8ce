"""`openai` backend: any OpenAI-compatible chat-completions server (OpenAI, Azure OpenAI, `vllm serve`,
gateways).

    harness --model openai --model_args model=gpt-4o,image_detail=high,concurrency=16 ...
    harness --model openai --model_args model=Qwen/Qwen2.5-VL-7B-Instruct,base_url=http://localhost:8000/v1

Images go as base64 data URLs of the dataset's own encoded bytes (the MIME type read from the bytes'
magic number): no decoding, no PNG re-encoding. Requests run concurrently (a thread pool over one
httpx client, `concurrency` at a time). 429, 5xx, timeouts and dropped connections are retried with
exponential backoff and jitter, honouring `Retry-After`; other 4xx are not retried. Whatever goes
wrong with one sample (a refusal, a content filter, a provider error, a malformed body) becomes that
sample's `Response(text=None, error=...)`; `generate` never raises for it. Authentication and
"model not found" answers (401/403/404), and a server still unreachable after every retry, concern
every sample: the rest of the batch is not sent and `generate` raises `BackendFatalError` carrying the
responses it did get, so the runner keeps them and stops the run.
"""

from __future__ import annotations

import base64
import email.utils
import importlib.util
import ipaddress
import logging
import os
import random
import threading
import time
import types
import typing
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

from harness.api import BackendFatalError, ImagePart, ImageRef, Model, Request, Response, TextPart
from harness.models.registry import register_model

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})
FATAL_STATUSES = frozenset({401, 403, 404})
MAX_RETRY_AFTER = 300.0  # never sleep longer than this on a server's say-so


# --- `--model_args` parsing (strings -> typed settings dataclass) -------------------------------

def _convert(value: str, annotation: Any, name: str, backend: str) -> Any:
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    if type(None) in options and value.strip().lower() in ("", "none", "null"):
        return None
    kinds = [t for t in options if t is not type(None)]
    kind = kinds[0] if kinds else str
    try:
        if kind is bool:
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if kind is int:
            return int(value)
        if kind is float:
            return float(value)
        return value
    except ValueError as err:
        raise ValueError(f"{backend} backend: model argument {name}={value!r}: {err}") from None


def settings_from_args(cls: type, args: Mapping[str, str], backend: str, aliases: Mapping[str, str] | None = None) -> Any:
    """Build the settings dataclass `cls` from `--model_args` strings; unknown names are an error."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in fields(cls) if f.init}
    values: dict[str, Any] = {}
    for raw_name, raw in args.items():
        name = (aliases or {}).get(raw_name, raw_name)
        if name not in known:
            raise ValueError(f"{backend} backend: unknown model argument {raw_name!r}; known: {', '.join(sorted(known))}")
        if name in values:
            raise ValueError(f"{backend} backend: model argument {name!r} given twice (as {raw_name!r})")
        values[name] = _convert(str(raw), hints[name], raw_name, backend) if isinstance(raw, str) else raw
    try:
        return cls(**values)
    except TypeError as err:  # a required argument is missing
        raise ValueError(f"{backend} backend: {err}") from None


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
    data = image.data()
    mime = image_mime_type(data)
    if mime is None:
        raise ValueError(f"image {image.sha256[:12]}: unrecognised encoding (starts with {data[:8].hex()})")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def build_messages(request: Request, image_detail: str | None = None) -> list[dict[str, Any]]:
    """Chat-completions messages: roles and content parts in the request's order; images inline."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        has_image = any(isinstance(p, ImagePart) for p in message.content)
        if not has_image and message.role in ("system", "assistant"):
            # Plain strings: some servers accept part lists only in user turns.
            out.append({"role": message.role, "content": "".join(p.text for p in message.content)})
            continue
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                if part.text:  # an empty text part is rejected by some servers and means nothing
                    parts.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                image_url: dict[str, Any] = {"url": image_data_url(part.image)}
                if image_detail:
                    image_url["detail"] = image_detail
                parts.append({"type": "image_url", "image_url": image_url})
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        out.append({"role": message.role, "content": parts})
    if request.assistant_prefix:
        out.append({"role": "assistant", "content": request.assistant_prefix})
    return out


# --- response parsing (pure) ---------------------------------------------------------------------

def _flatten_usage(usage: Any, prefix: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    if not isinstance(usage, Mapping):
        return out
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            out[prefix + str(key)] = value
        elif isinstance(value, Mapping):
            out.update(_flatten_usage(value, f"{prefix}{key}."))
    return out


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # some gateways answer with a list of text parts
        texts = []
        for part in content:
            if not (isinstance(part, Mapping) and part.get("type", "text") in ("text", "output_text")
                    and isinstance(part.get("text"), str)):
                raise ValueError(f"message.content holds a non-text part: {str(part)[:100]}")
            texts.append(part["text"])
        return "".join(texts)
    raise ValueError(f"message.content of type {type(content).__name__}")


def _error_message(body: Any) -> tuple[str, str | None]:
    """(message, code) from an OpenAI-style error body, or its text."""
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


def parse_completion(body: Any) -> Response:
    """One chat-completions body -> Response (refusals and malformed bodies become per-sample errors)."""
    try:
        if not isinstance(body, Mapping):
            raise ValueError(f"body is {type(body).__name__}, not an object")
        if "error" in body and not body.get("choices"):
            message, _ = _error_message(body)
            return Response(text=None, error=f"provider_error: {message}")
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
            return Response(text=None, error=f"refused: {refusal}", refused=True, finish_reason=finish_reason, usage=usage)
        if finish_reason == "content_filter":
            return Response(text=None, error="refused: the provider's content filter stopped the answer",
                            refused=True, finish_reason=finish_reason, usage=usage)
        text = _content_text(message.get("content"))
        if text is None:
            if finish_reason in ("stop", "length"):
                text = ""  # the model produced nothing (e.g. a reasoning model spent its whole budget)
            else:
                return Response(text=None, error=f"empty_response: no content (finish_reason={finish_reason})",
                                finish_reason=finish_reason, usage=usage)
        return Response(text=text, finish_reason=finish_reason, usage=usage)
    except (ValueError, TypeError, AttributeError) as err:
        return Response(text=None, error=f"malformed_response: {err}")


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
    except (TypeError, ValueError):
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


# --- the backend -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpenAIChatSettings:
    model: str  # the name the server knows the model by (for Azure, the default deployment)
    base_url: str | None = None  # default: $OPENAI_BASE_URL, else the OpenAI API
    api_key: str | None = field(default=None, repr=False)  # default: $OPENAI_API_KEY ($AZURE_OPENAI_API_KEY)
    concurrency: int = 8
    timeout: float = 120.0  # seconds per attempt
    max_retries: int = 6
    backoff: float = 1.0  # first retry delay (seconds); doubles each attempt, with jitter
    max_backoff: float = 60.0
    image_detail: str | None = None  # "low" | "high" | "auto"; MMNeedle's official code uses "high"
    token_param: str = "auto"  # "max_tokens" | "max_completion_tokens" | "auto" (the latter for api.openai.com)
    api_version: str | None = None  # set for Azure OpenAI (deployment URLs, `api-key` header)
    deployment: str | None = None  # Azure deployment name, default: model
    context_length: int | None = None
    max_images: int | None = None
    # The server's pixel cap per image (e.g. `vllm serve --mm-processor-kwargs`), used only to count
    # vision tokens when screening prompts against context_length; nothing is resized here.
    max_pixels: int | None = None
    chunk_size: int | None = None  # requests per runner batch; default max(batch_size, 4 * concurrency)
    continue_final_message: bool = False  # send vLLM's prefill flags when a request has an assistant prefix
    send_seed: bool = True
    send_temperature: bool = True  # false for models that reject it (OpenAI's reasoning models)

    def __post_init__(self) -> None:
        for name in ("concurrency", "max_retries", "timeout", "backoff", "max_backoff"):
            value = getattr(self, name)
            if value < (1 if name == "concurrency" else 0):
                raise ValueError(f"openai backend: {name} must be {'at least 1' if name == 'concurrency' else 'non-negative'}, got {value}")
        if self.token_param not in ("auto", "max_tokens", "max_completion_tokens"):
            raise ValueError(f"openai backend: token_param must be auto, max_tokens or max_completion_tokens, got {self.token_param!r}")
        if self.image_detail not in (None, "low", "high", "auto"):
            raise ValueError(f"openai backend: image_detail must be low, high or auto, got {self.image_detail!r}")


@register_model("openai")
class OpenAIChatModel(Model):
    def __init__(self, settings: OpenAIChatSettings, *, batch_size: int = 1) -> None:
        if importlib.util.find_spec("httpx") is None:
            raise ImportError("the openai backend needs httpx: pip install 'mmlongeval[openai]'")
        self.settings = settings
        azure = settings.api_version is not None
        base_url = (settings.base_url or (os.environ.get("AZURE_OPENAI_ENDPOINT") if azure else None)
                    or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"openai backend: base_url {self.base_url!r} is not an http(s) URL")
        api_key = settings.api_key or (os.environ.get("AZURE_OPENAI_API_KEY") if azure else None) or os.environ.get("OPENAI_API_KEY")
        if not api_key and not is_loopback(self.base_url):
            var = "AZURE_OPENAI_API_KEY" if azure else "OPENAI_API_KEY"
            raise ValueError(
                f"openai backend: no API key for {self.base_url}; set {var} or pass api_key=... in --model_args "
                "(only a loopback server may be used without one)"
            )
        self._api_key = api_key
        if azure:
            deployment = settings.deployment or settings.model
            self.url = f"{self.base_url}/openai/deployments/{deployment}/chat/completions"
            self._params = {"api-version": settings.api_version}
        else:
            self.url = f"{self.base_url}/chat/completions"
            self._params = {}
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            if azure:
                self._headers["api-key"] = api_key
            else:
                self._headers["Authorization"] = f"Bearer {api_key}"
        token_param = settings.token_param
        if token_param == "auto":
            token_param = "max_completion_tokens" if parts.hostname == "api.openai.com" else "max_tokens"
        self.token_param = token_param
        self.context_length = settings.context_length
        self.max_images = settings.max_images
        self.max_pixels = settings.max_pixels
        self.batch_size = settings.chunk_size or max(batch_size, 4 * settings.concurrency)
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._fatal: str | None = None
        self._client = None
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> OpenAIChatModel:
        settings = settings_from_args(OpenAIChatSettings, args, "openai", aliases={"pretrained": "model"})
        return cls(settings, batch_size=batch_size)

    def identity(self) -> dict[str, Any]:
        s = self.settings
        parts = urlsplit(self.base_url)
        return {
            "model": "openai",
            "server": f"{parts.hostname}{parts.path}",
            "served_model": s.model,
            "deployment": s.deployment if s.api_version else None,
            "api_version": s.api_version,
            "image_detail": s.image_detail,
            "token_param": self.token_param,
            "continue_final_message": s.continue_final_message,
        }

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        for start in range(0, len(requests), self.batch_size):
            yield list(requests[start : start + self.batch_size])

    # -- payloads ---------------------------------------------------------------------------------

    def payload(self, request: Request) -> dict[str, Any]:
        s = request.settings
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": build_messages(request, self.settings.image_detail),
            self.token_param: s.max_gen_toks,
        }
        if self.settings.send_temperature:
            body["temperature"] = s.temperature if s.do_sample else 0.0
        if s.do_sample and s.top_p != 1.0:
            body["top_p"] = s.top_p
        if s.until:
            body["stop"] = list(s.until)
        if s.seed is not None and self.settings.send_seed:
            body["seed"] = s.seed
        if request.assistant_prefix and self.settings.continue_final_message:
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    # -- HTTP -------------------------------------------------------------------------------------

    def _http(self):
        if self._client is None:
            import httpx

            limits = httpx.Limits(max_connections=self.settings.concurrency, max_keepalive_connections=self.settings.concurrency)
            self._client = httpx.Client(timeout=httpx.Timeout(self.settings.timeout), limits=limits)
            self._pool = ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="openai")
        return self._client

    def _count(self, key: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[key] += n

    def _backoff(self, attempt: int) -> float:
        delay = min(self.settings.max_backoff, self.settings.backoff * (2 ** attempt))
        return delay * random.uniform(0.5, 1.0)

    def _send(self, request: Request) -> Response:
        import httpx

        if self._fatal:
            return Response(text=None, error=f"not_sent: {self._fatal}")
        if self.max_images is not None and request.num_images > self.max_images:
            return Response(text=None, error=f"too_many_images: {request.num_images} > max_images={self.max_images}")
        try:
            body = self.payload(request)
        except (ValueError, TypeError, OSError) as err:
            return Response(text=None, error=f"invalid_input: {err}")
        client = self._http()
        last = "no attempt made"
        unreachable = False
        for attempt in range(self.settings.max_retries + 1):
            if attempt:
                self._count("retries")
            self._count("attempts")
            wait: float | None = None
            try:
                reply = client.post(self.url, json=body, headers=self._headers, params=self._params)
            except httpx.TimeoutException as err:
                last, unreachable = f"timeout after {self.settings.timeout:g}s ({type(err).__name__})", False
            except httpx.TransportError as err:
                last = f"connection error: {type(err).__name__}: {err}"
                unreachable = isinstance(err, httpx.ConnectError)
            else:
                unreachable = False
                status = reply.status_code
                try:
                    data = reply.json()
                except ValueError:
                    data = None
                if status == 200:
                    if data is None:
                        return Response(text=None, error=f"malformed_response: body is not JSON: {reply.text[:200]!r}")
                    response = parse_completion(data)
                    if response.refused:
                        self._count("refusals")
                    return response
                message, code = _error_message(data if data is not None else reply.text)
                if status in RETRY_STATUSES:
                    last = f"HTTP {status}: {message}"
                    wait = retry_after_seconds(reply.headers)
                elif status in FATAL_STATUSES:
                    self._fatal = f"HTTP {status} from {self.url}: {message}"
                    return Response(text=None, error=f"provider_error: HTTP {status}: {message}")
                else:
                    refused = code in ("content_filter", "ResponsibleAIPolicyViolation", "content_policy_violation")
                    if refused:
                        self._count("refusals")
                    prefix = "refused" if refused else "provider_error"
                    return Response(text=None, error=f"{prefix}: HTTP {status}: {message}", refused=refused)
            if attempt == self.settings.max_retries:
                break
            delay = min(wait, MAX_RETRY_AFTER) if wait is not None else self._backoff(attempt)
            log.warning("openai: %s; retry %d/%d in %.1fs", last, attempt + 1, self.settings.max_retries, delay)
            time.sleep(delay)
        self._count("failures")
        if unreachable:  # still no connection after every retry: the server is down, not this sample
            self._fatal = f"cannot connect to {self.url} ({last})"
        return Response(text=None, error=f"provider_error: gave up after {self.settings.max_retries + 1} attempts: {last}")

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if self._fatal:
            raise BackendFatalError(f"openai backend stopped: {self._fatal}")
        if not requests:
            return []
        self._http()
        assert self._pool is not None
        futures = [self._pool.submit(self._send, r) for r in requests]
        results = []
        for future in futures:
            try:
                results.append(future.result())
            except Exception as err:  # a bug in one sample's handling must not lose the batch
                log.exception("openai: unexpected error")
                results.append(Response(text=None, error=f"error: {type(err).__name__}: {err}"))
        self._count("requests", len(requests))
        if self._fatal:
            # Stop now, not one batch later (a small run would otherwise end "successfully" with every
            # sample failed); what this batch did get is handed over to be saved.
            kept = [None if (r.error or "").startswith("not_sent:") else r for r in results]
            raise BackendFatalError(f"openai backend stopped: {self._fatal}", kept)
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._client is not None:
            self._client.close()
            self._client = None
