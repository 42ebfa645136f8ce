"""`openai` backend: any OpenAI-compatible chat-completions server (OpenAI, Azure OpenAI, `vllm serve`,
gateways).

    harness --model openai --model_args model=gpt-4o,image_detail=high,concurrency=16 ...
    harness --model openai --model_args model=Qwen/Qwen2.5-VL-7B-Instruct,base_url=http://localhost:8000/v1

Images go as base64 data URLs of the dataset's own encoded bytes (the MIME type read from the bytes'
magic number): no decoding, no PNG re-encoding. Requests run concurrently (a thread pool over one
httpx client, `concurrency` at a time). 429, 5xx, timeouts and dropped connections are retried with
exponential backoff and jitter, honouring `Retry-After` up to `max_backoff` (a server's date far ahead never holds a
request longer than the client's own bound); other 4xx are not retried. Whatever goes
wrong with one sample (a refusal, a content filter, a provider error, a malformed body) becomes that
sample's `Response(text=None, error=...)`; `generate` never raises for it. Authentication and
"model not found" answers (401/403/404), and a server still unreachable after every retry, concern
every sample: the rest of the batch is not sent and `generate` raises `BackendFatalError` carrying the
responses it did get, so the runner keeps them and stops the run.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.api import BackendFatalError, Model, ModelFacts, Request, Response, collect
from harness.models.args import at_least, settings_from_args
from harness.models.openai_chat.wire import (
    build_messages,
    error_message,
    is_loopback,
    parse_body,
    parse_completion,
    retry_after_seconds,
)
from harness.models.registry import register_model
from harness.redact import redact_urls

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENDPOINT = "/chat/completions"  # below the base URL (lm-eval's `base_url` names it whole: it is taken off)
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})
FATAL_STATUSES = frozenset({401, 403, 404})


# --- the backend -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenAIChatSettings:
    model: str  # the name the server knows the model by (for Azure, the default deployment)
    base_url: str | None = None  # default: $OPENAI_BASE_URL, else the OpenAI API
    api_key: str | None = field(default=None, repr=False)  # default: $OPENAI_API_KEY ($AZURE_OPENAI_API_KEY)
    concurrency: int = 8
    timeout: float = (
        120.0  # seconds per attempt, the whole of it (connect, send, headers, body), however slow the server
    )
    # The most an answer's body may hold; default 8 bytes per character of the longest answer the request's
    # max_gen_toks allows (`GenerationSettings.max_response_chars`), plus 64 KiB. Over it: refused unread.
    max_response_bytes: int | None = at_least(1)
    max_retries: int = 6
    backoff: float = 1.0  # first retry delay (seconds); doubles each attempt, with jitter
    max_backoff: float = 60.0  # the longest wait between two attempts, a server's `Retry-After` included
    image_detail: str | None = None  # "low" | "high" | "auto"; MMNeedle's official code uses "high"
    token_param: str = "auto"  # "max_tokens" | "max_completion_tokens" | "auto" (the latter for api.openai.com)
    api_version: str | None = None  # set for Azure OpenAI (deployment URLs, `api-key` header)
    deployment: str | None = None  # Azure deployment name, default: model
    context_length: int | None = at_least(1)
    max_images: int | None = at_least(1)
    # The server's pixel cap per image (e.g. `vllm serve --mm-processor-kwargs`), used only to count
    # vision tokens when screening prompts against context_length; nothing is resized here.
    max_pixels: int | None = at_least(1)
    chunk_size: int | None = at_least(1)  # requests per runner batch; default max(batch_size, 4 * concurrency)
    # Send a request's answer prefix as a final assistant message with vLLM's prefill flags; off, it is not sent (an API
    # that does not continue a final message would answer after an extra turn; the scorers add the prefix back).
    continue_final_message: bool = False
    send_seed: bool = True
    send_temperature: bool = True  # false for models that reject it (OpenAI's reasoning models)

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError(f"openai backend: timeout must be a positive number of seconds, got {self.timeout}")
        for name in ("concurrency", "max_retries", "timeout", "backoff", "max_backoff"):
            value = getattr(self, name)
            if value < (1 if name == "concurrency" else 0):
                raise ValueError(
                    f"openai backend: {name} must be {'at least 1' if name == 'concurrency' else 'non-negative'}, got {value}"
                )
        if self.token_param not in ("auto", "max_tokens", "max_completion_tokens"):
            raise ValueError(
                f"openai backend: token_param must be auto, max_tokens or max_completion_tokens, got {self.token_param!r}"
            )
        if self.image_detail not in (None, "low", "high", "auto"):
            raise ValueError(f"openai backend: image_detail must be low, high or auto, got {self.image_detail!r}")


@register_model("openai")
class OpenAIChatModel(Model):
    def __init__(self, settings: OpenAIChatSettings, *, batch_size: int = 1) -> None:
        if importlib.util.find_spec("httpx") is None:
            raise ImportError("the openai backend needs httpx: pip install -e '.[openai]'")
        self.settings = settings
        azure = settings.api_version is not None
        base_url = (
            settings.base_url
            or (os.environ.get("AZURE_OPENAI_ENDPOINT") if azure else None)
            or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_BASE_URL
        )
        self.base_url = base_url.rstrip("/")
        if self.base_url.endswith(ENDPOINT):  # lm-eval's base_url names the endpoint itself: the API's base is above
            self.base_url = self.base_url.removesuffix(ENDPOINT)
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"openai backend: base_url {redact_urls(self.base_url)!r} is not an http(s) URL")
        try:
            parts.port  # noqa: B018 - urllib checks the port only when asked: ask now, not mid-run
        except ValueError:
            raise ValueError(
                f"openai backend: base_url {redact_urls(self.base_url)!r} has no valid port (expected a "
                "number up to 65535 after the host)"
            ) from None
        api_key = (
            settings.api_key
            or (os.environ.get("AZURE_OPENAI_API_KEY") if azure else None)
            or os.environ.get("OPENAI_API_KEY")
        )
        if not api_key and not is_loopback(self.base_url):
            var = "AZURE_OPENAI_API_KEY" if azure else "OPENAI_API_KEY"
            raise ValueError(
                f"openai backend: no API key for {self.base_url}; set {var} or pass api_key=... in --model_args "
                "(only a loopback server may be used without one)"
            )
        if azure:
            deployment = settings.deployment or settings.model
            self.url = f"{self.base_url}/openai/deployments/{deployment}/chat/completions"
            self._params = {"api-version": settings.api_version}
        else:
            self.url = f"{self.base_url}{ENDPOINT}"
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
        self._facts = ModelFacts(
            context_length=settings.context_length,
            max_images=settings.max_images,
            max_pixels=settings.max_pixels,
            batch_size=settings.chunk_size or max(batch_size, 4 * settings.concurrency),
        )
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._fatal: str | None = None
        self._reached = False  # whether any request of this run got an HTTP answer
        self._client: httpx.Client | None = None
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_args(
        cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None
    ) -> OpenAIChatModel:
        settings = settings_from_args(OpenAIChatSettings, args, "openai", aliases={"pretrained": "model"})
        return cls(settings, batch_size=batch_size)

    def identity(self) -> dict[str, Any]:
        s = self.settings
        parts = urlsplit(self.base_url)
        port = f":{parts.port}" if parts.port else ""
        return {
            "model": "openai",
            # The server's address, never its credentials: two servers answer differently.
            "server": f"{parts.scheme}://{parts.hostname}{port}{parts.path}",
            "served_model": s.model,
            "deployment": s.deployment if s.api_version else None,
            "api_version": s.api_version,
            "image_detail": s.image_detail,
            "token_param": self.token_param,
            "continue_final_message": s.continue_final_message,
        }

    @property
    def token_rule(self) -> str:
        return super().token_rule + " (an estimate: the server counts with its own processor)"

    def statistics(self) -> dict[str, Any]:
        return dict(self.stats)

    # -- payloads ---------------------------------------------------------------------------------

    def _image_detail(self, request: Request) -> str | None:
        """The request's image detail: an alias's input policy may set it for some tasks (MMLongBench ran
        GPT-4o with `detail: low` on natural images), the only processor setting an API takes."""
        kwargs = dict(request.processor_kwargs)
        unknown = sorted(set(kwargs) - {"image_detail"})
        if unknown:
            raise ValueError(
                f"processor setting(s) {', '.join(unknown)} have no meaning for an API model; "
                "the openai backend takes image_detail only"
            )
        detail = kwargs.get("image_detail", self.settings.image_detail)
        if detail not in (None, "low", "high", "auto"):
            raise ValueError(f"image_detail must be low, high or auto, got {detail!r}")
        return detail

    def payload(self, request: Request) -> dict[str, Any]:
        s = request.settings
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": build_messages(
                request, self._image_detail(request), prefill=self.settings.continue_final_message
            ),
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

            from harness.models.openai_chat.deadline import deadline_transport

            limits = httpx.Limits(
                max_connections=self.settings.concurrency, max_keepalive_connections=self.settings.concurrency
            )
            self._client = httpx.Client(
                timeout=httpx.Timeout(self.settings.timeout), limits=limits, transport=deadline_transport(limits)
            )
            self._pool = ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="openai")
        return self._client

    def _count(self, key: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[key] += n

    def _backoff(self, attempt: int) -> float:
        delay = min(self.settings.max_backoff, self.settings.backoff * (2**attempt))
        return delay * random.uniform(0.5, 1.0)

    def response_cap(self, request: Request) -> int:
        """The most bytes the answer to `request` may hold (`max_response_bytes`)."""
        return self.settings.max_response_bytes or 8 * request.settings.max_response_chars + 65536

    def _send(self, request: Request) -> Response:
        import httpx

        from harness.models.openai_chat.deadline import BodyTooLarge, deadline, read_capped

        if self._fatal:
            return Response(text=None, error=f"not_sent: {self._fatal}")
        cap = self.facts.max_images
        if cap is not None and request.num_images > cap:
            return Response(text=None, error=f"too_many_images: {request.num_images} > max_images={cap}")
        try:
            body = self.payload(request)
        except OSError as err:  # the disk failed to read an image: not the bytes' fault, so tried again on resume
            return Response(text=None, error=f"error: an image could not be read ({err.strerror or err})")
        except (ValueError, TypeError) as err:
            return Response(text=None, error=f"invalid_input: {err}")
        client = self._http()
        cap = self.response_cap(request)
        headers = {**self._headers, "Accept-Encoding": "identity"}
        last = "no attempt made"
        unreachable = False
        for attempt in range(self.settings.max_retries + 1):
            if attempt:
                self._count("retries")
            self._count("attempts")
            wait: float | None = None
            try:
                # The whole attempt, however slowly the server sends its headers or body, ends at the timeout.
                with (
                    deadline(self.settings.timeout),
                    client.stream("POST", self.url, json=body, headers=headers, params=self._params) as reply,
                ):
                    raw = read_capped(reply, cap)
            except (BodyTooLarge, ValueError) as err:  # ValueError: a body compressed in a way not asked for
                self._reached = True
                return Response(text=None, error=f"malformed_response: {err}; not read, not cached")
            except httpx.TimeoutException as err:
                last, unreachable = f"timeout after {self.settings.timeout:g}s ({type(err).__name__})", False
            except httpx.TransportError as err:
                last = f"connection error: {type(err).__name__}: {err}"
                unreachable = isinstance(err, httpx.ConnectError)
                if unreachable and not self._reached:
                    # Nothing of this run ever reached the server: a wrong address or a server that is
                    # down, not a blip; say so now instead of after every retry's backoff.
                    self._fatal = f"cannot connect to {self.url} ({last}); is the server running?"
                    return Response(text=None, error=f"provider_error: {last}")
            else:
                self._reached = True
                unreachable = False
                status = reply.status_code
                data, unreadable = parse_body(raw)
                if status == 200:
                    if data is None:
                        return Response(text=None, error=f"malformed_response: {unreadable}")
                    response = parse_completion(data)
                    if response.refused:
                        self._count("refusals")
                    return response
                message, code = error_message(data if data is not None else raw[:500].decode("utf-8", "replace"))
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
            delay = self._backoff(attempt) if wait is None else min(wait, self.settings.max_backoff)
            asked = f" (the server asked for {wait:g}s; max_backoff bounds it)" if wait and wait > delay else ""
            log.warning(
                "openai: %s; retry %d/%d in %.1fs%s", last, attempt + 1, self.settings.max_retries, delay, asked
            )
            time.sleep(delay)
        self._count("failures")
        if unreachable:  # still no connection after every retry: the server is down, not this sample
            self._fatal = f"cannot connect to {self.url} ({last})"
        return Response(
            text=None, error=f"provider_error: gave up after {self.settings.max_retries + 1} attempts: {last}"
        )

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return collect(self.stream(requests), len(requests))

    def stream(self, requests: Sequence[Request]) -> Iterator[list[tuple[int, Response]]]:
        """Each response as it arrives (the runner journals it at once: a killed run sends none again)."""
        if self._fatal:
            raise BackendFatalError(f"openai backend stopped: {self._fatal}")
        if not requests:
            return
        self._http()
        assert self._pool is not None
        futures = {self._pool.submit(self._send, r): i for i, r in enumerate(requests)}
        for future in as_completed(futures):
            try:
                response = future.result()
            except Exception as err:  # a bug in one sample's handling must not lose the batch
                log.exception("openai: unexpected error")
                response = Response(text=None, error=f"error: {type(err).__name__}: {err}")
            if not (response.error or "").startswith("not_sent:"):
                yield [(futures[future], response)]
        self._count("requests", len(requests))
        if self._fatal:
            # Stop now, not one batch later (a small run would otherwise end "successfully" with every
            # sample failed); what this batch did get has been handed over already.
            raise BackendFatalError(f"openai backend stopped: {self._fatal}")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._client is not None:
            self._client.close()
            self._client = None
