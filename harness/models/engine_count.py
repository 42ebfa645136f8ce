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

import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from builders.core.contract import image_tokens as contract_image_tokens
from harness.api import BackendFatalError, GenerationSettings, ImagePart, ImageRef, Message, ModelFacts, Request
from harness.models.families import checkpoint_family, style_named
from harness.models.families.family import ImageTokens, estimated_prompt_tokens
from harness.models.hf_counting import ProcessorCount, load_failure
from harness.models.remote_code import RemoteCodeRefused
from harness.models.screen_model import ScreenModel, family_rule
from harness.row_tokens import fit_within_pixels, image_costs, known_sizes

log = logging.getLogger(__name__)
E = TypeVar("E")


class CountSettings(Protocol):
    """What counting reads of an engine backend's settings."""

    @property
    def pretrained(self) -> str: ...
    @property
    def revision(self) -> str | None: ...
    @property
    def tokenizer(self) -> str | None: ...  # the engine's own tokenizer in place of the checkpoint's
    @property
    def trust_remote_code(self) -> bool: ...
    @property
    def max_pixels(self) -> int | None: ...
    @property
    def length_margin(self) -> int: ...  # template tokens an estimate adds
    @property
    def prompt_style(self) -> str: ...
    def processor_kwargs(self) -> Mapping[str, object]: ...


def load_processor_count(
    settings: CountSettings,
    chat_template: str | None,
    *,
    online: bool,
    fallback: Callable[[str, str | None], str | None] | None = None,
) -> tuple[ProcessorCount | None, str]:
    """The engine checkpoint's `ProcessorCount` (offline first, then the Hub when `online`), or None and why not;
    rendering with the template the engine renders with: the one given, the prompt style's, the checkpoint's own, else
    the engine's `fallback` for a checkpoint without one (vLLM's: `vllm_engine.backend.fallback_template`)."""
    if chat_template is None and fallback is not None and style_named(settings.prompt_style).template is None:
        chat_template = fallback(settings.pretrained, settings.revision)
    why = ""
    for offline in (True, False) if online else (True,):
        try:
            count = ProcessorCount.load(
                settings.pretrained,
                revision=settings.revision,
                trust_remote_code=settings.trust_remote_code,
                offline=offline,
                processor_kwargs=settings.processor_kwargs(),
                chat_template=chat_template,
                style=style_named(settings.prompt_style),
            )
        except RemoteCodeRefused:
            raise  # the checkpoint's code is refused, not estimated around
        except Exception as err:  # whatever keeps the processor from loading: the family's estimate, and why
            why = load_failure(settings.pretrained, err, offline=offline)
            continue
        return count, ""
    return None, why


class EngineCount:
    """An engine backend's count of a request: its checkpoint's processor, or its family's estimate (see module doc).
    `engine`: the engine's name, as the token rule says it ("as vLLM counts it"); `fallback`: its template for a
    checkpoint without one."""

    def __init__(
        self,
        settings: CountSettings,
        chat_template: str | None,
        *,
        online: bool = True,
        engine: str = "vLLM",
        fallback: Callable[[str, str | None], str | None] | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.processor, self.unavailable = load_processor_count(
            settings, chat_template, online=online, fallback=fallback
        )
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

    def exact(self, request: Request) -> bool:
        """Whether `prompt_tokens` is what the engine's processor will count (else an estimate)."""
        return self.processor is not None and self.settings.tokenizer is None and self.processor.exact(request)

    def render(self, request: Request) -> str | None:
        """The prompt text the engine's chat would render for `request` (the processor's chat template), where this
        count is the engine's own (its processor, no `tokenizer=` override); else None: the engine renders it."""
        if self.processor is None or self.settings.tokenizer is not None:
            return None
        return self.processor.render(request)

    def decode_encode(self) -> Any:
        """The processor tokenizer's round trip, when it is the engine's tokenizer (no `tokenizer=` override)."""
        if self.processor is None or self.settings.tokenizer is not None:
            return None
        return self.processor.decode_encode


class EngineCounted:
    """What an engine backend (`vllm`, `sglang`) answers from its `EngineCount`: the count itself, loaded once on first
    use (set-up, not evaluation: `count_seconds`, and a line on stderr that scripts/gpu_check.sh reads as it reads
    the engine's), the token rule, a prompt's tokens and whether they are the engine's own count. A backend mixes it
    in before `harness.api.Model` and says how its count is made (`make_count`)."""

    backend_name = ""  # as the stderr line names it
    engine_name = ""  # as its project spells it
    _count: EngineCount | None = None
    count_seconds: float | None = None
    _facts: ModelFacts
    _startup_error: str | None
    engine_seconds: float | None

    def make_count(self) -> EngineCount:
        raise NotImplementedError

    @property
    def count(self) -> EngineCount:
        if self._count is None:
            started = time.perf_counter()
            self._count = self.make_count()
            self.count_seconds = time.perf_counter() - started
            seconds = f"{self.count_seconds:.1f} s"
            print(f"harness: {self.backend_name} prompt count ready in {seconds}", file=sys.stderr, flush=True)
        return self._count

    def check_start(self) -> None:
        """A failed start fails every later batch (and request, the runner retrying one at a time): no reloading."""
        if self._startup_error is not None:
            raise BackendFatalError(f"the {self.backend_name} engine could not start: {self._startup_error}")

    def start_engine(self, build: Callable[[], E], length: Callable[[E], int | None], said: Callable[[E], str]) -> E:
        """The engine `build` makes (a failure kept for `check_start`, and fatal); the engine's context length
        (`length` reads it) replaces the settings'; how long it took on stderr with what the engine `said`
        (scripts/gpu_check.sh reads the line: the runner times the first task with the engine's start-up in it)."""
        started = time.perf_counter()
        try:
            engine = build()
        except Exception as err:
            self._startup_error = f"{type(err).__name__}: {err}"
            raise BackendFatalError(f"the {self.backend_name} engine could not start: {self._startup_error}") from err
        if context_length := length(engine):
            self._facts = replace(self._facts, context_length=int(context_length))
        self.engine_seconds = time.perf_counter() - started
        ready = f"harness: {self.backend_name} engine ready in {self.engine_seconds:.1f} s ({said(engine)})"
        print(ready, file=sys.stderr, flush=True)
        return engine

    @property
    def token_rule(self) -> str:
        return self.count.token_rule

    def prompt_tokens(self, request: Request) -> int:
        """The prompt as the engine will count it, before anything reaches the engine."""
        return self.count.prompt_tokens(request)

    def exact(self, request: Request) -> bool:
        """Whether `prompt_tokens` is the engine's own count of this request (else an estimate)."""
        return self.count.exact(request)

    def screen(
        self, pretrained: str, *, estimate: str, context_length: int | None, max_images: int | None, **more: Any
    ) -> ScreenModel:
        """The `--screen_only` stand-in: this backend's own count and rendering, its engine never built."""
        return ScreenModel(
            self.backend_name,
            pretrained,
            count=self.prompt_tokens,
            exact=self.exact,
            rule=self.token_rule,
            estimate=estimate,
            context_length=context_length,
            context_note="" if context_length else f"{self.engine_name} derives one from the model config",
            max_images=max_images,
            render=self.render,  # type: ignore[attr-defined]  # each backend's own rendering of a request
            **more,
        )
