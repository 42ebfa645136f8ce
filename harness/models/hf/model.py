"""`hf`: a transformers vision-language model (`AutoModelForImageTextToText` + `AutoProcessor`).

Each request's images are decoded once, in its batch (on `image_threads` threads, by default one per core up to
4: PIL's decode and resize release the GIL), scaled down to `max_pixels` if given, then to the size the processor scales them to where
that is proven to change nothing (`harness.models.hf.presize`), and passed with the chat-template prompt to the
processor; a batch is left-padded and decoded greedily (or sampled, if the task asks). Only the last
position's logits are computed during prefill (transformers' `logits_to_keep`, which `generate` uses where
the model supports it).

Batches: `--batch_size B` requests each, in the runner's long-first order; or, with
`--max_batch_tokens N`, by the rows' precomputed token counts (`harness.models.scheduling.batching`): a batch never holds
more than N tokens counting padding (requests x its longest prompt + max_gen_toks), at most B requests
(the CLI's default B is 64 then), long-first; a request over N alone runs in a batch of its own.
`--batch_size auto`: batches start at `--max_batch_size` (64) requests and halve on out-of-memory
(`harness.models.scheduling.auto_batch`); the size that fit is recorded in the results.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from PIL import Image

from harness.api import GenerationSettings, ImageRef, Model, ModelFacts, Request, Response
from harness.models.args import settings_from_args
from harness.models.checkpoint import require_checkpoint
from harness.models.families import style_named
from harness.models.hf.presize import ProcessorScale
from harness.models.hf.settings import HFSettings, context_limit, default_image_threads, load_kwargs
from harness.models.hf_counting import ProcessorCount
from harness.models.processor_settings import frozen_settings
from harness.models.registry import register_model
from harness.models.scheduling.auto_batch import FittingBatchSize
from harness.models.scheduling.batching import token_budget_batches
from harness.row_tokens import fit_within_pixels
from harness.sent import Sent


@register_model("hf")
class HFModel(Model):
    def __init__(
        self,
        settings: HFSettings,
        *,
        batch_size: int = 1,
        max_batch_tokens: int | None = None,
        load_weights: bool = True,
    ) -> None:
        import torch
        from transformers import AutoModelForImageTextToText

        if settings.threads:
            torch.set_num_threads(settings.threads)
        self.torch = torch
        self.settings = settings
        self.pretrained = settings.pretrained
        self.revision = settings.revision
        self.max_batch_tokens = max_batch_tokens
        self.fitting: FittingBatchSize | None = None  # --batch_size auto
        self.image_threads = settings.image_threads or default_image_threads()
        self._image_pool: ThreadPoolExecutor | None = None  # made at the first batch with more than one image
        self.device = settings.device or ("cuda" if torch.cuda.is_available() else "cpu")
        # What counting needs (processor, config) first: `--screen_only` loads the same without the weights.
        self.count = ProcessorCount.load(
            settings.pretrained,
            revision=settings.revision,
            trust_remote_code=settings.trust_remote_code,
            max_pixels=settings.max_pixels,
            image_only=settings.processor == "image_only",
            style=style_named(settings.prompt_style),
            settings_at_load=True,
            max_grid_tiles=settings.max_grid_tiles,
        )
        self.processor = self.count.processor
        # Each image at its processor's size, in the image threads: one scaler per processor a request's settings
        # make (`ProcessorCount.settle`).
        self._scalers: dict[int, ProcessorScale] = {id(self.processor): ProcessorScale(self.processor)}
        # None without weights: a Ray pool's driver, which counts and batches (`without_weights`). Any: transformers
        # annotates `to` and `generate` of the auto class's models for other callers (`to(device)` reads as an error).
        self.model: Any = None
        if load_weights:
            self.model = AutoModelForImageTextToText.from_pretrained(
                settings.pretrained, **load_kwargs(settings, torch, self.processor)
            )
            self.model.eval()
            if not settings.device_map:
                self.model.to(self.device)
        self.tokenizer = self.count.tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.chat_template_sha256 = hashlib.sha256(self.count.chat_template.encode()).hexdigest()
        self._facts = ModelFacts(
            context_length=context_limit(settings, self.count.context_length),
            max_images=settings.max_images,
            max_pixels=settings.max_pixels,
            batch_size=batch_size,
            chat_template=self.count.chat_template,
            request_order=settings.request_order,
            # `_batch_images`: once per image, in its batch; one that fails is the request's invalid_input
            decodes_images=True,
        )
        self.dtype = str(self.model.dtype).replace("torch.", "") if self.model is not None else settings.dtype

    @classmethod
    def from_args(
        cls,
        args: dict[str, str],
        *,
        batch_size: int = 1,
        max_batch_tokens: int | None = None,
        load_weights: bool = True,
    ) -> Model:
        if "pretrained" not in args:
            raise ValueError("hf needs a checkpoint: --model_args pretrained=ORG/NAME or a local folder")
        settings = settings_from_args(HFSettings, args, "hf")
        require_checkpoint(settings.pretrained, settings.revision)  # in seconds, before from_pretrained's retries
        return cls(settings, batch_size=batch_size, max_batch_tokens=max_batch_tokens, load_weights=load_weights)

    @classmethod
    def without_weights(
        cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None
    ) -> Model:
        """The backend as a Ray pool's driver holds it (`harness.models.replicas`): its processor and config, to count,
        screen and batch requests exactly as each replica will; no weights, so it generates nothing."""
        return cls.from_args(args, batch_size=batch_size, max_batch_tokens=max_batch_tokens, load_weights=False)

    # ----------------------------------------------------------------------------- batching
    def request_cost(self, request: Request) -> int:
        """Tokens a request takes in a padded batch: its prompt (vision tokens counted under this
        model's pixel cap, as the runner screens them) plus what it may generate."""
        return self.prompt_tokens(request) + request.settings.max_gen_toks

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        batches = (
            super().batches(requests)
            if not self.max_batch_tokens
            else token_budget_batches(
                requests,
                max_batch_tokens=self.max_batch_tokens,
                max_batch_size=self.facts.batch_size,
                padded=True,
                cost=self.request_cost,
                sort_long_first=self.facts.request_order == "length",
            )
        )  # else the runner's cache order
        if self.fitting is None:
            return batches
        fitting = self.fitting
        return (piece for batch in batches for piece in fitting.split(batch))

    def fit_batch_size(self, start: int) -> str | None:
        self.fitting = FittingBatchSize(start)
        self._facts = replace(self._facts, batch_size=start)
        return None

    def statistics(self) -> dict[str, Any]:
        return {"auto_batch": self.fitting.describe()} if self.fitting else {}

    # ----------------------------------------------------------------------------- counting
    @property
    def token_rule(self) -> str:
        return self.count.token_rule

    def prompt_tokens(self, request: Request) -> int:
        """The prompt as this model sees it (`ProcessorCount`: the chat template tokenized, each image as the
        processor expands it at the size it is scaled to)."""
        return self.count.prompt_tokens(request)

    def text_round_trip(self) -> Callable[[str], str]:
        return self.count.decode_encode

    # ---------------------------------------------------------------------------- preparing
    @property
    def scale_first(self) -> ProcessorScale:
        """The image scaler of the processor as loaded (a request with no load-time settings)."""
        return self._scalers[id(self.processor)]

    def _image(self, index: int, ref: ImageRef, processor_kwargs: tuple[tuple[str, object], ...] = ()) -> Image.Image:
        """Image `index` of a request, decoded (a ValueError naming it where it does not decode), scaled down to
        `max_pixels`, then to the size the processor scales it to (where that is proven to change nothing)."""
        try:
            image = ref.pil()
        except Exception as err:  # final: the same bytes would fail again on every rerun
            raise ValueError(
                f"invalid_input: image {index + 1} (sha256 {ref.sha256[:12]}) does not decode: "
                f"{type(err).__name__}: {err}"
            ) from None
        size = fit_within_pixels(image.width, image.height, self.facts.max_pixels)
        if size != image.size:
            image = image.resize(size, Image.Resampling.BICUBIC)
        settled = self.count.settle(dict(processor_kwargs))
        scale = self._scalers.get(id(settled.processor))
        if scale is None:  # a race makes two at worst, each proving the same rule
            scale = self._scalers.setdefault(id(settled.processor), ProcessorScale(settled.processor))
        return scale(image, tuple(sorted(settled.call.items())))

    def _image_or_error(
        self, job: tuple[int, int, ImageRef, tuple[tuple[str, object], ...]]
    ) -> Image.Image | Exception:
        _, index, ref, processor_kwargs = job
        try:
            return self._image(index, ref, processor_kwargs)
        except Exception as err:
            return err

    def _batch_images(self, requests: Sequence[Request]) -> list[list[Image.Image] | Exception]:
        """Each request's images, decoded in this batch, once each; a request whose image fails gets the first
        failure (in image order) instead. Decoded on `image_threads` threads where the batch has several images."""
        jobs = [
            (i, index, ref, request.processor_kwargs)
            for i, request in enumerate(requests)
            for index, ref in enumerate(request.images)
        ]
        if self.image_threads > 1 and len(jobs) > 1:
            if self._image_pool is None:
                self._image_pool = ThreadPoolExecutor(self.image_threads, thread_name_prefix="hf-images")
            decoded = list(self._image_pool.map(self._image_or_error, jobs))
        else:
            decoded = [self._image_or_error(job) for job in jobs]
        images: list[list[Image.Image] | Exception] = [[] for _ in requests]
        for (i, _, _, _), image in zip(jobs, decoded, strict=True):
            held = images[i]
            if isinstance(held, list):  # else an earlier image of the request failed
                if isinstance(image, Exception):
                    images[i] = image
                else:
                    held.append(image)
        return images

    def _images(self, request: Request) -> list[Image.Image]:
        """One request's images as its batch gives them to the processor."""
        (images,) = self._batch_images([request])
        if isinstance(images, Exception):
            raise images
        return images

    def _prompt(self, request: Request) -> str:
        return self.count.render(request)

    # --------------------------------------------------------------------------- generating
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        responses: list[Response | None] = [None] * len(requests)
        prepared: list[tuple[int, str, list[Image.Image]]] = []
        batch_images = self._batch_images(requests)
        for i, request in enumerate(requests):
            try:
                prompt, images = self._prompt(request), batch_images[i]
                if isinstance(images, Exception):
                    raise images
                prepared.append((i, prompt, images))
            except Exception as err:
                responses[i] = Response(
                    None, error=str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
                )
        # Requests of one task share settings; group anyway so a mixed batch stays correct.
        groups: dict[tuple[GenerationSettings, object], list[tuple[int, str, list[Image.Image]]]] = {}
        for item in prepared:
            request = requests[item[0]]
            groups.setdefault((request.settings, frozen_settings(request.processor_kwargs)), []).append(item)
        for (settings, _), items in groups.items():
            processor_kwargs = dict(requests[items[0][0]].processor_kwargs)
            run = partial(self._generate, settings=settings, processor_kwargs=processor_kwargs)
            answers = self.fitting.run(run, items) if self.fitting else run(items)
            for (i, prompt, _), response in zip(items, answers, strict=True):
                responses[i] = replace(response, sent=self.count.sent(requests[i], prompt))
        return [r if r is not None else Response(None, error="no response") for r in responses]

    def render(self, request: Request) -> Sent:
        """What `generate` gives the processor for `request` (`ProcessorCount.sent`)."""
        return self.count.sent(request)

    def _generate(
        self,
        items: list[tuple[int, str, list[Image.Image]]],
        settings: GenerationSettings,
        processor_kwargs: dict[str, Any] | None = None,
    ) -> list[Response]:
        texts = [text for _, text, _ in items]
        images = [imgs for _, _, imgs in items]
        # The settings the official wrappers gave at load are applied at load (`harness.models.processor_settings`)
        settled = self.count.settle(processor_kwargs)
        inputs = settled.processor(
            text=texts, images=images if any(images) else None, padding=True, return_tensors="pt", **settled.call
        )
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        context = self.facts.context_length
        over = [k for k, n in enumerate(lengths) if context and n + settings.max_gen_toks > context]
        if over:  # the screen's count was short: what does not fit is never sent
            kept = [item for k, item in enumerate(items) if k not in over]
            fitted = iter(self._generate(kept, settings, processor_kwargs) if kept else [])
            return [
                Response(
                    None,
                    error=f"over_length: {lengths[k]} prompt tokens (the processor's input_ids) + "
                    f"max_gen_toks {settings.max_gen_toks} > context {context}",
                )
                if k in over
                else next(fitted)
                for k in range(len(items))
            ]
        return self._decode(inputs, settings)

    def _decode(self, inputs: Any, settings: GenerationSettings) -> list[Response]:
        torch = self.torch
        inputs = inputs.to(self.model.device)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        kwargs: dict[str, Any] = {"max_new_tokens": settings.max_gen_toks, "pad_token_id": self.tokenizer.pad_token_id}
        if settings.do_sample and settings.temperature > 0:
            kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            output = self.model.generate(**inputs, **kwargs)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
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
            responses.append(
                Response(
                    text,
                    finish_reason=finish,
                    usage={"prompt_tokens": int(prompt_length), "completion_tokens": len(ids)},
                )
            )
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
            "max_pixels": self.facts.max_pixels,
            "trust_remote_code": self.settings.trust_remote_code,
            "chat_template_sha256": self.chat_template_sha256,
            "prompt_style": self.count.style.describe(),
            "context_length": self.facts.context_length,
            "max_images": self.facts.max_images,
        }
        local = Path(self.pretrained)
        if local.is_dir():
            # A local checkpoint has no commit: fingerprint its config and weight files instead.
            files = sorted((p.name, p.stat().st_size) for p in local.iterdir() if p.suffix in (".safetensors", ".bin"))
            config_text = (local / "config.json").read_text() if (local / "config.json").is_file() else ""
            identity["local_files_sha256"] = hashlib.sha256(json.dumps([files, config_text]).encode()).hexdigest()
        return identity

    def close(self) -> None:
        if self._image_pool is not None:
            self._image_pool.shutdown()
        del self.model
        if self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()
