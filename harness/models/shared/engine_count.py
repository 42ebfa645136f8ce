"""How an engine backend (`vllm`, `sglang`) counts a prompt before it reaches the engine: as the engine will.

vLLM and SGLang render the chat template with the checkpoint's tokenizer and expand each image placeholder by the
checkpoint's hf processor (with the engine's processor settings: vLLM's `mm_processor_kwargs`, SGLang's
`mm_process_config`), so the backend counts with that processor too (`ProcessorCount`, loaded without weights from the
checkpoint, revision and `trust_remote_code` the engine gets; from a local folder or the local Hub cache first, and
only then from the Hub). The prompt the engine receives is not pre-scaled (its processor applies `max_pixels` itself),
so no size cap is applied before the processor counts.

Where the processor cannot be loaded, the prompt is estimated by the model family's rule
(`harness.models.families`: the rows' text tokens + each image by the family's rule, markers included) plus
`length_margin` tokens for the chat template, which such a count does not see; without a family, by the rows' own
rule, said so. Either way `token_rule` says which.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Generic, TypeVar

from builders.core.contract import image_tokens as contract_image_tokens
from harness.api import BackendFatalError, GenerationSettings, ImagePart, ImageRef, Message, ModelFacts, Request
from harness.models.facts.bounded_render import ReadsAnotherTemplate
from harness.models.facts.checkpoint import load_failure, require_checkpoint
from harness.models.facts.family import ImageTokens, estimated_prompt_tokens
from harness.models.facts.remote_code import RemoteCodeRefused
from harness.models.families import checkpoint_family, style_named
from harness.models.shared.engine_args import EngineSettings
from harness.models.shared.engine_calls import template_text
from harness.models.shared.hf_counting import ProcessorCount
from harness.models.shared.library_gc import libraries_imported
from harness.models.shared.scheduling.batching import plan_batches
from harness.models.shared.screen_model import ScreenModel, family_rule
from harness.redact import redact_mapping
from harness.row_tokens import fit_within_pixels, image_costs, known_sizes

log = logging.getLogger(__name__)
E = TypeVar("E")
S = TypeVar("S", bound=EngineSettings)


class EngineCount:
    """An engine backend's count of a request: its checkpoint's processor (offline first, then the Hub when `online`),
    or its family's estimate and why (`unavailable`; see module doc). It renders with the template the engine renders
    with: the one given, the prompt style's, the checkpoint's own, else the engine's `fallback` for a checkpoint
    without one (vLLM's: `vllm_engine.backend.fallback_template`). `engine`: the engine's name, as the token rule says
    it ("as vLLM counts it"); `images_alone`: the engine expands each image as the processor expands one alone."""

    def __init__(
        self,
        settings: EngineSettings,
        chat_template: str | None,
        *,
        online: bool = True,
        engine: str = "vLLM",
        fallback: Callable[[str, str | None], str | None] | None = None,
        images_alone: bool = False,
    ) -> None:
        self.settings = settings
        self.engine = engine
        style = style_named(settings.prompt_style)
        if chat_template is None and fallback is not None and style.template_text is None:
            chat_template = fallback(settings.pretrained, settings.revision)
        self.processor: ProcessorCount | None = None
        self.unavailable = ""
        for offline in (True, False) if online else (True,):
            try:
                self.processor = ProcessorCount.load(
                    settings.pretrained,
                    revision=settings.revision,
                    trust_remote_code=settings.trust_remote_code,
                    offline=offline,
                    processor_kwargs=settings.processor_kwargs(),
                    chat_template=chat_template,
                    style=style,
                )
            except (RemoteCodeRefused, ReadsAnotherTemplate):
                raise  # the checkpoint's code, or a template no engine can render, is refused, not estimated around
            except Exception as err:  # whatever keeps the processor from loading: the family's estimate, and why
                self.unavailable = load_failure(settings.pretrained, err, offline=offline)
                continue
            self.unavailable = ""
            self.processor.images_alone = images_alone
            break
        # its family by its config on this machine, or the alias that names it; none guessed from its name
        self.family: ImageTokens | None
        self.family, self.family_known = checkpoint_family(settings.pretrained, settings.revision)
        if self.processor is None:
            log.warning("%s: %s; prompts are estimated: %s", engine.lower(), self.unavailable, self.token_rule)

    @property
    def token_rule(self) -> str:
        if self.processor is not None:
            other = (
                f"; an estimate: the engine tokenizes with tokenizer={self.settings.tokenizer}, counted here with "
                "the checkpoint's own"
                if self.settings.tokenizer is not None
                else ""
            )
            return f"{self.processor.token_rule}, as {self.engine} counts it{other}"
        images = family_rule(self.family, self.settings.pretrained, self.family_known)
        return (
            f"an estimate: {images} + length_margin={self.settings.length_margin} tokens of chat template "
            f"({self.unavailable})"
        )

    def prompt_tokens(self, request: Request) -> int:
        if self.processor is not None:
            return self.processor.prompt_tokens(request)
        s = self.settings
        return estimated_prompt_tokens(request, self.family, s.max_pixels, s.processor_kwargs()) + s.length_margin

    def image_tokens(self, request: Request) -> list[int]:
        """Each image's tokens, which an engine's encoder cache must hold (vLLM's `image_limit`): the processor's, else the
        family's rule (its markers included) under the settings, else the rows' figures."""
        if self.processor is not None:
            return self.processor.image_tokens(request)
        s = self.settings
        known = known_sizes(request.images)
        if self.family is None or known is None:
            return image_costs(request, s.max_pixels)
        given = {**s.processor_kwargs(), **dict(request.processor_kwargs)}
        return [self.family.image_tokens(*fit_within_pixels(w, h, s.max_pixels), given) for w, h in known]

    def size_tokens(self, width: int, height: int) -> int:
        """The tokens of one image of `width` x `height` (the engine's profiled image), as `image_tokens` counts."""
        image = ImageRef(f"{width}x{height}", lambda: b"", width, height)
        rows = (contract_image_tokens(width, height),)  # the rows' rule, where nothing better counts it
        request = Request("", -1, "", (Message("user", (ImagePart(image),)),), GenerationSettings(), 0, rows)
        return self.image_tokens(request)[0]

    @property
    def own(self) -> ProcessorCount | None:
        """The processor, where this count is the engine's own (no `tokenizer=` override); else None."""
        return self.processor if self.settings.tokenizer is None else None

    def exact(self, request: Request) -> bool:
        """Whether `prompt_tokens` is what the engine's processor will count (else an estimate)."""
        return self.own is not None and self.own.exact(request)

    def render(self, request: Request) -> str | None:
        """The prompt text the engine's chat would render for `request` (the processor's chat template), where this
        count is the engine's own; else None: the engine renders it."""
        return self.own.render(request) if self.own is not None else None

    def decode_encode(self) -> Any:
        """The processor tokenizer's round trip, when it is the engine's tokenizer."""
        return self.own.decode_encode if self.own is not None else None


class EngineCounted(Generic[S]):
    """What an engine backend (`vllm`, `sglang`) answers from its `EngineCount`: the count itself, loaded once on first
    use (set-up, not evaluation: `count_seconds`, and a line on stderr that scripts/gpu_check.sh reads as it reads
    the engine's), the token rule, a prompt's tokens and whether they are the engine's own count; and what both
    backends do alike around the engine: `from_args`, the engine's start (`start_engine`), its chunks, its calls
    counted, its close. A backend mixes it in before `harness.api.Model`."""

    name: str  # the backend's registered name, as the stderr lines say it, and its extra and package
    engine_name = ""  # as its project spells it
    engine_version = ""  # the release the backend is written against
    read_settings: Callable[[dict[str, str]], S]  # its `--model_args` read
    # The template its count renders a checkpoint without one with, as the engine does (`EngineCount`'s `fallback`)
    count_fallback: Callable[[str, str | None], str | None] | None = None
    # Whether the engine expands each image alone, whatever else the prompt holds (`EngineCount`'s `images_alone`)
    images_alone = False
    settings: S
    _count: EngineCount | None = None
    count_seconds: float | None = None
    _facts: ModelFacts
    _startup_error: str | None = None
    engine_seconds: float | None = None
    _engine: Any = None  # the built engine (its `close` stops it)
    engine_args: dict[str, object] | None = None  # what it was built with (`start_engine`), for the results
    # Where a run's time went, beside its evaluation time (bench/RESULTS.md, the 8K rerun): engine calls made, requests
    # sent in them, seconds inside them (image decoding and the engine's own processing and generation).
    engine_calls = 0
    engine_requests = 0
    engine_call_seconds = 0.0

    def __init__(self, settings: S, *, count_online: bool, context_length: int | None, max_images: int | None) -> None:
        self.settings = settings
        self._count_online = count_online  # False: the processor from a local folder or the Hub cache only
        self._facts = ModelFacts(
            context_length=context_length,
            max_images=max_images,
            max_pixels=settings.max_pixels,  # the runner re-counts vision tokens under this cap
            chat_template=template_text(settings.chat_template),
            request_order=settings.request_order,
            # The engine schedules its own batches: given every task's requests at once it keeps the GPU full across
            # tasks (one call per task left it decoding each task's tail alone).
            generates_across_tasks=True,
        )

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Any:
        # batch_size/max_batch_tokens are for padded backends; the engine schedules its own batches.
        with libraries_imported():  # reading them imports the engine's argument classes (`library_gc`)
            settings = cls.read_settings(args)
        if importlib.util.find_spec(cls.name) is None:
            raise ImportError(
                f"the {cls.name} backend needs {cls.engine_name} {cls.engine_version} and a CUDA GPU: "
                f"pip install -e '.[{cls.name}]'"
            )
        # In seconds, as `hf` does: vLLM would retry the Hub for half a minute, then fail on an empty device string.
        require_checkpoint(settings.pretrained, settings.revision)
        return cls(settings)  # type: ignore[call-arg]  # each backend's constructor takes its settings

    def template_sha(self) -> str | None:
        """The chat template given, by its hash, for `identity()` (None: the checkpoint's own)."""
        text = self._facts.chat_template
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] if text is not None else None

    def engine_release(self) -> str | None:
        """The installed engine's version, for `identity()`; None where it is not installed."""
        try:
            return importlib.metadata.version(self.name)
        except Exception:
            return None

    @property
    def count(self) -> EngineCount:
        if self._count is None:
            started = time.perf_counter()
            self._count = EngineCount(
                self.settings,
                self._facts.chat_template,
                online=self._count_online,
                engine=self.engine_name,
                fallback=self.count_fallback,
                images_alone=self.images_alone,
            )
            self.count_seconds = time.perf_counter() - started
            seconds = f"{self.count_seconds:.1f} s"
            print(f"harness: {self.name} prompt count ready in {seconds}", file=sys.stderr, flush=True)
        return self._count

    def check_start(self) -> None:
        """A failed start fails every later batch (and request, the runner retrying one at a time): no reloading."""
        if self._startup_error is not None:
            raise BackendFatalError(f"the {self.name} engine could not start: {self._startup_error}")

    def start_engine(
        self,
        build: Callable[[], E],
        length: Callable[[E], int | None],
        said: Callable[[E], str],
        args: Mapping[str, object],
    ) -> E:
        """The engine `build` makes (a failure kept for `check_start`, and fatal); the engine's context length
        (`length` reads it) replaces the settings'; how long it took on stderr with what the engine `said`
        (scripts/gpu_check.sh reads the line: the runner times the first task with the engine's start-up in it).
        `args`, every argument the engine is built with, given or the backend's default, is recorded with the
        results' backend figures (`engine_args`), as the engine's own log prints its non-default ones."""
        self.engine_args = redact_mapping(json.loads(json.dumps(dict(args), default=str)))
        started = time.perf_counter()
        try:
            engine = build()
        except BackendFatalError as err:  # the engine's own account: its first line is the run's
            self._startup_error = str(err).partition("\n")[0].removeprefix(f"the {self.name} engine could not start: ")
            raise
        except Exception as err:
            self._startup_error = f"{type(err).__name__}: {err}"
            raise BackendFatalError(f"the {self.name} engine could not start: {self._startup_error}") from err
        if context_length := length(engine):
            self._facts = replace(self._facts, context_length=int(context_length))
        self.engine_seconds = time.perf_counter() - started
        ready = f"harness: {self.name} engine ready in {self.engine_seconds:.1f} s ({said(engine)})"
        print(ready, file=sys.stderr, flush=True)
        return engine

    def chunks(self, requests: Sequence[Request], costs: Sequence[int]) -> Iterator[list[Request]]:
        """`requests` in chunks in the given order, bounded by `chunk_size` requests and `chunk_tokens` prompt tokens
        (`costs`); settings may mix (each request carries its own sampling), so every task of a run can share one."""
        for batch in plan_batches(
            costs,
            max_batch_tokens=self.settings.chunk_tokens,
            max_batch_size=self.settings.chunk_size,
            padded=False,
            sort_long_first=False,
        ):
            yield [requests[i] for i in batch.indices]

    def call_engine(self, run: Callable[..., E], requests: Sequence[object], *more: object) -> E:
        """`run(requests, *more)`: one engine call, counted and timed."""
        started = time.perf_counter()
        results = run(requests, *more)
        self.engine_call_seconds += time.perf_counter() - started
        self.engine_calls += 1
        self.engine_requests += len(requests)
        return results

    def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    @property
    def token_rule(self) -> str:
        return self.count.token_rule

    def prompt_tokens(self, request: Request) -> int:
        return self.count.prompt_tokens(request)

    def exact(self, request: Request) -> bool:
        return self.count.exact(request)

    def screen(self, *, max_images: int | None, **more: Any) -> ScreenModel:
        """The `--screen_only` stand-in: this backend's own count and rendering, its engine never built. Where the
        count is not the engine's own, why (the processor unavailable, or the engine's own `tokenizer=`)."""
        count, tokenizer, context_length = self.count, self.settings.tokenizer, self._facts.context_length
        if count.processor is None:
            estimate = count.unavailable
        elif tokenizer is not None:
            estimate = f"the engine tokenizes with tokenizer={tokenizer}, counted with the checkpoint's own"
        else:
            estimate = count.processor.estimated
        return ScreenModel(
            self.name,
            self.settings.pretrained,
            count=self.prompt_tokens,
            exact=self.exact,
            rule=self.token_rule,
            estimate=estimate,
            context_length=context_length,
            context_note="" if context_length else f"{self.engine_name} derives one from the model config",
            max_images=max_images,
            max_pixels=self.settings.max_pixels,
            render=self.render,  # type: ignore[attr-defined]  # each backend's own rendering of a request
            **more,
        )
