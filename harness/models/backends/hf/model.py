"""`hf`: a transformers vision-language model (`AutoModelForImageTextToText` + `AutoProcessor`).

Each request's images are decoded once, in its batch (on `image_threads` threads, by default one per core up to
4: PIL's decode and resize release the GIL), scaled down to `max_pixels` if given, then to the size the processor scales them to where
that is proven to change nothing (`harness.models.backends.hf.presize`), and passed with the chat-template prompt to the
processor; a batch is left-padded and decoded greedily (or sampled, if the task asks). Only the last
position's logits are computed during prefill (transformers' `logits_to_keep`, which `generate` uses where
the model supports it). Batching (`--batch_size`, `--max_batch_tokens`, `--batch_size auto`), decoding and the
identity are `generation.HFGeneration`'s, which the text-only path (`text_only=true`, `text_only`) shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from inspect import signature
from typing import Any

from PIL import Image

from harness.api import GenerationSettings, ImageRef, Model, Request, Response
from harness.models.backends.hf.generation import HFGeneration
from harness.models.backends.hf.presize import ProcessorScale
from harness.models.backends.hf.settings import HFSettings, default_image_threads, load_kwargs, processor_count
from harness.models.registry import register_model
from harness.models.shared.hf_counting import ProcessorCount
from harness.models.shared.processor_settings import frozen_settings
from harness.row_tokens import fit_within_pixels


@register_model("hf")
class HFModel(HFGeneration):
    count: ProcessorCount

    def _load(self, settings: HFSettings, batch_size: int, load_weights: bool) -> None:
        from transformers import AutoModelForImageTextToText

        self.image_threads = settings.image_threads or default_image_threads()
        self._image_pool: ThreadPoolExecutor | None = None  # made at the first batch with more than one image
        # What counting needs (processor, config) first: `--screen_only` loads the same without the weights.
        self.count = processor_count(settings)
        self.processor = self.count.processor
        # Each image at its processor's size, in the image threads: one scaler per processor a request's settings
        # make (`ProcessorCount.settle`).
        self._scalers: dict[int, ProcessorScale] = {id(self.processor): ProcessorScale(self.processor)}
        self.model = (
            AutoModelForImageTextToText.from_pretrained(
                settings.pretrained, **load_kwargs(settings, self.torch, self.processor)
            )
            if load_weights
            else None
        )
        # A model whose forward reads each token's modality (its multimodal RoPE: Cosmos 3 Edge's) is given it by the
        # processor, which returns it only when asked where its own defaults do not (Qwen3-VL's do)
        reads_types = self.model is not None and "mm_token_type_ids" in signature(self.model.forward).parameters
        self._asked = {"return_mm_token_type_ids": True} if reads_types else {}
        # `decodes_images` (`_batch_images`): once per image, in its batch; one that fails is the request's invalid_input
        self._loaded(batch_size, max_pixels=settings.max_pixels, decodes_images=True)

    @classmethod
    def path_for(cls, settings: HFSettings) -> type[HFGeneration]:
        if settings.text_only:  # a text LLM, as the official text-only wrapper ran one
            from harness.models.backends.hf.text_only import TextOnlyModel

            return TextOnlyModel
        return cls

    @classmethod
    def without_weights(
        cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None
    ) -> Model:
        """The backend as a Ray pool's driver holds it (`harness.models.backends.replicas`): its processor and config, to count,
        screen and batch requests exactly as each replica will; no weights, so it generates nothing."""
        return cls.from_args(args, batch_size=batch_size, max_batch_tokens=max_batch_tokens, load_weights=False)

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
                cap = self.facts.max_images  # the runner's screen refuses such a request first; a caller may not
                if cap is not None and request.num_images > cap:
                    raise ValueError(f"too_many_images: {request.num_images} images; the model takes at most {cap}")
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

    def _generate(
        self,
        items: list[tuple[int, str, list[Image.Image]]],
        settings: GenerationSettings,
        processor_kwargs: dict[str, Any] | None = None,
    ) -> list[Response]:
        texts = [text for _, text, _ in items]
        images = [imgs for _, _, imgs in items]
        # The settings the official wrappers gave at load are applied at load (`harness.models.shared.processor_settings`)
        settled = self.count.settle(processor_kwargs)
        inputs = settled.processor(
            text=texts,
            images=images if any(images) else None,
            padding=True,
            return_tensors="pt",
            **{**self._asked, **settled.call},
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

    def close(self) -> None:
        if self._image_pool is not None:
            self._image_pool.shutdown()
        super().close()
