"""The registered `vllm` backend: builds its engine (one `LocalEngine`) on first use, screens every request before
it reaches the engine, and groups requests by their chat flags. Replicas of it: `harness.models.backends.replicas`. It counts
a prompt before it reaches the engine as vLLM will, by the checkpoint's own processor (`harness.models.shared.engine_count`,
which the `sglang` backend shares), with the template vLLM ships for a checkpoint that has none
(`fallback_template`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, cast

from harness.api import BackendFatalError, Model, Request, Response
from harness.models.backends.vllm_engine.engines import LocalEngine
from harness.models.backends.vllm_engine.image_limit import ImageProfile, encoder_refusal, engine_limit, image_count
from harness.models.backends.vllm_engine.requests import payload_sent, request_payload, screen_request
from harness.models.backends.vllm_engine.settings import (
    LIMIT,
    VLLMSettings,
    engine_kwargs,
    vllm_settings,
    within_window,
)
from harness.models.backends.vllm_engine.start_checks import before_start
from harness.models.facts.remote_code import before_loading
from harness.models.families import style_named
from harness.models.registry import register_model
from harness.models.shared.engine_calls import result_response
from harness.models.shared.engine_count import EngineCounted
from harness.sent import Sent

log = logging.getLogger(__name__)


def fallback_template(pretrained: str, revision: str | None) -> str | None:
    """The template vLLM renders a checkpoint with where the checkpoint has none of its own: its renderer's last
    resort, the template it ships for the config's `model_type` (`vllm/renderers/hf.py`, `resolve_chat_template`;
    MiniCPM-V 4.5's `template_minicpmv45.jinja`), read as its `load_chat_template` reads it; None where the checkpoint
    has one, is not on this machine, or vLLM ships none for it."""
    from harness.models.facts.checkpoint import read_checkpoint

    own = read_checkpoint(pretrained, revision)
    if own is None or own.chat_template is not None or own.model_type is None:
        return None
    try:
        from vllm.transformers_utils.chat_templates import get_chat_template_fallback_path
    except ImportError:  # no vLLM here (a screen): the checkpoint's missing template is said by the count
        return None
    path = get_chat_template_fallback_path(model_type=own.model_type, tokenizer_name_or_path=pretrained)
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None


@register_model("vllm")
class VLLMModel(EngineCounted[VLLMSettings], Model):
    engine_name = "vLLM"
    engine_version = "0.33"
    read_settings = staticmethod(vllm_settings)
    count_fallback = staticmethod(fallback_template)
    # vLLM tokenizes the rendered prompt, then expands each image by its model's own per-image rule
    # (`BaseMultiModalProcessor._get_mm_prompt_updates`), whatever the other images: as the hf processor expands one
    images_alone = True

    def __init__(
        self,
        settings: VLLMSettings,
        *,
        llm_factory: str = "vllm:LLM",
        sampling_factory: str = "vllm:SamplingParams",
        count_online: bool = True,
    ) -> None:
        super().__init__(
            settings, count_online=count_online, context_length=settings.max_model_len, max_images=settings.max_images
        )
        self._factories: dict[str, Any] = {
            "llm_factory": llm_factory,
            "sampling_factory": sampling_factory,
            "decode_workers": settings.decode_workers,
        }
        self._engine: LocalEngine | None = None
        self._profile = ImageProfile()  # the images of the requests seen, or told of, before the engine is built
        self.limit: dict[str, object] | None = None  # limit_mm_per_prompt of the built engine
        self.image_limit: int | None = None  # the images a prompt may hold there
        self._tokenizer: Any = None  # the engine's tokenizer, loaded here when a task re-decodes text
        # Images sent, and how many were distinct: each goes named by its `image_sha256` (`multi_modal_uuids`, a
        # chat part's `uuid`), so a repeat finds vLLM's processor and prefix caches without its pixels hashed.
        self.engine_images = 0
        self._engine_image_ids: set[str] = set()

    def identity(self) -> dict[str, Any]:
        s = self.settings
        return {
            "model": "vllm",
            "pretrained": s.pretrained,
            # revision, tokenizer, dtype, generation_config, hf_overrides and the processor settings, as ever, and
            # only where given, an engine field that may change an answer and the sampling defaults
            **s.engine_identity(),
            "chat_template_sha": self.template_sha(),
            "chat_template_content_format": s.chat_template_content_format,
            "prompt_style": style_named(s.prompt_style).describe(),
            "vllm_version": self.engine_release(),
            # only where given: a run without it keeps the identity (and the cache keys) it had
            **({"eos_tokens": s.eos_tokens} if s.eos_tokens else {}),
        }

    def windowed(self) -> int | None:
        """The checkpoint's window (its config's max_position_embeddings, as `hf` reads it; None where its processor
        did not load): the facts' context kept within it (`within_window`), and recorded as `ModelFacts.window` where
        the run passes it on purpose (`past_window`)."""
        window = self.count.processor.context_length if self.count.processor is not None else None
        context = within_window(self.settings, window)
        if context != self.settings.max_model_len:  # said once, where the facts take it (the screen, the engine)
            why = "the engine holds the window, a longer row is over_length (past_window=true runs past it)"
            log.warning(
                "vllm: max_model_len=%s is past the checkpoint's window (%s): %s",
                self.settings.max_model_len,
                window,
                why,
            )
        self._facts = replace(
            self._facts,
            context_length=context or self._facts.context_length,
            window=window if self.settings.past_window else None,
        )
        return window

    def observe(self, requests: Sequence[Request]) -> None:
        """Note the requests' image counts and sizes, so the engine's `limit_mm_per_prompt` covers them all."""
        self._note(ImageProfile().covering(requests))

    def prepare(self, max_images: int, largest_image: tuple[int, int] | None = None) -> None:
        """The largest image count of any request of the run (e.g. from the rows' `num_images`), and the largest
        width and height of an image it sends where known, told before the first `generate`: the engine is built
        once, with a limit that fits every task."""
        self._note(ImageProfile(max_images, *(largest_image or (0, 0))))

    def _note(self, profile: ImageProfile) -> None:
        max_images = profile.count
        if self._engine is not None and max_images > (self.image_limit or 0):
            log.warning(
                "vllm: the engine was built with limit_mm_per_prompt=%s; requests with %d images will be "
                "recorded as too_many_images (pass max_images=%d in --model_args)",
                self.image_limit,
                max_images,
                max_images,
            )
        self._profile = self._profile | profile

    def render(self, request: Request) -> Sent:
        """What the engine would be given for `request` (as `generate` sends it), without reading its images."""
        style = style_named(self.settings.prompt_style)
        payload = request_payload(
            request,
            self.settings.seed,
            self.count.render(request),
            style,
            with_images=False,
            sampling=self.settings.sampling,
        )
        return payload_sent(payload, request, {**self.settings.processor_kwargs(), **dict(request.processor_kwargs)})

    def text_round_trip(self) -> Callable[[str], str]:
        """Encode without special tokens, decode with the tokenizer's defaults (`harness.inputs.round_trip`), by the
        tokenizer the engine loads (`tokenizer` or the checkpoint's), read here once: the engine may run in
        other processes. The count's processor holds the checkpoint's own, so it is loaded again only for `tokenizer`."""
        counted = self.count.decode_encode()
        if counted is not None:
            return counted
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            s = self.settings
            before_loading(
                s.tokenizer or s.pretrained, s.revision if s.tokenizer is None else None, s.trust_remote_code
            )
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(
                    s.tokenizer or s.pretrained,
                    revision=s.revision if s.tokenizer is None else None,
                    trust_remote_code=s.trust_remote_code,
                )
            except Exception as err:  # every request of such a task needs it
                raise BackendFatalError(
                    f"vllm: the tokenizer of {s.tokenizer or s.pretrained} could not be loaded to "
                    f"re-decode a task's text: {type(err).__name__}: {err}"
                ) from err
        tokenizer = self._tokenizer
        return lambda text: tokenizer.decode(tokenizer(text, add_special_tokens=False).input_ids)

    def statistics(self) -> dict[str, Any]:
        seconds = {
            "engine_seconds": self.engine_seconds,
            "count_seconds": self.count_seconds,
            "engine_call_seconds": self.engine_call_seconds if self.engine_calls else None,
        }
        calls = (
            {
                "engine_calls": self.engine_calls,
                "engine_requests": self.engine_requests,
                "engine_images": self.engine_images,
                "engine_distinct_images": len(self._engine_image_ids),
                "engine_image_ids": "image_sha256 (vLLM's multi_modal_uuids)",
            }
            if self.engine_calls
            else {}
        )
        # The checkpoint's own decoding the engine applied (`generation_config=auto`) and the stop ids of `eos_tokens`,
        # beside the task's settings.
        decoding = {"checkpoint_decoding": self._engine.sampling_defaults} if self._engine is not None else {}
        built = {"engine_args": self.engine_args} if self.engine_args is not None else {}  # vllm.LLM's, all of them
        if self._engine is not None:  # how its processes started: spawn, unless the environment named a method
            built["engine_start"] = self._engine.start_method
        return {
            **{key: round(value, 3) for key, value in seconds.items() if value is not None},
            **calls,
            **decoding,
            **built,
        }

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        costs, profile = [], ImageProfile()
        for request in requests:  # each request built once here (the runner's requests are built from their rows)
            costs.append(request.token_count)
            profile = profile.covering((request,))
        self._note(profile)  # every request the run sends, before the engine is built by the first
        yield from self.chunks(requests, costs)

    def _ensure_engine(self) -> LocalEngine:
        self.check_start()
        if self._engine is None:
            s = self.settings
            given = s.engine.get(LIMIT)
            self.limit = engine_limit(
                self._profile,
                s.max_images,
                s.processor_kwargs().get("max_pixels"),
                given if isinstance(given, dict) else None,
            )
            self.image_limit = image_count(self.limit, s.max_images)
            kwargs = engine_kwargs(s, self.limit, self.windowed())
            if self._factories["llm_factory"] == "vllm:LLM":  # vLLM's own engine (not a test's stand-in)
                kwargs = before_start(kwargs)
            log.info("vllm: building the engine with %s", {k: v for k, v in kwargs.items() if k != "hf_overrides"})
            eos = tuple((self.settings.eos_tokens or "").split())
            self._engine = self.start_engine(
                lambda: LocalEngine(
                    kwargs,
                    eos_tokens=eos,
                    start_timeout=s.start_timeout,
                    past_window=s.past_window,
                    engine_log=s.engine_log,
                    **self._factories,
                ),
                lambda engine: engine.max_model_len,
                lambda engine: (
                    f"limit_mm_per_prompt={self.limit}, max_model_len={self.facts.context_length}, "
                    f"encoder cache {engine.encoder_cache} tokens; its processes' log: {engine.output.path}"
                ),
                kwargs,
            )
        return self._engine

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if not requests:
            return []
        self.observe(requests)
        engine = self._ensure_engine()
        assert self.image_limit is not None
        max_len = self.facts.context_length
        if max_len is None:
            raise RuntimeError(
                "vllm backend: the engine reported no max_model_len; pass max_model_len=N in --model_args"
            )
        responses: list[Response | None] = [None] * len(requests)
        style = style_named(self.settings.prompt_style)
        if style.content == "string" and self.count.own is None:
            raise BackendFatalError(
                f"vllm: prompt_style={style.name} places each image in its string content, which needs the "
                f"checkpoint's own processor here ({self.count.unavailable or 'tokenizer= overrides it'}); vLLM's "
                "chat would move every image to the front of the prompt"
            )
        # One engine call per (prefill or not, the requests' processor settings): LLM.chat takes both per call;
        # prompts rendered here (`EngineCount.render`) go to LLM.generate, their prefill already in the text.
        groups: dict[tuple[bool, tuple[tuple[str, object], ...]], list[tuple[int, dict[str, Any]]]] = {}
        for i, request in enumerate(requests):
            reason = screen_request(
                request,
                self.settings,
                prompt_tokens=self.prompt_tokens(request),
                max_model_len=max_len,
                image_limit=self.image_limit,
            )
            if reason is None and engine.encoder_cache is not None:  # as vLLM refuses it, without the call it aborts
                reason = encoder_refusal(self.count.image_tokens(request), engine.encoder_cache, "the engine's own")
            if reason is not None:
                responses[i] = Response(text=None, error=reason)
                continue
            try:
                payload = request_payload(
                    request, self.settings.seed, self.count.render(request), style, sampling=self.settings.sampling
                )
            except Exception as err:  # an image that cannot be read fails its sample only
                responses[i] = Response(text=None, error=f"invalid_input: {type(err).__name__}: {err}")
                continue
            # A rendered prompt holds its chat flags already: every one shares a call.
            continue_final = bool(payload["prefix"]) and payload["prompt"] is None
            groups.setdefault((continue_final, request.processor_kwargs), []).append((i, payload))
        for (continue_final, processor_kwargs), members in sorted(groups.items(), key=lambda item: repr(item[0])):
            options = {
                "use_tqdm": self.settings.use_tqdm,
                "chat_template_content_format": self.settings.chat_template_content_format,
                "add_generation_prompt": not continue_final,
                "continue_final_message": continue_final,
            }
            if style.template_kwargs:  # the variables the prompt style renders its template with
                options["chat_template_kwargs"] = dict(style.template_kwargs)
            if processor_kwargs:  # over the engine's own mm_processor_kwargs for these requests
                options["mm_processor_kwargs"] = {**self.settings.processor_kwargs(), **dict(processor_kwargs)}
            results = self.call_engine(engine.run, [p for _, p in members], options)
            for i, _ in members:
                self.engine_images += len(requests[i].images)
                self._engine_image_ids.update(image.sha256 for image in requests[i].images)
            for (i, payload), result in zip(members, results, strict=True):
                processor = {**self.settings.processor_kwargs(), **dict(requests[i].processor_kwargs)}
                responses[i] = replace(result_response(result), sent=payload_sent(payload, requests[i], processor))
        return cast(list[Response], responses)  # every position filled: each request is in one group
