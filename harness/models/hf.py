"""`hf`: a transformers vision-language model (`AutoModelForImageTextToText` + `AutoProcessor`).

Each request's images are decoded once, scaled down to `max_pixels` if given, and passed with the
chat-template prompt to the processor; a batch is left-padded and decoded greedily (or sampled, if
the task asks). Only the last position's logits are computed during prefill (transformers'
`logits_to_keep`, which `generate` uses where the model supports it).

Batches: `--batch_size B` requests each, in the runner's long-first order; or, with
`--max_batch_tokens N`, by the rows' precomputed token counts (`harness.batching`): a batch never holds
more than N tokens counting padding (requests x its longest prompt + max_gen_toks), at most B requests
(the CLI's default B is 64 then), long-first; a request over N alone runs in a batch of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from harness.api import GenerationSettings, ImagePart, Model, Request, Response
from harness.batching import token_budget_batches
from harness.images import fit_within_pixels
from harness.models.args import settings_from_args
from harness.models.registry import register_model
from harness.round_trip import sent_messages


@dataclass(frozen=True)
class HFSettings:
    pretrained: str  # hub name or local folder
    revision: str | None = None
    dtype: str = "auto"
    device: str | None = None  # default: cuda when available, else cpu
    device_map: str | None = None
    max_pixels: int | None = None  # images larger than this area are scaled down first
    trust_remote_code: bool = False
    threads: int | None = None  # torch CPU threads
    context_length: int | None = None  # default: the text model's max_position_embeddings
    max_images: int | None = None
    attn_implementation: str | None = None


def _load_kwargs(settings: HFSettings, torch: Any) -> dict[str, Any]:
    """`from_pretrained` arguments for the model weights."""
    kwargs: dict[str, Any] = {"revision": settings.revision, "trust_remote_code": settings.trust_remote_code,
                              "dtype": "auto"}
    if settings.dtype != "auto":
        if not isinstance(getattr(torch, settings.dtype, None), torch.dtype):
            raise ValueError(f"--model_args dtype={settings.dtype!r}: not a torch dtype (try bfloat16, float16, float32, auto)")
        kwargs["dtype"] = getattr(torch, settings.dtype)
    if settings.device_map:
        kwargs["device_map"] = settings.device_map
    if settings.attn_implementation:
        kwargs["attn_implementation"] = settings.attn_implementation
    return kwargs


def _processor_image_counting(processor: Any, tokenizer: Any) -> tuple[int | None, bool]:
    """(the image placeholder's token id, whether the processor tells how many tokens an image of a given
    size becomes without seeing its pixels: transformers' `_get_num_multimodal_tokens`, as vLLM uses it)."""
    token = getattr(processor, "image_token", None)
    token_id = getattr(processor, "image_token_id", None)
    if token_id is None and isinstance(token, str):
        token_id = tokenizer.convert_tokens_to_ids(token)
    counter = getattr(processor, "_get_num_multimodal_tokens", None)
    if token_id is None or not callable(counter):
        return token_id, False
    try:
        counts = counter(image_sizes=[(56, 56)]).num_image_tokens
    except Exception:  # a processor that needs more than sizes: fall back to the contract's rule
        return token_id, False
    return token_id, isinstance(counts, list) and len(counts) == 1 and isinstance(counts[0], int)


@register_model("hf")
class HFModel(Model):
    def __init__(self, settings: HFSettings, *, batch_size: int = 1, max_batch_tokens: int | None = None) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        if settings.threads:
            torch.set_num_threads(settings.threads)
        self.torch = torch
        self.settings = settings
        self.pretrained = settings.pretrained
        self.revision = settings.revision
        self.max_pixels = settings.max_pixels
        self.max_images = settings.max_images
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.device = settings.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.processor = AutoProcessor.from_pretrained(settings.pretrained, revision=settings.revision,
                                                       trust_remote_code=settings.trust_remote_code)
        self.model = AutoModelForImageTextToText.from_pretrained(settings.pretrained, **_load_kwargs(settings, torch))
        self.model.eval()
        if not settings.device_map:
            self.model.to(self.device)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        template = getattr(self.processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None)
        if not template:
            raise ValueError(f"{settings.pretrained} has no chat template; this backend needs one to place images")
        self.chat_template = str(template)
        self.chat_template_sha256 = hashlib.sha256(self.chat_template.encode()).hexdigest()
        text_config = getattr(self.model.config, "text_config", self.model.config)
        self.context_length = settings.context_length or getattr(text_config, "max_position_embeddings", None)
        self.dtype = str(self.model.dtype).replace("torch.", "")
        self._image_token_id, self._counts_images = _processor_image_counting(self.processor, self.tokenizer)
        self._prompt_tokens: dict[tuple[str, int, int, int], int] = {}

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        if "pretrained" not in args:
            raise ValueError("hf needs a checkpoint: --model_args pretrained=ORG/NAME or a local folder")
        return cls(settings_from_args(HFSettings, args, "hf"), batch_size=batch_size, max_batch_tokens=max_batch_tokens)

    # ----------------------------------------------------------------------------- batching
    def request_cost(self, request: Request) -> int:
        """Tokens a request takes in a padded batch: its prompt (vision tokens counted under this
        model's pixel cap, as the runner screens them) plus what it may generate."""
        return self.prompt_tokens(request) + request.settings.max_gen_toks

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        if not self.max_batch_tokens:
            return super().batches(requests)
        return token_budget_batches(requests, max_batch_tokens=self.max_batch_tokens, max_batch_size=self.batch_size,
                                    padded=True, cost=self.request_cost)

    # ----------------------------------------------------------------------------- counting
    @property
    def token_rule(self) -> str:
        if self._counts_images:
            return (f"hf processor {type(self.processor).__name__}: the chat template's tokens, each image as the "
                    "processor expands it (checked again on the real input_ids before generate)")
        return super().token_rule

    def prompt_tokens(self, request: Request) -> int:
        """The prompt as this model sees it: the rendered chat template tokenized, each image placeholder
        counted as the tokens the processor expands it to (at the size it is scaled to); the contract's
        rule where the processor cannot say, or an image's size is unknown."""
        sizes = [(i.width, i.height) for i in request.images]
        if not self._counts_images or any(w is None or h is None for w, h in sizes):
            return super().prompt_tokens(request)
        # A truncated request (`harness.truncation`) is another prompt of the same document: its figures tell them apart.
        key = (request.task, request.doc_id, len(sizes), request.text_tokens)
        if key not in self._prompt_tokens:
            ids = self.tokenizer(self._prompt(request)).input_ids
            fitted = [fit_within_pixels(w, h, self.max_pixels) for w, h in sizes]  # type: ignore[arg-type]
            image_tokens = self.processor._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in fitted],
                                                                     **dict(request.processor_kwargs))
            placeholders = ids.count(self._image_token_id)
            self._prompt_tokens[key] = len(ids) - placeholders + sum(image_tokens.num_image_tokens)
        return self._prompt_tokens[key]

    def text_round_trip(self) -> Callable[[str], str]:
        """Encode without special tokens, decode with the tokenizer's defaults (`harness.round_trip`)."""
        tokenizer = self.tokenizer
        return lambda text: tokenizer.decode(tokenizer(text, add_special_tokens=False).input_ids)

    # ---------------------------------------------------------------------------- preparing
    def _images(self, request: Request) -> list[Image.Image]:
        images = []
        for index, ref in enumerate(request.images):
            try:
                image = ref.pil()
            except Exception as err:  # final: the same bytes would fail again on every rerun
                raise ValueError(f"invalid_input: image {index + 1} (sha256 {ref.sha256[:12]}) failed to decode: "
                                 f"{type(err).__name__}: {err}") from None
            size = fit_within_pixels(image.width, image.height, self.max_pixels)
            if size != image.size:
                image = image.resize(size, Image.Resampling.BICUBIC)
            images.append(image)
        return images

    def _prompt(self, request: Request) -> str:
        chat = []
        for message in sent_messages(request, self.text_round_trip())[0]:  # a task's text round trip applied
            parts = [{"type": "image"} if isinstance(p, ImagePart) else {"type": "text", "text": p.text}
                     for p in message.content]
            chat.append({"role": message.role, "content": parts})
        prompt = self.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        return prompt + request.assistant_prefix

    # --------------------------------------------------------------------------- generating
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        responses: list[Response | None] = [None] * len(requests)
        prepared: list[tuple[int, str, list[Image.Image]]] = []
        for i, request in enumerate(requests):
            try:
                prepared.append((i, self._prompt(request), self._images(request)))
            except Exception as err:
                responses[i] = Response(None, error=str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}")
        # Requests of one task share settings; group anyway so a mixed batch stays correct.
        groups: dict[tuple[GenerationSettings, tuple[tuple[str, Any], ...]], list[tuple[int, str, list[Image.Image]]]] = {}
        for item in prepared:
            request = requests[item[0]]
            groups.setdefault((request.settings, request.processor_kwargs), []).append(item)
        for (settings, processor_kwargs), items in groups.items():
            for (i, _, _), response in zip(items, self._generate(items, settings, dict(processor_kwargs)), strict=True):
                responses[i] = response
        return [r if r is not None else Response(None, error="no response") for r in responses]

    def _generate(self, items: list[tuple[int, str, list[Image.Image]]], settings: GenerationSettings,
                  processor_kwargs: dict[str, Any] | None = None) -> list[Response]:
        texts = [text for _, text, _ in items]
        images = [imgs for _, _, imgs in items]
        inputs = self.processor(text=texts, images=images if any(images) else None, padding=True, return_tensors="pt",
                                **(processor_kwargs or {}))
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        over = [k for k, n in enumerate(lengths) if self.context_length and n + settings.max_gen_toks > self.context_length]
        if over:  # the screen's count was short: what does not fit is never sent
            kept = [item for k, item in enumerate(items) if k not in over]
            fitted = iter(self._generate(kept, settings, processor_kwargs) if kept else [])
            return [Response(None, error=f"over_length: {lengths[k]} prompt tokens (the processor's input_ids) + "
                                         f"max_gen_toks {settings.max_gen_toks} > context {self.context_length}")
                    if k in over else next(fitted) for k in range(len(items))]
        return self._decode(inputs, settings)

    def _decode(self, inputs: Any, settings: GenerationSettings) -> list[Response]:
        torch = self.torch
        inputs = inputs.to(self.model.device)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        kwargs: dict[str, Any] = {"max_new_tokens": settings.max_gen_toks,
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if settings.do_sample and settings.temperature > 0:
            kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            output = self.model.generate(**inputs, **kwargs)
        new_tokens = output[:, inputs["input_ids"].shape[1]:]
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
        responses = []
        for row, prompt_length in zip(new_tokens.tolist(), prompt_lengths, strict=True):
            end = next((k for k, token in enumerate(row) if token in eos_ids), None)
            ids = row if end is None else row[:end]
            stopped = end is not None
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            for stop in settings.until:
                if stop and stop in text:
                    text, stopped = text.split(stop, 1)[0], True
            finish = "stop" if stopped or len(ids) < settings.max_gen_toks else "length"
            responses.append(Response(text, finish_reason=finish, usage={
                "prompt_tokens": int(prompt_length), "completion_tokens": len(ids)}))
        return responses

    # ------------------------------------------------------------------------------ identity
    def identity(self) -> dict[str, Any]:
        config = self.model.config
        identity: dict[str, Any] = {
            "model": "hf",
            "pretrained": self.pretrained,
            "revision": self.revision,
            "commit": getattr(config, "_commit_hash", None),
            "dtype": self.dtype,
            "max_pixels": self.max_pixels,
            "trust_remote_code": self.settings.trust_remote_code,
            "chat_template_sha256": self.chat_template_sha256,
            "context_length": self.context_length,
            "max_images": self.max_images,
        }
        local = Path(self.pretrained)
        if local.is_dir():
            # A local checkpoint has no commit: fingerprint its config and weight files instead.
            files = sorted((p.name, p.stat().st_size) for p in local.iterdir() if p.suffix in (".safetensors", ".bin"))
            config_text = (local / "config.json").read_text() if (local / "config.json").is_file() else ""
            identity["local_files_sha256"] = hashlib.sha256(json.dumps([files, config_text]).encode()).hexdigest()
        return identity

    def close(self) -> None:
        del self.model
        if self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()
