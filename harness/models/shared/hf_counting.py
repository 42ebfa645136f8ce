"""How the `hf` backend counts a prompt, from what counting needs and nothing more: the checkpoint's processor
(tokenizer, chat template, image processor) and its config, never its weights.

The backend counts with it when it runs (its over-length screen, its token-budget batches, MileBench's left
truncation), and `--screen_only` loads the same two things from a local folder or the local Hub cache, offline,
to count before a GPU is booked: one code path, so the screen and the run decide every sample alike. A prompt is
the rendered chat template tokenized, each image placeholder counted as the tokens the processor expands it to
at the size the image is scaled to (`max_pixels`). Where the processor cannot tell an image's tokens from its
size, it is given a blank image of that size and the tokens its placeholder became are counted (`measured`: the
processor's own expansion, kept per size); only where that fails too is the image estimated by its model family's
rule (`harness.models.families`), and the count says so. The chat is built as the model's official wrapper built it
(`harness.models.facts.prompt_style`): the prompt counted is the prompt sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from harness.api import Request
from harness.models.facts.bounded_render import BoundedRender
from harness.models.facts.checkpoint import check_checkpoint_files, config_transformers_lacks
from harness.models.facts.prompt_style import PromptStyle
from harness.models.facts.remote_code import before_loading
from harness.models.families import config_family, style_named
from harness.models.shared.hf_expansion import (
    PROBE_SIZE,
    added_by_call,
    ahead_of_text,
    count_misses,
    framed,
    framing_tokens,
    image_counting,
    image_text,
    laid_out,
    measured,
    own_size,
    placeholder,
    probe_prompt,
    sent_as_counted,
    several_images,
    size_count,
)
from harness.models.shared.processor_settings import Settled, SettledProcessors, frozen_settings, grid_within
from harness.row_tokens import fit_within_pixels, image_costs
from harness.row_tokens import prompt_tokens as rows_prompt_tokens
from harness.sent import Sent, sent_images

if TYPE_CHECKING:
    from transformers import PreTrainedConfig


def default_context_length(config: object) -> int | None:
    """The context an `hf` run gets when none is given: the text model's `max_position_embeddings` (a config
    transformers does not know holds its text model's as the dict its file does)."""
    text_config = getattr(config, "text_config", None) or config
    if isinstance(text_config, dict):
        return text_config.get("max_position_embeddings")
    return getattr(text_config, "max_position_embeddings", None)


