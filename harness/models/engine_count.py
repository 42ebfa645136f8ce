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
from collections.abc import Mapping
from typing import Any, Protocol

from builders.core.contract import TOKEN_RULE
from harness.api import Request
from harness.models.families import family_of, style_named
from harness.models.families.family import ImageTokens, estimated_prompt_tokens
from harness.models.hf_counting import ProcessorCount, load_failure
from harness.models.remote_code import RemoteCodeRefused

log = logging.getLogger(__name__)


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
    settings: CountSettings, chat_template: str | None, *, online: bool
) -> tuple[ProcessorCount | None, str]:
    """The engine checkpoint's `ProcessorCount` (offline first, then the Hub when `online`), or None and why not."""
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
    `engine`: the engine's name, as the token rule says it ("as vLLM counts it")."""

    def __init__(
        self, settings: CountSettings, chat_template: str | None, *, online: bool = True, engine: str = "vLLM"
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.processor, self.unavailable = load_processor_count(settings, chat_template, online=online)
        self.family: ImageTokens | None = family_of(settings.pretrained)
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
        if self.family is not None:
            images = f"each image by the {self.family.name} family's rule: {self.family.rule}"
        else:
            images = (
                f"each image by the rows' own rule ({TOKEN_RULE}): no family rule is known for "
                f"{self.settings.pretrained}"
            )
        return (
            f"an estimate: the rows' text_tokens + {images} + length_margin={self.settings.length_margin} tokens "
            f"of chat template ({self.unavailable})"
        )

    def prompt_tokens(self, request: Request) -> int:
        if self.processor is not None:
            return self.processor.prompt_tokens(request)
        s = self.settings
        return estimated_prompt_tokens(request, self.family, s.max_pixels, s.processor_kwargs()) + s.length_margin

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
