"""`hf` with `text_only=true`: the model, `AutoModelForCausalLM` with its tokenizer, sent what `text_only.TextOnlyCount`
renders and fits (the official text-only wrapper's chat, its context cut at its end; see that module). Batches,
`--batch_size auto`, greedy decoding, stop strings and the identity are the `hf` backend's (`generation.HFGeneration`);
no processor is loaded and no image decoded."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from harness.api import GenerationSettings, ModelFacts, Request, Response
from harness.models.hf.generation import HFGeneration
from harness.models.hf.settings import HFSettings, context_limit, load_kwargs
from harness.models.hf.text_only import Fitted, TextOnlyCount, yarn_parameters


class TextOnlyModel(HFGeneration):
    count: TextOnlyCount

    # As the `hf` backend reads its arguments (the `Model` interface asks for `from_args`; a run comes here through
    # `model.HFModel.from_args`), with `text_only=true`.
    path_args = {"text_only": "true"}

    def _load(self, settings: HFSettings, batch_size: int, load_weights: bool) -> None:
        from transformers import AutoModelForCausalLM

        self.count = TextOnlyCount.load(settings)
        self.cut = {"requests_cut": 0, "tokens_cut": 0}  # what the fit took, for the results
        self.model = None
        if load_weights:
            config = copy.deepcopy(self.count.config)
            if settings.yarn_factor:
                config.rope_parameters = yarn_parameters(config, settings.yarn_factor)
            self.model = AutoModelForCausalLM.from_pretrained(
                settings.pretrained, config=config, **load_kwargs(settings, self.torch)
            )
        self._loaded(self.count.tokenizer, self.count.chat_template)
        self._facts = ModelFacts(
            context_length=context_limit(settings, self.count.context_length),
            max_images=settings.max_images,
            batch_size=batch_size,
            chat_template=self.count.chat_template,
            request_order=settings.request_order,
        )

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        responses: list[Response | None] = [None] * len(requests)
        groups: dict[GenerationSettings, list[tuple[int, Fitted]]] = {}
        for i, request in enumerate(requests):
            fitted = self.count.fitted(request)
            if fitted.problem:
                responses[i] = Response(None, error=fitted.problem, sent=self.count.sent(request, fitted.prompt))
            else:
                groups.setdefault(request.settings, []).append((i, fitted))
        for settings, items in groups.items():
            run = partial(self._generate_text, settings=settings)
            answers = self.fitting.run(run, items) if self.fitting else run(items)
            for (i, fitted), response in zip(items, answers, strict=True):
                if fitted.cut:
                    self.cut["requests_cut"] += 1
                    self.cut["tokens_cut"] += fitted.cut["tokens_before"] - fitted.cut["tokens_after"]
                responses[i] = replace(response, sent=self.count.sent(requests[i], fitted.prompt))
        return [r if r is not None else Response(None, error="no response") for r in responses]

    def _generate_text(self, items: list[tuple[int, Fitted]], settings: GenerationSettings) -> list[Response]:
        inputs = self.tokenizer.pad({"input_ids": [fitted.ids for _, fitted in items]}, return_tensors="pt")
        return self._decode(inputs, settings)

    def statistics(self) -> dict[str, object]:
        return {**super().statistics(), "text_only_fit": dict(self.cut)}

    def identity(self) -> dict[str, object]:
        return {**super().identity(), "text_only": True, "yarn_factor": self.settings.yarn_factor}
