"""`openai` backend: any OpenAI-compatible chat-completions server (OpenAI, Azure OpenAI, `vllm serve`,
gateways).

    harness --model openai --model_args model=gpt-4o,image_detail=high,concurrency=16 ...
    harness --model openai --model_args model=Qwen/Qwen2.5-VL-7B-Instruct,base_url=http://localhost:8000/v1

Images go as base64 data URLs of the dataset's own encoded bytes (the MIME type read from the bytes' magic number): no
decoding, no PNG re-encoding, unless `image_format=png` (decoded, RGB, PNG, as a wrapper reading local image files
sent them; the paper model that ran so declares it); `empty_text_parts=true` sends the empty texts such a wrapper left
around images. Requests run `concurrency` at a time over one httpx client, with the attempts every API backend makes
(`api_client.calls`, `api_client.outcomes`): one sample's failure is that sample's error; one that concerns every
sample (401/403/404, a server never reached) stops the run, keeping what did come back. A request sharing a prefix with
others of the run is sent OpenAI's `prompt_cache_key` (`cache_rule`), and `request_order=cache` feeds a served
engine's prefix cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from harness.api import Request, Response
from harness.models.backends.openai_chat.wire import (
    DETAILS,
    build_messages,
    image_data_url,
    parse_completion,
    request_image_settings,
)
from harness.models.facts.args import at_least
from harness.models.families.gpt import reasoning_effort_default
from harness.models.registry import register_model
from harness.models.shared.api_client.calls import ApiModel
from harness.models.shared.api_client.endpoint import api_key, check_sampling, sampling, server_url
from harness.models.shared.api_client.outcomes import Outcome, transport_outcome
from harness.models.shared.api_client.prompt_cache import CacheRule
from harness.models.shared.api_client.replies import checked_image, error_message, parse_body
from harness.models.shared.api_client.settings import ApiCallSettings, reasoning_record
from harness.models.shared.api_client.wrapper_parts import check_image_format
from harness.sent import Sent, sent_images

if TYPE_CHECKING:
    import httpx

    from harness.models.backends.openai_chat.batch import OpenAIBatches
    from harness.models.backends.openai_chat.served_count import ServedCount

T = TypeVar("T")

OPENAI_HOST = "api.openai.com"
DEFAULT_BASE_URL = f"https://{OPENAI_HOST}/v1"
ENDPOINT = "/chat/completions"  # below the base URL (lm-eval's `base_url` names it whole: it is taken off)


# --- the backend -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenAIChatSettings(ApiCallSettings):
    backend: ClassVar[str] = "openai"

    model: str  # the name the server knows the model by (for Azure, the default deployment)
    # base_url default: $OPENAI_BASE_URL, else the OpenAI API; api_key default: $OPENAI_API_KEY ($AZURE_OPENAI_API_KEY)
    image_detail: str | None = None  # "low" | "high" | "original" | "auto"; MMNeedle's official code uses "high"
    token_param: str = "auto"  # "max_tokens" | "max_completion_tokens" | "auto" (the latter for api.openai.com)
    # The cap sent under `token_param`: "task" (the request's max_gen_toks), "none" (not sent: a reasoning model's
    # reasoning counts against it) or a number; `output_limit`, never sent, prices an answer sent none (docs/cost.md).
    token_cap: str = "task"
    output_limit: int | None = at_least(1)
    reasoning_effort: str | None = None  # sent as given (OpenAI's reasoning models: none, minimal, low, ... xhigh)
    api_version: str | None = None  # set for Azure OpenAI (deployment URLs, `api-key` header)
    deployment: str | None = None  # Azure deployment name, default: model
    # Send a request's answer prefix as a final assistant message with vLLM's prefill flags; off, it is not sent (an API
    # that does not continue a final message would answer after an extra turn; the scorers add the prefix back).
    continue_final_message: bool = False
    send_seed: bool = True
    send_temperature: bool = True  # false for models that reject it (OpenAI's reasoning models)
    # Sent as given, greedy or not (MMLongBench's openai_model.py:144 sent top_p=1.0 on every call); without it, the
    # request's when sampled and not 1.
    top_p: float | None = None
    # "original": each image's own bytes; "png": decoded, RGB, PNG, as openai_model.py:117-124 sent a local file (an
    # alias's input policy may set it per task, as image_detail).
    image_format: str = "original"
    # The empty text parts openai_model.py's re.split left around images (format_chat, :81-101), sent as it sent them.
    empty_text_parts: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.token_param not in ("auto", "max_tokens", "max_completion_tokens"):
            raise ValueError(
                f"openai backend: token_param must be auto, max_tokens or max_completion_tokens, got {self.token_param!r}"
            )
        self.check_output_cap("token_cap")
        if self.image_detail is not None and self.image_detail not in DETAILS:
            raise ValueError(
                f"openai backend: image_detail must be low, high, original or auto, got {self.image_detail!r}"
            )
        check_sampling(self, None, self.top_p)
        check_image_format(self.image_format, "openai")

    def rendered(self, request: Request) -> Sent:
        """The messages the backend posts for `request` as JSON (its `render`, and the screen's), each image named by
        its content hash (`sha256:<hash>`) where its bytes go, with the detail (and, made PNG, the format) it is sent
        at (`harness.sent`): the request's image settings over the model's; where the backend refuses the request's
        (it is invalid_input there, never sent), the model's."""
        try:
            detail, image_format = request_image_settings(request, self.image_detail, self.image_format)
        except ValueError:
            detail, image_format = None, self.image_format
        messages = build_messages(
            request, detail, self.continue_final_message, lambda ref: f"sha256:{ref.sha256}", self.empty_text_parts
        )
        how: dict[str, object] = {"image_detail": detail}
        if image_format != "original":
            how["image_format"] = image_format
        images = [(image.sha256, image.width, image.height) for image in request.images]
        return Sent(json.dumps(messages, ensure_ascii=False), sent_images(images, how))

    def served_count(self) -> tuple[ServedCount | None, str]:
        """The count of the checkpoint `model` names, of the chat as these settings send it, or None and why not
        (`served_count`)."""
        from harness.models.backends.openai_chat.served_count import served_count

        return served_count(
            self.model,
            continue_final_message=self.continue_final_message,
            empty_text_parts=self.empty_text_parts,
            max_pixels=self.max_pixels,
        )

    def cache_rule(self, chunk: int) -> CacheRule | None:
        """Each request sharing a prefix worth caching sent with a `prompt_cache_key` naming it: by default only to
        OpenAI's own API (`prompt_cache=auto`), which caches prompts by itself; a served engine (`vllm serve`, SGLang)
        keeps its own prefix cache, which `request_order=cache` feeds, and may refuse a field it does not know
        (`prompt_cache=true` sends it to any server)."""
        server = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL  # as the model finds it
        on = self.prompt_cache == "true" or (
            self.prompt_cache == "auto" and self.api_version is None and urlsplit(server).hostname == OPENAI_HOST
        )
        return CacheRule("prompt_cache_key", self.cache_minimum(), chunk) if on else None


@register_model("openai")
class OpenAIChatModel(ApiModel):
    label = "openai"
    settings_type = OpenAIChatSettings
    client_package = ("httpx", "httpx")
    settings: OpenAIChatSettings

    def __init__(self, settings: OpenAIChatSettings, *, batch_size: int = 1) -> None:
        super().__init__(settings, batch_size=batch_size)
        azure, key = settings.api_version is not None, self._api_key
        if azure:
            deployment = settings.deployment or settings.model
            self.url = f"{self.base_url}/openai/deployments/{deployment}/chat/completions"
            self._params = {"api-version": settings.api_version}
        else:
            self.url = f"{self.base_url}{ENDPOINT}"
            self._params = {}
        self._headers = {"Content-Type": "application/json"}
        if key:
            if azure:
                self._headers["api-key"] = key
            else:
                self._headers["Authorization"] = f"Bearer {key}"
        token_param = settings.token_param
        if token_param == "auto":
            token_param = "max_completion_tokens" if urlsplit(self.base_url).hostname == OPENAI_HOST else "max_tokens"
        self.token_param = token_param
        self.where = self.url
        self._client: httpx.Client | None = None

    def server(self) -> tuple[str, str | None]:
        """Azure's own variables first (with `api_version`), then OpenAI's; a `base_url` naming the endpoint too, as
        lm-eval's does, is taken below it."""
        azure = self.settings.api_version is not None
        url_vars, key_vars = (("AZURE_OPENAI_ENDPOINT",), ("AZURE_OPENAI_API_KEY",)) if azure else ((), ())
        base_url = server_url(self.settings, (*url_vars, "OPENAI_BASE_URL"), DEFAULT_BASE_URL, ENDPOINT)
        return base_url, api_key(self.settings, (*key_vars, "OPENAI_API_KEY"), base_url)

    @cached_property
    def served_count(self) -> tuple[ServedCount | None, str]:
        """The count of the checkpoint the model's name is, where it is one here (`served_count`), loaded once."""
        return self.settings.served_count()

    @property
    def token_rule(self) -> str:
        count, why_not = self.served_count
        if count is not None:
            return count.served_rule
        return super().token_rule + (f" ({why_not})" if why_not else "")

    def prompt_tokens(self, request: Request) -> int:
        count, _ = self.served_count
        return count.prompt_tokens(request) if count is not None else super().prompt_tokens(request)

    def identity(self) -> dict[str, object]:
        s = self.settings
        return {
            **self.served(s.model),
            "deployment": s.deployment if s.api_version else None,
            "api_version": s.api_version,
            "image_detail": s.image_detail,
            "token_param": self.token_param,
            "continue_final_message": s.continue_final_message,
            # Only when set: the identity of a run without it is what it was before the setting existed.
            **({"top_p": s.top_p} if s.top_p is not None else {}),
            **({"image_format": s.image_format} if s.image_format != "original" else {}),
            **({"empty_text_parts": True} if s.empty_text_parts else {}),
            **({"token_cap": s.token_cap} if s.token_cap != "task" else {}),
            **({"reasoning_effort": s.reasoning_effort} if s.reasoning_effort else {}),
        }

    def statistics(self) -> dict[str, object]:
        # the reasoning asked for: sent, or OpenAI's documented default for the model (a GPT-5.x's)
        default = reasoning_effort_default(self.settings.model)
        sent = self.settings.reasoning_effort
        asked = {"reasoning": reasoning_record("reasoning_effort", sent, default)} if sent or default else {}
        return {**super().statistics(), **asked}

    # -- payloads ---------------------------------------------------------------------------------

    def payload(self, request: Request) -> dict[str, Any]:
        s = request.settings
        detail, image_format = request_image_settings(request, self.settings.image_detail, self.settings.image_format)
        messages = build_messages(
            request,
            detail,
            prefill=self.settings.continue_final_message,
            url=lambda image: image_data_url(image, image_format),
            empty_text_parts=self.settings.empty_text_parts,
        )
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        cap = self.settings.token_cap
        if cap != "none":
            body[self.token_param] = s.max_gen_toks if cap == "task" else int(cap)
        if self.settings.reasoning_effort:
            body["reasoning_effort"] = self.settings.reasoning_effort
        body.update(sampling(None, self.settings.top_p, self.settings.send_temperature, s))
        if s.until:
            body["stop"] = list(s.until)
        if s.seed is not None and self.settings.send_seed:
            body["seed"] = s.seed
        if request.assistant_prefix and self.settings.continue_final_message:
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        key = self.cache_plan(request).key
        if key is not None:
            body["prompt_cache_key"] = key
        return body

    # -- HTTP -------------------------------------------------------------------------------------

    def _open(self) -> httpx.Client:
        if self._client is None:
            from harness.models.shared.api_client.deadline import pooled_client

            self._client = self._http = pooled_client(self.settings.concurrency, self.settings.timeout)
        return self._client

    def _attempt(
        self, method: str, url: str, cap: int, ok: Callable[[bytes], T | Outcome], **send: object
    ) -> T | Outcome:
        """One attempt at a call: `ok` of its body, read up to `cap` bytes, where the server answers 200; else what its
        answer (its status, its error message, parsed or as text, its headers) or a transport failure means. The whole
        attempt, however slowly the server sends its headers or body, ends at the timeout."""
        from harness.models.shared.api_client.deadline import deadline, read_capped

        try:
            with (
                deadline(self.settings.timeout),
                self._open().stream(method, url, params=self._params, **send) as reply,  # type: ignore[arg-type]
            ):
                raw = read_capped(reply, cap)
        except Exception as err:
            outcome = transport_outcome(err, self.settings.timeout)
            if outcome is None:
                raise
            return outcome
        if reply.status_code == 200:
            return ok(raw)
        data, _ = parse_body(raw)
        message, code = error_message(data if data is not None else raw.decode("utf-8", "replace"))
        return self.status_outcome(reply.status_code, message, code, reply.headers)

    def _send(self, request: Request) -> Response:
        body = self.built(request, self.payload)
        if isinstance(body, Response):
            return body
        cap = self.response_cap(request)
        headers = {**self._headers, "Accept-Encoding": "identity"}

        def answer(raw: bytes) -> Response:
            data, unreadable = parse_body(raw)
            if data is None:
                return Response(text=None, error=f"malformed_response: {unreadable}")
            return self.counted(parse_completion(data))

        return self.with_retries(lambda: self._attempt("POST", self.url, cap, answer, json=body, headers=headers))

    def render(self, request: Request) -> Sent:
        """The chat-completions messages `_send` posts for `request` (`OpenAIChatSettings.rendered`)."""
        return self.settings.rendered(request)

    # -- --batch ----------------------------------------------------------------------------------

    def batch_interface(self) -> OpenAIBatches:
        if self.settings.api_version is not None:
            raise ValueError("openai backend: --batch is not supported for Azure OpenAI here (its batch URLs differ)")
        from harness.models.backends.openai_chat.batch import OpenAIBatches

        return OpenAIBatches(self)

    def check_request(self, request: Request) -> None:
        """What `payload` refuses, refused (the request's image settings, a part it cannot send, an image that does
        not decode), without encoding the images: a batch's bodies are built once, when it is submitted."""
        detail, _ = request_image_settings(request, self.settings.image_detail, self.settings.image_format)
        s = self.settings
        build_messages(
            request, detail, s.continue_final_message, lambda image: checked_image(image)[0], s.empty_text_parts
        )

    def call(self, method: str, path: str, cap: int, **send: object) -> bytes:
        """One call of the API besides a generation (the batch interface's), `retried`: its body."""
        headers = {k: v for k, v in self._headers.items() if k != "Content-Type" or "json" in send}
        headers["Accept-Encoding"] = "identity"
        url = f"{self.base_url}{path}"
        return self.retried(
            f"openai batch: {method} {path}",
            lambda: self._attempt(method, url, cap, lambda raw: raw, headers=headers, **send),
        )