def image_processor_settings(processor: object) -> dict[str, object]:
    """The settings a processor's image processor holds (its `to_dict`), or none."""
    image_processor = getattr(processor, "image_processor", None)
    to_dict = getattr(image_processor, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else {}


class LoadKwargs(TypedDict, total=False):
    """What a checkpoint's config, tokenizer and processor load with."""

    revision: str | None
    trust_remote_code: bool
    local_files_only: bool


def load_config(
    pretrained: str, revision: str | None, trust_remote_code: bool, offline: bool
) -> tuple[PreTrainedConfig, LoadKwargs]:
    """The checkpoint's config, and the keyword arguments its tokenizer or processor loads with; the checkpoint's
    files checked and its remote code said (or refused) first, before transformers may import it (`--screen_only`
    included); `offline`: from a local folder or the local Hub cache only."""
    from transformers import AutoConfig

    check_checkpoint_files(pretrained, revision, weights=False)  # no FIFO or device where transformers opens a file
    before_loading(pretrained, revision, trust_remote_code, offline=offline)
    kwargs: LoadKwargs = {"revision": revision, "trust_remote_code": trust_remote_code}
    if offline:
        kwargs["local_files_only"] = True
    try:
        return AutoConfig.from_pretrained(pretrained, **kwargs), kwargs
    except ValueError:
        unknown = config_transformers_lacks(pretrained, revision)
        if unknown is None:
            raise
        return unknown, kwargs


class NoChatTemplate(ValueError):
    """A checkpoint without a chat template (PaliGemma's as published): its run and its screen are refused alike."""


class ProcessorCount:
    """Counts requests as an `hf` checkpoint's processor sees them (see the module docstring); `images_alone`: each
    image as the processor expands one alone, as vLLM does, not several together (`hf_expansion.several_images`)."""

    images_alone = False

    def __init__(
        self,
        processor: Any,
        config: Any,
        *,
        name: str,
        max_pixels: int | None = None,
        processor_kwargs: Mapping[str, object] | None = None,
        chat_template: str | None = None,
        style: PromptStyle | None = None,
        settings_at_load: bool = False,
    ) -> None:
        self.processor = processor
        # `hf`: a request's settings the image processor holds are applied as the processor is loaded
        # (`harness.models.shared.processor_settings`); vLLM's engine passes a request's settings with the call.
        self.settings_at_load = settings_at_load
        self._settled = SettledProcessors(processor)
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.style = style or style_named("default")
        template = (
            chat_template
            or self.style.template_text
            or getattr(processor, "chat_template", None)
            or getattr(self.tokenizer, "chat_template", None)
        )
        if not template:
            raise NoChatTemplate(f"{name} has no chat template; the hf backend needs one to place images")
        self.chat_template = str(template)
        self.name = name
        given = "given by chat_template=" if chat_template else None
        source = given or (f"of prompt style {self.style.name}" if self.style.template_text else "of the checkpoint")
        self._bounded = BoundedRender(f"the chat template {source}", self.chat_template, name)  # it is untrusted
        self.max_pixels = max_pixels
        # Settings every image is processed with (vLLM's mm_processor_kwargs), under a request's own.
        self.processor_kwargs = dict(processor_kwargs or {})
        self.config = config  # the checkpoint's config (its hidden size sizes SGLang's image-embedding cache)
        self.context_length = default_context_length(config)
        # Its family, by what its config says (`harness.models.families.config_family`), whatever it is called
        self.family = config_family(
            name, getattr(config, "model_type", None), getattr(config, "architectures", None) or ()
        )
        # The placeholder the processor expands, where the chat template puts an image (`hf_expansion.placeholder`):
        # the text a string-content style puts there too
        self._probe = probe_prompt(processor, self.chat_template, name, self._bounded)
        marker = placeholder(processor, self._probe)
        self._image_token_id, self.counts_images = image_counting(processor, self.tokenizer, marker)
        self.image_token = marker or str(getattr(processor, "image_token", None) or "<image>")
        # What an image is measured and probed in: its placeholder as the chat template writes it
        self._image_text = image_text(self._probe, self.tokenizer, self._image_token_id) or self.image_token
        bos = getattr(self.tokenizer, "bos_token", None)
        adds_bos = bool(bos) and self.tokenizer("a").input_ids[:1] == [self.tokenizer.convert_tokens_to_ids(bos)]
        # The template's BOS, dropped from the text where the tokenizer adds its own: one BOS, as
        # `apply_chat_template(tokenize=True)` gives (`PromptStyle.bos == "template"`).
        self._template_bos = str(bos) if self.style.bos == "template" and adds_bos else ""
        self._counted: dict[tuple[str, int, int, int, object], int] = {}
        self._measured: dict[tuple[int, int, int, object], int] = {}
        self.measures_images = self.measured_exact = False
        # A size count that misses tokens the processor puts around an image: measured instead
        self.counts_images = self.counts_images and self._counts_as_sent()
        # Without a (true) size counter: the processor's own expansion of a blank image of each size, where it gives one
        self.measures_images = not self.counts_images and self._measure(processor, 56, 56, {}) is not None
        # Measured alone, an image's tokens may still merge with the text beside it (Idefics2's space after an image):
        # exact only where the probe prompt counts as sent
        self.measured_exact = self.measures_images and self._counts_as_sent()
        # One image's tokens written ahead of the text whatever the images (BLIP-2's queries): one image a prompt
        self.ahead = ahead_of_text(processor, self.tokenizer) if self._image_token_id is None else None
        self.max_images = 1 if self.ahead else None

    @classmethod
    def load(
        cls,
        pretrained: str,
        *,
        revision: str | None = None,
        trust_remote_code: bool = False,
        max_pixels: int | None = None,
        offline: bool = False,
        processor_kwargs: Mapping[str, object] | None = None,
        chat_template: str | None = None,
        image_only: bool = False,
        pil: bool = False,
        style: PromptStyle | None = None,
        settings_at_load: bool = False,
        max_grid_tiles: int | None = None,
    ) -> ProcessorCount:
        """The processor and config of `pretrained` (a Hub name or a local folder); `offline`: only from a local
        folder or the local Hub cache, never the network; `image_only`: the processor built without its video
        processor (`harness.models.shared.hf_image_only`); `pil`: with transformers' PIL image processor where it has one
        (`backend="pil"`; else its torchvision one, where installed); `settings_at_load`: a request's processor
        settings applied as the processor is loaded, as the `hf` backend sends them (`settle`); `max_grid_tiles`: its
        AnyRes grid pinpoints kept to those of at most that many tiles (`harness.models.shared.processor_settings.grid_within`)."""
        from transformers import AutoProcessor

        config, kwargs = load_config(pretrained, revision, trust_remote_code, offline)
        if image_only:
            from harness.models.shared.hf_image_only import load_image_only_processor

            processor = load_image_only_processor(pretrained, config, **kwargs)
        else:
            processor = AutoProcessor.from_pretrained(pretrained, **kwargs, **({"backend": "pil"} if pil else {}))
        if max_grid_tiles is not None:
            processor = grid_within(processor, max_grid_tiles)
        return cls(
            processor,
            config,
            name=pretrained,
            max_pixels=max_pixels,
            processor_kwargs=processor_kwargs,
            chat_template=chat_template,
            style=style,
            settings_at_load=settings_at_load,
        )

    def settle(self, settings: Mapping[str, object] | None) -> Settled:
        """The processor a request with these processor settings is processed with, and the settings left for the
        call: with `settings_at_load`, those its image processor holds applied as it was loaded (one processor per
        distinct setting, kept); else the loaded processor, every setting for the call."""
        if self.settings_at_load:
            return self._settled(settings)
        return Settled(self.processor, dict(settings or {}), {})

    def _measure(self, processor: Any, width: int, height: int, call: Mapping[str, object]) -> int | None:
        """`measured`, kept per size and settings; None where the processor cannot be asked so."""
        key = (id(processor), width, height, frozen_settings(call))  # a request's settings may make another processor
        if key not in self._measured:
            if self._image_token_id is None:
                return None
            try:
                self._measured[key] = measured(
                    processor, self.tokenizer, self._image_token_id, self._image_text, (width, height), call
                )
            except Exception:  # a processor that needs more than a blank image: its family's estimate instead
                return None
        return self._measured[key]

    @property
    def token_rule(self) -> str:
        if self.ahead:
            images = f"its one image as the {self.ahead} tokens the processor writes ahead of the text ("
        elif self.counts_images:
            images = "each image as the processor expands it ("
        elif self.measures_images:
            exact = "exact for one image; " if self.measured_exact else "an estimate: its tokens merge with the text; "
            images = f"each image as the processor expands a blank image of its size ({exact}several may share framing "
            images += "tokens; "
        else:
            rule = self.family.rule if self.family else "the rows' rule"
            images = f"each image estimated by {rule} (the processor cannot tell an image's tokens from its size; "
        name = type(self.processor).__name__
        return f"hf processor {name}: the chat template's tokens, {images}checked again on the real input_ids before generate)"

    @property
    def estimated(self) -> str:
        """Why its image counts are estimates, or "" where the processor counts each image itself."""
        kind = type(self.processor).__name__
        if self.measures_images:
            merged = "" if self.measured_exact else " (its tokens merge with the text beside it)"
            return (
                f"{kind} cannot tell an image's tokens from its size: each is measured alone{merged}, and images side "
                "by side may share framing tokens"
            )
        return "" if self.counts_images or self.ahead else f"{kind} cannot tell an image's tokens from its size"

    def decode_encode(self, text: str) -> str:
        """Encode without special tokens, decode with the tokenizer's defaults (a task's `harness.inputs.round_trip`)."""
        return self.tokenizer.decode(self.tokenizer(text, add_special_tokens=False).input_ids)

    def render(self, request: Request) -> str:
        """The prompt text the processor is given: the chat as the prompt style builds it, rendered by the chat
        template (the answer prefix continued as the start of the assistant's turn where the style sends it), an
        image marker where each image goes, after the task's text round trip where it asks for one (so the screen
        counts what the run sends: `Request.as_sent`); tokenized with the tokenizer's defaults, it starts with one BOS
        where the style says so."""
        chat = self.style.chat(request.as_sent, request.assistant_prefix, self.image_token)
        continued = self.style.continues(request)
        what = f"{self.name}: the chat template's prompt of {request.task} doc {request.doc_id}"
        flags = {"add_generation_prompt": not continued, "continue_final_message": continued, "tokenize": False}
        flags.update(self.style.template_kwargs)

        def render() -> object:
            return self.processor.apply_chat_template(chat, chat_template=self.chat_template, **flags)

        # bounded in time, memory and output: a loop of range(100000) twice hung, a gigabyte written for image turns
        # only made the tokenizer ask for eight
        prompt = self._bounded(render, chat, what)
        bos = self._template_bos
        return prompt[len(bos) :] if bos and prompt.startswith(bos) else prompt

    def sent(self, request: Request, prompt: str | None = None) -> Sent:
        """The request as the `hf` backend gives it to the processor (`harness.sent`): its prompt (`render`), each
        image at the size the rows record scaled to `max_pixels`, with the request's processor settings."""
        sizes: list[tuple[str, int | None, int | None]] = []
        for image in request.images:
            if image.width and image.height:
                sizes.append((image.sha256, *fit_within_pixels(image.width, image.height, self.max_pixels)))
            else:
                sizes.append((image.sha256, None, None))
        text = self.render(request) if prompt is None else prompt
        return Sent(text, sent_images(sizes, {**self.processor_kwargs, **dict(request.processor_kwargs)}))

    def exact(self, request: Request) -> bool:
        """Whether `prompt_tokens` is what the processor will build for this request (else an estimate)."""
        images = request.images
        # A measured count is the processor's own for one image; images side by side may share framing tokens
        # (Idefics2 merges two `<fake_token_around_image>` into one), so several are an estimate.
        measured_exact = self.measured_exact and len(images) == 1
        settled = self.settle({**self.processor_kwargs, **dict(request.processor_kwargs)})
        counted = self.counts_images and not count_misses(settled.processor, settled.call)  # else measured alone
        return not images or (
            (counted or measured_exact or bool(self.ahead))
            and all(i.width is not None and i.height is not None for i in images)
        )

    def prompt_tokens(self, request: Request) -> int:
        """The prompt's tokens as the model sees them; the rows' rule where an image's size or placeholder is unknown."""
        images = request.images
        unplaced = images and self._image_token_id is None and not self.ahead  # no placeholder, no tokens ahead
        if any(i.width is None or i.height is None for i in images) or unplaced:
            return rows_prompt_tokens(request, self.max_pixels)
        # A truncated request (`harness.inputs.truncation`) is another prompt of the same document: its figures tell them apart.
        key = (
            request.task,
            request.doc_id,
            len(images),
            request.text_tokens,
            frozen_settings(request.processor_kwargs),
        )
        if key not in self._counted:
            # The prompt as the processor lays it out and frames each image (`harness.models.shared.hf_expansion`), each
            # image's tokens one token there, then as many as the image makes, and what the processor's call adds.
            prompt = self.render(request)
            text, token_id = framed(self.processor, laid_out(self.processor, prompt, len(images)))
            ids = self.tokenizer(text).input_ids
            placeholders = ids.count(self._image_token_id if token_id is None else token_id) if images else 0
            added = added_by_call(self.processor, self.tokenizer, prompt, self._image_text)
            self._counted[key] = len(ids) + added - placeholders + sum(self.image_tokens(request))
        return self._counted[key]

    def image_tokens(self, request: Request) -> list[int]:
        """Each image's tokens as the processor expands it (its family's rule, or the rows' figures, where it cannot say)."""
        # Sizes as the rows record them; fit_within_pixels hands an unknown one (None, a hook's image) back as given.
        sizes = [fit_within_pixels(i.width, i.height, self.max_pixels) for i in request.images]  # type: ignore[arg-type]
        settings = {**self.processor_kwargs, **dict(request.processor_kwargs)}
        if not sizes or self.ahead:
            return [self.ahead or 0] + [0] * (len(sizes) - 1) if sizes else []
        counted = self._sized(sizes, settings)
        return image_costs(request, self.max_pixels) if counted is None else counted

    def _sized(self, sizes: list[tuple[int, int]], settings: dict[str, object]) -> list[int] | None:
        """`image_tokens` of images of these sizes; None where only the rows' figures can say."""
        settled = self.settle(settings)
        held = image_processor_settings(settled.processor)
        missed = self.counts_images and count_misses(settled.processor, settled.call)  # each image measured instead
        if self.counts_images and not missed:
            if not self.images_alone and (several := several_images(settled.processor, len(sizes))) is not None:
                return several
            processor = settled.processor
            if any(own_size(processor, held, w, h) for w, h in sizes):
                return [
                    size_count(processor, [(w, h)], {**settled.call, **own_size(processor, held, w, h)})[0]
                    for w, h in sizes
                ]
            return size_count(processor, sizes, settled.call)
        if self.measures_images or missed:
            counts = [self._measure(settled.processor, w, h, settled.call) for w, h in sizes]
            framing = framing_tokens(settled.processor, self.tokenizer, self._image_text)  # the prompt's count has it
            if all(n is not None for n in counts):
                return [int(n or 0) - framing for n in counts]
        if self.family is not None:
            # The family's rule reads the settings the processor holds (Mantis's unsplit images) under the request's.
            return [self.family.image_tokens(w, h, {**held, **settings}) for w, h in sizes]
        return None

    def _counts_as_sent(self) -> bool:
        """Whether the count of one image of a probe size, in a plain prompt and in one the chat template renders, is
        the input ids the processor's own call builds (`hf_expansion.sent_as_counted`); a processor that cannot be
        probed so is not claimed exact."""
        try:
            call = self.settle(dict(self.processor_kwargs)).call
            sized = self._sized([PROBE_SIZE], dict(self.processor_kwargs))
            texts = (f"Look: {self._image_text} what?", self._probe)
            return sized is not None and all(
                text and sent_as_counted(self.processor, self.tokenizer, text, self._image_token_id, sum(sized), call)
                for text in texts
            )
        except Exception:
            return False
