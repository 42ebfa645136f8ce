"""`anthropic` backend: the Anthropic Messages API through Anthropic's own SDK, as MMNeedle's `needle.py:149-184`
(Wang-ML-Lab/multimodal-needle-in-a-haystack) called Claude 3 Opus.

    harness --model anthropic --model_args model=claude-3-opus-20240229,send_temperature=false ...

Images go as base64 image blocks of the dataset's own bytes, their media type read from the bytes (`needle.py:161-170`
read each file and sent it as `image/jpeg`, which MMNeedle's stitched images are). `max_tokens` (the API requires it)
is the task's `max_gen_toks`; `temperature` the request's (0 when greedy) unless given or `send_temperature=false`
(`needle.py:177-181` sent none); `top_p` when given or sampled, unless `send_top_p=false` (Claude Sonnet 4.5 and later
refuse both together: `families.claude`); the task's stop strings as `stop_sequences`. The Messages API takes no seed.
The `anthropic-version` header is the one `needle.py`'s pinned SDK sent, `2023-06-01` (`api_version=sdk`: the
installed SDK's own pin), recorded with the results' backend figures. `thinking_budget=N` turns on extended thinking, `thinking: {"type": "enabled", "budget_tokens": N}` (N at least 1,024
and below `max_tokens`, which thinking counts toward: anthropic-sdk's `ThinkingConfigEnabledParam`, `thinking`), so
`max_tokens` is max_gen_toks + N, and no `temperature` or `top_p` goes with it (thinking takes no temperature
modification: platform.claude.com/docs/en/build-with-claude/extended-thinking).
A prefix the request shares with others of the run is marked `cache_control` for Anthropic's prompt cache
(`cache_rule`, `harness.models.shared.api_client.prompt_cache`; `prompt_cache=false`: never).

Every HTTP request is one attempt at a time through the shared machinery of `harness.models.shared.api_client` (the SDK's
own retries off): the same retries, backoff, `Retry-After`, whole-attempt timeout, answer-size cap and fatal statuses
as the `openai` backend. Key from `ANTHROPIC_API_KEY`.

`--batch` goes through Anthropic's Message Batches (`AnthropicBatches`): the requests submitted as one batch of
`{custom_id, params}` (`messages.batches.create`), polled (`retrieve`: `processing_status` "ended") and collected
(`results`: each item succeeded with its message, or errored, canceled or expired).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from harness.api import Request, Response
from harness.models.backends.anthropic_messages.wire import build_messages, parse_message, sent_messages
from harness.models.facts.args import at_least
from harness.models.families.claude import cache_minimum
from harness.models.registry import register_model
from harness.models.shared.api_client.batching import CALL_BYTES, RESULT_BYTES, BatchState
from harness.models.shared.api_client.calls import ApiModel
from harness.models.shared.api_client.endpoint import check_sampling, sampling
from harness.models.shared.api_client.prompt_cache import CacheRule
from harness.models.shared.api_client.replies import excerpt
from harness.models.shared.api_client.settings import ApiCallSettings, reasoning_record
from harness.sent import Sent

if TYPE_CHECKING:
    import anthropic
    import httpx2

# The `anthropic-version` MMNeedle's needle.py sent (its pinned SDK's): sent by default, as the official call sent it;
# `api_version=sdk` sends the installed SDK's own pin instead (docs/cost.md, "API versions")
OFFICIAL_API_VERSION = "2023-06-01"
SAMPLING = ("temperature", "top_p")
# Extended thinking where a request sends no `thinking` (read 2026-11-27)
OFF = (
    "disabled",
    "Anthropic's extended-thinking guide (platform.claude.com/docs/en/build-with-claude/extended-thinking): "
    "a request turns thinking on with a thinking object of type enabled",
)


@dataclass(frozen=True)
class AnthropicSettings(ApiCallSettings):
    backend: ClassVar[str] = "anthropic"

    model: str  # e.g. claude-3-opus-20240229
    # base_url default: $ANTHROPIC_BASE_URL, else Anthropic's; api_key default: $ANTHROPIC_API_KEY
    temperature: float | None = None  # sent as given
    top_p: float | None = None  # sent as given
    send_temperature: bool = True  # without `temperature`: the request's (0 when greedy); false: none sent
    send_top_p: bool = True  # false: no top_p (Claude Sonnet 4.5 and later take temperature or top_p, not both)
    thinking_budget: int | None = at_least(1024)  # extended thinking's budget_tokens, on top of max_gen_toks
    api_version: str = OFFICIAL_API_VERSION  # the `anthropic-version` header; `sdk`: the installed SDK's own pin

    def __post_init__(self) -> None:
        super().__post_init__()
        check_sampling(self, self.temperature, self.top_p, most_temperature=1)

    def cache_minimum(self) -> int:
        """Anthropic's minimum for the model (`families.claude.cache_minimum`: 4,096 tokens on Opus 4.5 and 4.6 and
        Haiku 4.5), unless `prompt_cache_min_tokens` is given."""
        return self.prompt_cache_min_tokens or cache_minimum(self.model)

    def cache_rule(self, chunk: int) -> CacheRule | None:
        """`cache_control` breakpoints on each request's longest shared prefixes, on any Anthropic server unless
        `prompt_cache=false`."""
        return None if self.prompt_cache == "false" else CacheRule("cache_control", self.cache_minimum(), chunk)


@register_model("anthropic")
class AnthropicModel(ApiModel):
    label = "anthropic"
    settings_type = AnthropicSettings
    client_package = ("anthropic", "Anthropic's SDK")
    environment = (("ANTHROPIC_BASE_URL",), ("ANTHROPIC_API_KEY",))
    default_url = "https://api.anthropic.com"
    settings: AnthropicSettings

    def __init__(self, settings: AnthropicSettings, *, batch_size: int = 1) -> None:
        super().__init__(settings, batch_size=batch_size)
        self._client: anthropic.Anthropic | None = None
        # The `anthropic-version` header sent (`api_version`: the official call's by default, or the SDK's pin):
        # recorded with the results' backend figures, not the identity, so that journals and the response cache
        # outlive an SDK upgrade (docs/cost.md).
        self.api_version: str | None = None

    @staticmethod
    def status_of(err: BaseException) -> tuple[int, object, Mapping[str, str]] | None:
        import anthropic

        if not isinstance(err, anthropic.APIStatusError):
            return None
        return err.status_code, err.body if err.body is not None else err.message, err.response.headers

    def statistics(self) -> dict[str, object]:
        sent = {"anthropic_version": self.api_version} if self.api_version else {}
        budget = self.settings.thinking_budget
        thinking = reasoning_record("thinking", {"type": "enabled", "budget_tokens": budget} if budget else None, OFF)
        return {**super().statistics(), **sent, "reasoning": thinking}

    def identity(self) -> dict[str, object]:
        return {
            **self.served(self.settings.model),
            # What is sent besides the request's own settings: answers depend on it.
            "temperature": self.settings.temperature,
            "top_p": self.settings.top_p,
            "send_temperature": self.settings.send_temperature,
            # Only when set: the identity of a run without them is what it was before the settings existed.
            **({"send_top_p": False} if not self.settings.send_top_p else {}),
            **({"thinking_budget": self.settings.thinking_budget} if self.settings.thinking_budget else {}),
        }

    def payload(self, request: Request) -> dict[str, object]:
        """The arguments of `messages.create`: exactly the fields asked for."""
        s, asked = self.settings, request.settings
        messages, system = build_messages(request, marks={(m.message, m.part) for m in self.cache_plan(request).marks})
        budget = s.thinking_budget or 0
        body: dict[str, object] = {"model": s.model, "max_tokens": asked.max_gen_toks + budget, "messages": messages}
        if system is not None:
            body["system"] = system
        if budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        else:
            sent = sampling(s.temperature, s.top_p, s.send_temperature, asked)
            body.update(sent if s.send_top_p else {k: v for k, v in sent.items() if k != "top_p"})
        if asked.until:
            body["stop_sequences"] = list(asked.until)
        return body

    def _open(self) -> anthropic.Anthropic:
        if self._client is None:
            import anthropic

            from harness.models.shared.api_client.deadline import pooled_client

            s = self.settings
            # httpx2's own classes, of httpx's names
            http: httpx2.Client = pooled_client(  # type: ignore[assignment]
                s.concurrency, s.timeout, "httpx2", headers={"Accept-Encoding": "identity"}
            )
            self._http = http
            self._client = anthropic.Anthropic(
                api_key=self._api_key or "loopback",
                base_url=self.base_url,
                max_retries=0,  # one attempt: `with_retries` retries
                timeout=self.settings.timeout,
                http_client=http,
                default_headers={} if s.api_version == "sdk" else {"anthropic-version": s.api_version},
            )
            self.api_version = str(self._client.default_headers.get("anthropic-version") or "") or None
        return self._client

    def render(self, request: Request) -> Sent:
        """What `_send` sends for `request`: its system prompt and messages, images named by their hash
        (`wire.sent_messages`)."""
        return sent_messages(request)

    def _send(self, request: Request) -> Response:
        body = self.built(request, self.payload)
        if isinstance(body, Response):
            return body
        client = self._open()
        # The SDK types neither sampling field any more: they go in the JSON body as the API takes them.
        extra = {k: body.pop(k) for k in SAMPLING if k in body}
        typed = body
        return self.sdk_generation(
            lambda: client.messages.create(**typed, extra_body=extra or None),  # type: ignore[call-overload]
            self.response_cap(request),
            parse_message,
        )

    # -- --batch ----------------------------------------------------------------------------------

    def check_request(self, request: Request) -> None:
        build_messages(request)

    def batch_interface(self) -> AnthropicBatches:
        return AnthropicBatches(self)


class AnthropicBatches:
    """Anthropic's Message Batches; each call through the backend's own attempts (retries, deadline, size cap)."""

    provider = "anthropic"

    def __init__(self, model: AnthropicModel) -> None:
        self.model = model

    def submit(self, items: Sequence[tuple[str, Request]]) -> str:
        client = self.model._open()  # noqa: SLF001 - the backend's own client
        requests = [{"custom_id": item, "params": self.model.payload(request)} for item, request in items]
        batch = self.model.sdk_call(
            "batch submission",
            lambda: client.messages.batches.create(requests=requests),  # type: ignore[arg-type]  # the API's shapes
            CALL_BYTES,
        )
        return batch.id

    def state(self, batch_id: str) -> BatchState:
        client = self.model._open()  # noqa: SLF001
        batch = self.model.sdk_call(f"batch {batch_id}", lambda: client.messages.batches.retrieve(batch_id), CALL_BYTES)
        status = str(batch.processing_status)
        return BatchState(status == "ended", status)

    def results(self, batch_id: str) -> dict[str, Response]:
        client = self.model._open()  # noqa: SLF001
        lines = self.model.sdk_call(
            f"batch {batch_id}'s results", lambda: list(client.messages.batches.results(batch_id)), RESULT_BYTES
        )
        out: dict[str, Response] = {}
        for line in lines:
            result = line.result
            if result.type == "succeeded":
                out[line.custom_id] = parse_message(result.message)
            else:
                why = getattr(getattr(result, "error", None), "error", None) or result.type
                error = f"provider_error: batch item {excerpt(result.type, 100)}: {excerpt(why, 300)}"
                out[line.custom_id] = Response(text=None, error=error)
        return out
