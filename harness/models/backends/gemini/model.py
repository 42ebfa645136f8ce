"""`gemini` backend: Google's Gemini API through its own SDK, google-genai, as MMLongBench's `vlm_model/gemini.py`
(EdinburghNLP/MMLongBench at 26197d2) called it.

    harness --model gemini --model_args model=gemini-2.0-flash-001,temperature=1.0,top_p=1.0,candidate_count=1 ...

Images go as the wrapper sent them: each decoded, made RGB and saved as PNG (`gemini.py:73,80`), uploaded through the
Files API (`gemini.py:86-119`) and named in the prompt by its file URI (`images=inline`: the same PNG inline; and
`image_format=original`: the dataset's own bytes). An image recurs across rows, depths and lengths: it is uploaded
once a run (`reuse_uploads=false`: once a request, as the wrapper did). The generation config holds exactly what is
asked for (`gemini.py:126-136`): `max_output_tokens` the task's `max_gen_toks` unless `max_output_tokens=none` (the
wrapper sent none to 2.0-Flash-Thinking, 2.5-Flash and 2.5-Pro) or a number; `temperature`/`top_p`/`candidate_count`
when given (else the request's temperature, 0 when greedy, unless `send_temperature=false`); `stop_sequences` (a
model's own, as MMNeedle's `needle.py:58-62` sent `['x']`) and the task's stop strings as `stop_sequences`; `seed`
only with `send_seed=true` (the wrapper sent none). `output_limit` is never sent: the model's own output limit, what
`--screen_only` and `--max_cost` price an uncapped answer at (`screen_model`).

Every HTTP request (each upload, each generation) is one attempt at a time through the shared machinery of
`harness.models.shared.api_client` (the SDK's own retries off): the same retries, backoff, `Retry-After`, whole-attempt
timeout, answer-size cap and fatal statuses as the `openai` backend. Key from `GEMINI_API_KEY` (or `GOOGLE_API_KEY`).

`--batch` goes through Gemini's batch mode (`GeminiBatches`): the requests (their images uploaded first, as a single
request's are) submitted inline as one batch job (`batches.create`, each request's item id as its `metadata.key`),
polled (`batches.get`: an ended state) and collected (the job's inlined responses, matched by `metadata.key`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from harness.api import BackendFatalError, ImageRef, Request, Response
from harness.models.backends.gemini.wire import build_contents, parse_answer, sent_contents
from harness.models.facts.args import at_least
from harness.models.families.gemini import thinking_default
from harness.models.registry import register_model
from harness.models.shared.api_client.batching import CALL_BYTES, RESULT_BYTES, BatchState
from harness.models.shared.api_client.calls import ApiModel
from harness.models.shared.api_client.endpoint import check_sampling, sampling
from harness.models.shared.api_client.outcomes import Outcome
from harness.models.shared.api_client.prompt_cache import CacheRule
from harness.models.shared.api_client.replies import checked_image, excerpt
from harness.models.shared.api_client.settings import ApiCallSettings, reasoning_record
from harness.models.shared.api_client.wrapper_parts import check_image_format, image_as
from harness.sent import Sent

if TYPE_CHECKING:
    from google import genai
    from google.genai import types


@dataclass(frozen=True)
class GeminiSettings(ApiCallSettings):
    backend: ClassVar[str] = "gemini"

    model: str  # e.g. gemini-2.0-flash-001
    # base_url default: $GOOGLE_GEMINI_BASE_URL, else Google's; api_key default: $GEMINI_API_KEY, else $GOOGLE_API_KEY
    api_version: str = "v1beta"  # the SDK's own default for the Gemini API
    images: str = "upload"  # "upload": through the Files API (gemini.py); "inline": in the request
    image_format: str = "png"  # "png": decoded, RGB, PNG (gemini.py:73,80); "original": the dataset's own bytes
    reuse_uploads: bool = True  # an image uploaded once a run (false: once a request, as the wrapper)
    max_output_tokens: str = "task"  # "task": the request's max_gen_toks; "none": not sent; or a number
    # Never sent: with max_output_tokens=none, the model's own output limit (thinking included), the most an answer can
    # be billed for, which the cost estimate and --max_cost's check price each answer at (docs/cost.md); unknown,
    # an answer's cost has no bound.
    output_limit: int | None = at_least(1)
    temperature: float | None = None  # sent as given
    top_p: float | None = None  # sent as given
    candidate_count: int | None = at_least(1)  # sent as given (the wrapper sent 1)
    send_temperature: bool = True  # without `temperature`: the request's (0 when greedy); false: none sent
    send_seed: bool = False  # the request's seed as `seed` (the wrapper sent none)
    empty_text_parts: bool = False  # the empty text parts the wrapper's re.split left around images (gemini.py:55)
    # Sent as stop_sequences before the task's own stop strings, "|" between several (MMNeedle's needle.py:61: "x").
    stop_sequences: str | None = None
    # Sent as given, in the generation config's thinking_config (google-genai's ThinkingConfig): Gemini 3's level
    # (minimal, low, medium, high), Gemini 2.5's budget in tokens (0 off, -1 the model's own choice)
    thinking_level: str | None = None
    thinking_budget: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.images not in ("upload", "inline"):
            raise ValueError(f"gemini backend: images must be upload or inline, got {self.images!r}")
        check_image_format(self.image_format, "gemini")
        self.check_output_cap("max_output_tokens")
        check_sampling(self, self.temperature, self.top_p)
        if self.thinking_level is not None:
            _check_thinking_level(self.thinking_level)

    def rendered(self, request: Request) -> Sent:
        """What the backend sends for `request` (its `render`, and the screen's): its contents and system instruction,
        images named by their hash (`wire.sent_contents`)."""
        return sent_contents(
            request, images=self.images, image_format=self.image_format, empty_text_parts=self.empty_text_parts
        )

    def cache_rule(self, chunk: int) -> CacheRule | None:
        """Gemini caches a repeated prefix by itself (implicit caching): nothing is sent, but a request that reads a
        prefix another of its batch has is sent once that one has answered, unless `prompt_cache=false`."""
        return None if self.prompt_cache == "false" else CacheRule("implicit", self.cache_minimum(), chunk)


def _check_thinking_level(level: str) -> None:
    """A level google-genai's `ThinkingLevel` names (its values, in any case); not checked without the SDK."""
    try:
        from google.genai import types
    except ImportError:
        return
    known = [m.value.lower() for m in types.ThinkingLevel if m.name != "THINKING_LEVEL_UNSPECIFIED"]
    if level.lower() not in known:
        raise ValueError(f"gemini backend: thinking_level must be one of {', '.join(known)}, got {level!r}")


@register_model("gemini")
class GeminiModel(ApiModel):
    label = "gemini"
    settings_type = GeminiSettings
    client_package = ("google.genai", "google-genai")
    environment = (("GOOGLE_GEMINI_BASE_URL",), ("GEMINI_API_KEY", "GOOGLE_API_KEY"))
    default_url = "https://generativelanguage.googleapis.com"
    settings: GeminiSettings

    def __init__(self, settings: GeminiSettings, *, batch_size: int = 1) -> None:
        super().__init__(settings, batch_size=batch_size)
        self._client: genai.Client | None = None
        self._uploads: dict[str, types.File] = {}  # an image's sha256 -> its uploaded file, for this run
        self._upload_locks: dict[str, threading.Lock] = {}
        self._uploads_lock = threading.Lock()

    @staticmethod
    def status_of(err: BaseException) -> tuple[int, object, Mapping[str, str]] | None:
        from google.genai import errors

        if not isinstance(err, errors.APIError):
            return None
        headers = getattr(getattr(err, "response", None), "headers", None) or {}
        return int(err.code or 0), err.details if err.details is not None else str(err), headers

    def identity(self) -> dict[str, object]:
        s = self.settings
        return {
            **self.served(s.model),
            "api_version": s.api_version,
            "images": s.images,
            "image_format": s.image_format,
            "empty_text_parts": s.empty_text_parts,
            # What the generation config sends besides the request's own settings: answers depend on it.
            "max_output_tokens": s.max_output_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "candidate_count": s.candidate_count,
            "send_temperature": s.send_temperature,
            "send_seed": s.send_seed,
            # Only when set: the identity of a run without it is what it was before the setting existed.
            **({"stop_sequences": s.stop_sequences} if s.stop_sequences else {}),
            **({"thinking_config": self.thinking_config()} if self.thinking_config() else {}),
        }

    def thinking_config(self) -> dict[str, object]:
        """The thinking asked for, as the generation config's `thinking_config` sends it; empty: none sent. Spelt as
        Google's Python SDK spells it (`types.ThinkingConfig(thinking_level=...)`, the proto field of Vertex's
        `GenerationConfig.ThinkingConfig`); google-genai 3.6 puts it on the wire as `"thinkingConfig":
        {"thinking_level": "LOW"}`, the proto name, which a proto3 JSON parser takes as it takes the REST reference's
        `thinkingLevel` (protobuf's JSON mapping: "Parsers accept both the lowerCamelCase name ... and the original
        proto field name")."""
        s = self.settings
        return {
            k: v
            for k, v in (("thinking_level", s.thinking_level), ("thinking_budget", s.thinking_budget))
            if v is not None
        }

    def statistics(self) -> dict[str, object]:
        # the thinking asked for: sent, or Google's documented default for the model (a Gemini 3's)
        sent, default = self.thinking_config() or None, thinking_default(self.settings.model)
        asked = {"reasoning": reasoning_record("thinking_config", sent, default)} if sent or default else {}
        return {**super().statistics(), **asked}

    # -- the request ------------------------------------------------------------------------------

    def config(self, request: Request, system: str | None = None) -> types.GenerateContentConfig:
        """The generation config: exactly the fields asked for (`gemini.py:126-136`)."""
        from google.genai import types

        s, asked = self.settings, request.settings
        fields: dict[str, object] = {}
        if system is not None:
            fields["system_instruction"] = system
        fields.update(sampling(s.temperature, s.top_p, s.send_temperature, asked))
        if s.candidate_count is not None:
            fields["candidate_count"] = s.candidate_count
        if s.max_output_tokens == "task":
            fields["max_output_tokens"] = asked.max_gen_toks
        elif s.max_output_tokens != "none":
            fields["max_output_tokens"] = int(s.max_output_tokens)
        stops = [*(s.stop_sequences.split("|") if s.stop_sequences else ()), *asked.until]
        if stops:
            fields["stop_sequences"] = stops
        if s.send_seed and asked.seed is not None:
            fields["seed"] = asked.seed
        if self.thinking_config():
            fields["thinking_config"] = self.thinking_config()
        return types.GenerateContentConfig.model_validate(fields)

    def _image_part(self, image: ImageRef, uploaded: dict[str, types.File]) -> types.Part:
        from google.genai import types

        if self.settings.images == "inline":
            mime, data = image_as(image, self.settings.image_format)
            return types.Part(inline_data=types.Blob(mime_type=mime, data=data))
        file = uploaded[image.sha256]
        return types.Part(file_data=types.FileData(file_uri=file.uri, mime_type=file.mime_type))

    # -- HTTP -------------------------------------------------------------------------------------

    def _open(self) -> genai.Client:
        if self._client is None:
            from google import genai
            from google.genai import types

            from harness.models.shared.api_client.deadline import pooled_client

            s = self.settings
            self._http = pooled_client(s.concurrency, s.timeout, headers={"Accept-Encoding": "identity"})
            options = types.HttpOptions(
                base_url=self.base_url,
                api_version=self.settings.api_version,
                timeout=int(self.settings.timeout * 1000),
                retry_options=types.HttpRetryOptions(attempts=1),  # one attempt: `with_retries` retries
                httpx_client=self._http,
            )
            self._client = genai.Client(api_key=self._api_key or "loopback", http_options=options)
        return self._client

    def _upload(self, image: ImageRef) -> types.File | Response:
        """The image's file on the server (uploaded now, or earlier this run), or the `Response` that failed it."""
        reuse = self.settings.reuse_uploads
        with self._uploads_lock:
            if reuse and image.sha256 in self._uploads:
                return self._uploads[image.sha256]
            lock = self._upload_locks.setdefault(image.sha256, threading.Lock())
        with lock:  # one upload of an image at a time, however many requests hold it
            if reuse and image.sha256 in self._uploads:
                return self._uploads[image.sha256]
            import io

            mime, data = image_as(image, self.settings.image_format)
            client = self._open()

            def once() -> types.File | Outcome:
                self._count("uploads")
                return self.sdk_attempt(  # a Files API answer is a small JSON record
                    lambda: client.files.upload(file=io.BytesIO(data), config={"mime_type": mime}), CALL_BYTES
                )

            file: types.File | Response = self.with_retries(once)
            if isinstance(file, Response):
                return file
            if reuse:
                with self._uploads_lock:
                    self._uploads[image.sha256] = file
            return file

    def prepared(self, request: Request) -> tuple[list[types.Content], types.GenerateContentConfig] | Response:
        """The request's contents (its images uploaded first, where they go so) and config, or why it cannot go."""
        return self.payload_or_error(request, self._prepare)

    def _prepare(self, request: Request) -> tuple[list[types.Content], types.GenerateContentConfig] | Response:
        uploaded: dict[str, types.File] = {}
        if self.settings.images == "upload":
            for image in request.images:
                if image.sha256 in uploaded:
                    continue
                file = self._upload(image)
                if isinstance(file, Response):
                    return file
                uploaded[image.sha256] = file
        contents, system = build_contents(
            request, lambda image: self._image_part(image, uploaded), empty_text_parts=self.settings.empty_text_parts
        )
        return contents, self.config(request, system)

    def render(self, request: Request) -> Sent:
        """What `_send` sends for `request` (`GeminiSettings.rendered`)."""
        return self.settings.rendered(request)

    def _send(self, request: Request) -> Response:
        ready = self.built(request, self._prepare)
        if isinstance(ready, Response):
            return ready
        contents, config = ready
        client = self._open()
        return self.sdk_generation(
            lambda: client.models.generate_content(model=self.settings.model, contents=contents, config=config),
            self.response_cap(request),
            parse_answer,
        )

    # -- --batch ----------------------------------------------------------------------------------

    def check_request(self, request: Request) -> None:
        for image in request.images:  # each image decodes (encoded, as sent, when its batch is built)
            checked_image(image)

    def batch_interface(self) -> GeminiBatches:
        return GeminiBatches(self)


ENDED = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)


