"""How the vllm backend counts a prompt before it reaches the engine: as vLLM will.

vLLM renders the chat template with the checkpoint's tokenizer and expands each image placeholder by the
checkpoint's hf processor (with the engine's `mm_processor_kwargs`), so the backend counts with that processor too
(`ProcessorCount`, loaded without weights from the checkpoint, revision and `trust_remote_code` the engine gets;
from a local folder or the local Hub cache first, and only then from the Hub). The prompt vLLM receives is not
pre-scaled (vLLM's processor applies `max_pixels` itself), so no size cap is applied before the processor counts.

Where the processor cannot be loaded, the prompt is estimated by the model family's rule
(`harness.models.families`: the rows' text tokens + each image by the family's rule, markers included) plus
`length_margin` tokens for the chat template, which such a count does not see; without a family, by the rows' own
rule, said so. Either way `token_rule` says which.
"""

from __future__ import annotations

import logging
from typing import Any

from builders.core.contract import image_tokens as contract_image_tokens
from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request
from harness.models.families import checkpoint_family, style_named
from harness.models.families.family import ImageTokens, estimated_prompt_tokens
from harness.models.hf_counting import ProcessorCount, load_failure
from harness.models.remote_code import RemoteCodeRefused
from harness.models.screen_model import family_rule
from harness.models.vllm_engine.settings import VLLMSettings
from harness.row_tokens import fit_within_pixels, image_costs, known_sizes

log = logging.getLogger(__name__)


def fallback_template(pretrained: str, revision: str | None) -> str | None:
    """The template vLLM renders a checkpoint with where the checkpoint has none of its own: its renderer's last
    resort, the template it ships for the config's `model_type` (`vllm/renderers/hf.py`, `resolve_chat_template`;
    MiniCPM-V 4.5's `template_minicpmv45.jinja`), read as its `load_chat_template` reads it; None where the checkpoint
    has one, is not on this machine, or vLLM ships none for it."""
    from harness.models.checkpoint_config import read_checkpoint

    own = read_checkpoint(pretrained, revision)
    if own is None or own.chat_template is not None or own.model_type is None:
        return None
    try:
        from vllm.transformers_utils.chat_templates import get_chat_template_fallback_path
    except ImportError:  # no vLLM here (a screen): the checkpoint's missing template is said by the count
        return None
    path = get_chat_template_fallback_path(model_type=own.model_type, tokenizer_name_or_path=pretrained)
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None


def load_processor_count(
    settings: VLLMSettings, chat_template: str | None, *, online: bool
) -> tuple[ProcessorCount | None, str]:
    """The engine checkpoint's `ProcessorCount` (offline first, then the Hub when `online`), or None and why not;
    rendering with the template vLLM renders with: the one given, the prompt style's, the checkpoint's own, else
    vLLM's fallback for it (`fallback_template`)."""
    if chat_template is None and style_named(settings.prompt_style).template is None:
        chat_template = fallback_template(settings.pretrained, settings.revision)
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
    """The vllm backend's count of a request: its checkpoint's processor, or its family's estimate (see module doc)."""

    def __init__(self, settings: VLLMSettings, chat_template: str | None, *, online: bool = True) -> None:
        self.settings = settings
        self.processor, self.unavailable = load_processor_count(settings, chat_template, online=online)
        # its family by its config on this machine, or the alias that names it; none guessed from its name
        self.family: ImageTokens | None
        self.family, self.family_known = checkpoint_family(settings.pretrained, settings.revision)
        if self.processor is None:
            log.warning("vllm: %s; prompts are estimated: %s", self.unavailable, self.token_rule)

    @property
    def token_rule(self) -> str:
        if self.processor is not None:
            other = (
                f"; an estimate: the engine tokenizes with tokenizer={self.settings.tokenizer}, counted here with "
                "the checkpoint's own"
                if self.settings.tokenizer is not None
                else ""
            )
            return f"{self.processor.token_rule}, as vLLM counts it{other}"
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
        """Each image's tokens, which vLLM's encoder cache must hold (`image_limit`): the processor's, else the
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
        """Whether `prompt_tokens` is what vLLM's processor will count (else an estimate)."""
        return self.processor is not None and self.settings.tokenizer is None and self.processor.exact(request)

    def render(self, request: Request) -> str | None:
        """The prompt text vLLM's chat would render for `request` (the processor's chat template), where this count
        is the engine's own (its processor, no `tokenizer=` override); else None: the engine renders it."""
        if self.processor is None or self.settings.tokenizer is not None:
            return None
        return self.processor.render(request)

    def decode_encode(self) -> Any:
        """The processor tokenizer's round trip, when it is the engine's tokenizer (no `tokenizer=` override)."""
        if self.processor is None or self.settings.tokenizer is not None:
            return None
        return self.processor.decode_encode
