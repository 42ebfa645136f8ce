"""The registered `sglang` backend: builds its engine (one `LocalEngine`) on first use, sized for the run's images,
screens every request before it reaches the engine, and sends each prompt as the checkpoint's chat template renders
it, with its images in prompt order. `LocalEngine`: one `sglang.Engine` in this process, images decoded on worker
threads, one `Engine.generate` call per chunk of rendered prompts, and a chunk the engine rejects for a request-level
reason bisected so only the culprits fail."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Protocol, cast

from harness.api import BackendFatalError, Model, Request, Response
from harness.models.backends.sglang_engine.requests import (
    CACHE_SIZE_ENV,
    EngineItem,
    ImageCache,
    generate_batch,
    image_cap,
    output_result,
    sampling_params,
)
from harness.models.backends.sglang_engine.settings import SGLangSettings, engine_kwargs, model_settings
from harness.models.backends.vllm_engine.requests import payload_sent, request_payload
from harness.models.families import style_named
from harness.models.registry import register_model
from harness.models.shared.engine_calls import (
    Result,
    call_bisecting,
    decode_each,
    load_engine,
    result_response,
    screen_request,
)
from harness.models.shared.engine_count import EngineCounted
from harness.redact import is_secret_name
from harness.sent import Sent, sent_images

log = logging.getLogger(__name__)
Processor = tuple[tuple[str, object], ...]  # a request's processor settings, as `Request.processor_kwargs` holds them


class Engine(Protocol):
    """What the backend calls of `sglang.Engine` (sglang/srt/entrypoints/engine.py)."""

    def generate(
        self, *, prompt: list[str], image_data: list[list[object]], sampling_params: list[dict[str, object]]
    ) -> list[object]: ...
    def shutdown(self) -> None: ...


class LocalEngine:
    """One `sglang.Engine(**kwargs)` (`engine_factory`: a "module:attr" spec, the stand-in's in tests)."""

    def __init__(self, kwargs: dict[str, object], *, engine_factory: str = "sglang:Engine", decode_workers: int = 4):
        self.engine: Engine | None = load_engine(engine_factory, kwargs, kwargs["model_path"])
        self.decode_workers = decode_workers
        manager = getattr(self.engine, "tokenizer_manager", None)
        length = getattr(manager, "context_len", None) or kwargs.get("context_length")
        self.context_length = length if isinstance(length, int) else None

    def run(self, items: Sequence[EngineItem]) -> list[dict[str, object]]:
        """Generate for `items`; one result dict each, in order."""
        engine = self.engine
        if engine is None:
            raise RuntimeError("the sglang engine is closed")
        results: list[Result | None] = [None] * len(items)
        decoded: list[list[object]] = [[] for _ in items]

        def decode(i: int) -> None:
            decoded[i] = [image.pil() for image in items[i].images]  # read and decoded here, RGB

        def send(indices: list[int]) -> Sequence[object]:
            return engine.generate(**generate_batch([items[i] for i in indices], [decoded[i] for i in indices]))

        decode_each(len(items), decode, self.decode_workers, results)
        ready = [i for i in range(len(items)) if results[i] is None]
        call_bisecting(ready, send, output_result, results, engine="SGLang")
        return cast(list[dict[str, object]], results)  # every index filled: each call fills its own or splits them

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.shutdown()  # stops the scheduler and detokenizer processes and frees their GPU memory


@register_model("sglang")
class SGLangModel(EngineCounted[SGLangSettings], Model):
    engine_name = "SGLang"
    engine_version = "0.5.23"
    read_settings = staticmethod(model_settings)

    def __init__(self, settings: SGLangSettings, *, engine_factory: str = "sglang:Engine", count_online: bool = True):
        self._cap = image_cap(settings.max_images, settings.server_args)
        super().__init__(
            settings, count_online=count_online, context_length=settings.context_length, max_images=self._cap[0]
        )
        self._engine_factory = engine_factory
        self._engine: LocalEngine | None = None
        # the run's requests, until the engine is built: its image cache is sized on them
        self._seen: list[Request] = []
        self._processors: set[Processor] = set()
        self.engine_processor: dict[str, object] = {}  # the image processor settings of the built engine
        self.image_cache: ImageCache | None = None

    def identity(self) -> dict[str, object]:
        s = self.settings
        return {
            "model": "sglang",
            "pretrained": s.pretrained,
            "processor_settings": s.processor_kwargs() or None,
            "chat_template_sha": self.template_sha(),
            "prompt_style": style_named(s.prompt_style).describe(),
            # every ServerArgs and SamplingParams field the run gave (what an answer may depend on), secrets left out
            "server_args": {k: v for k, v in sorted(s.server_args.items()) if not is_secret_name(k)},
            "sampling": dict(sorted(s.sampling.items())),
            "sglang_version": self.engine_release(),
        }

    def render(self, request: Request) -> Sent:
        """The prompt the engine is given for `request` (the checkpoint's chat template, as `generate` renders it) and
        its images by hash, without reading them; the request's turns where the processor cannot be loaded (as the
        vllm backend records a conversation its engine renders)."""
        style = style_named(self.settings.prompt_style)
        payload = request_payload(request, 0, self.count.render(request), style, with_images=False)
        return payload_sent(payload, request, self._processor(request))

    def _processor(self, request: Request) -> dict[str, object]:
        return {**self.settings.processor_kwargs(), **self.engine_processor, **dict(request.processor_kwargs)}

    def _sent(self, prompt: str, request: Request) -> Sent:
        images = [(image.sha256, image.width, image.height) for image in request.images]
        return Sent(prompt, sent_images(images, self._processor(request)))

    def text_round_trip(self) -> Callable[[str], str]:
        """The checkpoint tokenizer's round trip (`harness.inputs.round_trip`): SGLang tokenizes with it."""
        counted = self.count.decode_encode()
        if counted is None:
            raise BackendFatalError(
                f"sglang: the tokenizer of {self.settings.pretrained} could not be loaded to re-decode a task's "
                f"text: {self.count.unavailable}"
            )
        return counted

    def statistics(self) -> dict[str, object]:
        seconds = {"engine_seconds": self.engine_seconds, "count_seconds": self.count_seconds}
        out: dict[str, object] = {k: round(v, 3) for k, v in seconds.items() if v is not None}
        if self.engine_calls:
            out.update(
                engine_calls=self.engine_calls,
                engine_requests=self.engine_requests,
                engine_call_seconds=round(self.engine_call_seconds, 3),
            )
        if self.image_cache is not None:
            out["image_cache_mb"] = self.image_cache.megabytes
        if self.engine_args is not None:
            out["engine_args"] = self.engine_args  # sglang.Engine's, all of them
        return out

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        self.observe(requests)
        yield from self.chunks(requests, [request.token_count for request in requests])

    def observe(self, requests: Sequence[Request]) -> None:
        """Note the run's requests before the engine is built: its image cache and processor settings come from them."""
        if self._engine is None:
            self._seen.extend(requests)
            self._processors.update(request.processor_kwargs for request in requests)

    def _ensure_engine(self) -> LocalEngine:
        self.check_start()
        if self._engine is None:
            if len(self._processors) == 1:  # every request of the run asks the same of the processor: the engine's
                self.engine_processor = dict(next(iter(self._processors)))
            kwargs = engine_kwargs(self.settings, self.engine_processor)
            self._size_image_cache(kwargs)
            log.info("sglang: building the engine with %s", kwargs)
            factory, workers = self._engine_factory, self.settings.decode_workers
            try:
                self._engine = self.start_engine(
                    lambda: LocalEngine(kwargs, engine_factory=factory, decode_workers=workers),
                    lambda engine: engine.context_length,
                    lambda engine: f"context_length={self.facts.context_length}",
                    kwargs,
                )
            finally:
                self._seen = []
        return self._engine

    def _size_image_cache(self, kwargs: dict[str, object]) -> None:
        """`SGLANG_VLM_CACHE_SIZE_MB` from the run's images, set before SGLang's processes start (they read it when
        their memory pools are sized); a value the environment gives is kept. Said in one line."""
        given = os.environ.get(CACHE_SIZE_ENV)
        config = getattr(self.count.processor, "config", None)
        text_config = getattr(config, "text_config", None) or config
        hidden = getattr(text_config, "hidden_size", None)
        if given is None and not isinstance(hidden, int):
            print(
                f"harness: sglang image-embedding cache {CACHE_SIZE_ENV}: SGLang's default (the model's hidden size "
                "is unknown here)",
                file=sys.stderr,
                flush=True,
            )
            return
        element = 4 if str(kwargs.get("dtype", "auto")) in ("float32", "float") else 2
        self.image_cache = ImageCache.of(self._seen, hidden if isinstance(hidden, int) else 0, element)
        if given is None:
            os.environ[CACHE_SIZE_ENV] = str(self.image_cache.megabytes)
        print(self.image_cache.line(given), file=sys.stderr, flush=True)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if not requests:
            return []
        self.observe(requests)
        engine = self._ensure_engine()
        responses: list[Response | None] = [None] * len(requests)
        items: list[tuple[int, EngineItem, str]] = []
        for i, request in enumerate(requests):
            reason = self._refusal(request)
            if reason is not None:
                responses[i] = Response(text=None, error=reason)
                continue
            prompt = self.count.render(request)
            if prompt is None:  # SGLang's offline engine takes a prompt's text: the checkpoint's processor renders it
                raise BackendFatalError(f"sglang: {self.count.unavailable}")
            item = EngineItem(prompt, tuple(request.images), sampling_params(request.settings, self.settings.sampling))
            items.append((i, item, prompt))
        results = self.call_engine(engine.run, [item for _, item, _ in items]) if items else []
        for (i, _, prompt), result in zip(items, results, strict=True):
            responses[i] = replace(result_response(result), sent=self._sent(prompt, requests[i]))
        return cast(list[Response], responses)  # every position filled: screened out or answered

    def _refusal(self, request: Request) -> str | None:
        """Why the engine must not be sent `request`: it does not fit, or it asks its processor for settings the
        engine does not hold (SGLang applies one image-processor setting, `mm_process_config`, to every request)."""
        held = {**self.settings.processor_kwargs(), **self.engine_processor}
        asked = dict(request.processor_kwargs)
        if any(held.get(key) != value for key, value in asked.items()):
            return (
                f"invalid_input: processor settings {asked} differ from the engine's {held or 'defaults'}: SGLang "
                "applies one image-processor setting to every request (run these tasks apart, or give them in "
                "mm_process_config)"
            )
        return screen_request(
            request,
            prompt_tokens=self.prompt_tokens(request),
            context_length=self.facts.context_length,
            cap=self._cap,
        )
