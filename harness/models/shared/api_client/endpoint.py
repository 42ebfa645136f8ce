"""Where an API backend sends its requests, and with which key: the checks every API backend's constructor makes
(`openai`, `gemini`, `anthropic`), each error one line naming the backend and the setting; and the sampling it sends. The provider's address and
key come from the `--model_args` (`base_url`, `api_key`), else from the environment variables the provider's own SDK
reads; only a loopback server may be used without a key (a local `vllm serve`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import urlsplit

from harness.api import GenerationSettings
from harness.models.shared.api_client.replies import is_loopback
from harness.models.shared.api_client.settings import ApiCallSettings
from harness.redact import redact_urls


def _environment(names: Sequence[str]) -> str | None:
    """The first of these environment variables that is set and not empty."""
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


def server_url(settings: ApiCallSettings, environment: Sequence[str], default: str, endpoint: str = "") -> str:
    """The base URL of the backend's server: `base_url`, else the first of the `environment` variables set, else the
    provider's `default`; with no trailing `/`, nor `endpoint` (lm-eval's `base_url` names the endpoint itself: the
    API's base is above it). A ValueError unless it is an http(s) URL with a host and a valid port (its credentials
    redacted)."""
    base_url = (settings.base_url or _environment(environment) or default).rstrip("/")
    if endpoint and base_url.endswith(endpoint):
        base_url = base_url.removesuffix(endpoint)
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{settings.backend} backend: base_url {redact_urls(base_url)!r} is not an http(s) URL")
    try:
        parts.port  # noqa: B018 - urllib checks the port only when asked: ask now, not mid-run
    except ValueError:
        raise ValueError(
            f"{settings.backend} backend: base_url {redact_urls(base_url)!r} has no valid port (expected a "
            "number up to 65535 after the host)"
        ) from None
    return base_url


def api_key(settings: ApiCallSettings, environment: Sequence[str], base_url: str) -> str | None:
    """The key sent to `base_url`: `api_key`, else the first of the `environment` variables set (the error names the
    first); None for a loopback server without one, a ValueError for any other."""
    key = settings.api_key or _environment(environment)
    if not key and not is_loopback(base_url):
        raise ValueError(
            f"{settings.backend} backend: no API key for {base_url}; set {environment[0]} or pass api_key=... in "
            "--model_args (only a loopback server may be used without one)"
        )
    return key


def server_label(base_url: str) -> str:
    """The server's address as a model's identity records it, never its credentials: two servers answer
    differently."""
    parts = urlsplit(base_url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


def check_sampling(
    settings: ApiCallSettings, temperature: float | None, top_p: float | None, most_temperature: float | None = None
) -> None:
    """A temperature or top_p the backend sends as given: a temperature at least 0 (and at most `most_temperature`
    where the provider says so), a top_p in (0, 1]."""
    backend = settings.backend
    if temperature is not None and not (
        temperature >= 0 and (most_temperature is None or temperature <= most_temperature)
    ):
        bound = f"in [0, {most_temperature:g}]" if most_temperature is not None else ">= 0"
        raise ValueError(f"{backend} backend: temperature must be {bound}, got {temperature}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"{backend} backend: top_p must be in (0, 1], got {top_p}")


def sampling(
    temperature: float | None, top_p: float | None, send_temperature: bool, asked: GenerationSettings
) -> dict[str, float]:
    """The temperature and top_p a backend sends: each as given in `--model_args`, else the request's (its temperature,
    0 when greedy, unless `send_temperature` is false; its top_p where it samples with one below 1)."""
    sent: dict[str, float] = {}
    if temperature is not None:
        sent["temperature"] = temperature
    elif send_temperature:
        sent["temperature"] = asked.temperature if asked.do_sample else 0.0
    if top_p is not None:
        sent["top_p"] = top_p
    elif asked.do_sample and asked.top_p != 1.0:
        sent["top_p"] = asked.top_p
    return sent