class GeminiBatches:
    """Gemini's batch mode; each call through the backend's own attempts (retries, deadline, size cap)."""

    provider = "gemini"

    def __init__(self, model: GeminiModel) -> None:
        self.model = model

    def submit(self, items: Sequence[tuple[str, Request]]) -> str:
        from google.genai import types

        inlined = []
        for item, request in items:
            ready = self.model.prepared(request)
            if isinstance(ready, Response):
                raise BackendFatalError(f"gemini batch: {request.sample_id}: {ready.error}")
            contents, config = ready
            inlined.append(types.InlinedRequest(contents=contents, config=config, metadata={"key": item}))
        client = self.model._open()  # noqa: SLF001 - the backend's own client
        job = self.model.sdk_call(
            "batch submission", lambda: client.batches.create(model=self.model.settings.model, src=inlined), CALL_BYTES
        )
        if not job.name:
            raise BackendFatalError("gemini batch: the job's answer names no job")
        return job.name

    def _job(self, name: str, cap: int = CALL_BYTES) -> types.BatchJob:
        client = self.model._open()  # noqa: SLF001
        return self.model.sdk_call(f"batch {name}", lambda: client.batches.get(name=name), cap)

    def state(self, batch_id: str) -> BatchState:
        job = self._job(batch_id)
        state = str(getattr(job.state, "value", job.state))
        failed = excerpt(job.error) if job.error is not None and state != "JOB_STATE_SUCCEEDED" else None
        return BatchState(state in ENDED, state, failed)

    def results(self, batch_id: str) -> dict[str, Response]:
        job = self._job(batch_id, RESULT_BYTES)
        out: dict[str, Response] = {}
        for answer in (job.dest.inlined_responses if job.dest is not None else None) or []:
            key = (answer.metadata or {}).get("key")
            if not key:
                continue
            if answer.response is not None:
                out[key] = parse_answer(answer.response)
            else:
                out[key] = Response(text=None, error=f"provider_error: batch item: {excerpt(answer.error, 300)}")
        return out
