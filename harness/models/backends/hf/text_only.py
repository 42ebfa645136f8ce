"""`hf` with `text_only=true`: a text LLM, as MMLongBench's official text-only wrapper ran its LLMs
(`vlm_model/text_only_model.py`, which `vlm_model/__init__.py:79-83` picks for a `qwen2.5` name that is not a VL
model; the paper's "w/ LLM" rows, Figures 9-10). What it sends, and how it counts it (the run and `--screen_only` both
count with `TextOnlyCount`, exactly):

- the chat: one string per turn (`format_chat`, text_only_model.py:8-16), each image dropped and left as the
  `<image>` placeholder its prompt held (the wrapper formats the user template as text and never loads an image);
  the answer prefix as a final assistant message continued (`continue_final_message=True`), or, where the template
  cannot continue it, the user turn alone with the generation prompt (text_only_model.py:21-33); rendered with the
  tokenizer's chat template and tokenized without special tokens (l.35);
- the fit (l.41-59): where the prompt has more than `length - max_gen_toks` tokens (`length`: the row's, the task's
  `fit_context`; the wrapper's `input_max_length - generation_max_length`, eval.py:165-173), the context, tokenized
  alone with the tokenizer's defaults, loses its last `tokens - (length - max_gen_toks)` tokens, cut at the character
  offset of the first token dropped (a slow tokenizer: decoded from the tokens kept), and the prompt is rendered once
  more, as the wrapper does, with no second check; Phi-3-small's tokenizer keeps 64 tokens more at 131,072 (l.41-44).
  A context with fewer tokens than must go is `over_length`, where the wrapper raised an IndexError. A request
  without `fit_context` is sent whole;
- YaRN (`yarn_factor`, l.116-124: `rope_scaling` yarn, factor 4 over the original 32,768 positions under
  `--use_yarn`), over the checkpoint's `max_position_embeddings`.

The model itself (`TextOnlyModel`) is AutoModelForCausalLM with its tokenizer, sent what `TextOnlyCount` renders and
fits; its batches, `--batch_size auto`, greedy decoding, stop strings and identity are the `hf` backend's
(`generation.HFGeneration`); no processor is loaded and no image decoded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from harness.api import GenerationSettings, Request, Response
from harness.errors import UserError
from harness.fit_context import FitContext
from harness.models.backends.hf.generation import HFGeneration
from harness.models.backends.hf.settings import HFSettings, load_kwargs
from harness.models.facts.prompt_style import TEXT_ONLY
from harness.models.shared.hf_counting import default_context_length, load_config
from harness.sent import Sent

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedTokenizerBase

RULE = (
    "the checkpoint's tokenizer on its chat template's text, without special tokens (text only: each image left as "
    "its <image> placeholder); a row's context cut at its end to its length less max_gen_toks, as the official "
    "text-only wrapper cut it"
)


@dataclass(frozen=True)
class Fitted:
    """A request's prompt as the text-only path sends it, what the fit cut (None: nothing), and why it cannot be sent
    (`problem`, a status-named error: the prompt is then the uncut one)."""

    prompt: str
    ids: list[int] = field(repr=False)
    cut: Mapping[str, int] | None = None
    problem: str | None = None


def yarn_parameters(config: PreTrainedConfig, factor: float) -> dict[str, object]:
    """The config's rope parameters with YaRN over its `max_position_embeddings` by `factor` (its theta kept)."""
    current = dict(getattr(config, "rope_parameters", None) or {})
    original = default_context_length(config)
    if not original:
        raise UserError(f"yarn_factor={factor:g}: the checkpoint's config has no max_position_embeddings to extend")
    return {**current, "rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}


class TextOnlyCount:
    """Renders, fits and counts a request as the text-only path sends it (see the module docstring)."""

    style = TEXT_ONLY

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        config: PreTrainedConfig,
        *,
        name: str,
        yarn_factor: float | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.config = config  # the model loads with it (and its YaRN), not read again
        self.name = name
        template = getattr(tokenizer, "chat_template", None)
        if not template:
            raise ValueError(f"{name} has no chat template; the text-only path renders its chat with it")
        self.chat_template = str(template)
        positions = default_context_length(config)
        self.context_length = int(positions * yarn_factor) if positions and yarn_factor else positions
        # Phi-3-small's rotary embedding: the wrapper keeps 64 tokens more at 131,072 (text_only_model.py:41-44).
        self._phi3_small = "Phi3SmallTokenizer" in type(tokenizer).__name__
        self._counted: dict[tuple[str, int, int, int, FitContext | None], int] = {}

    @classmethod
    def load(cls, settings: HFSettings, *, offline: bool = False) -> TextOnlyCount:
        """The checkpoint's tokenizer and config, for the run and its `--screen_only` stand-in alike; `offline`: from
        a local folder or the local Hub cache only."""
        from transformers import AutoTokenizer

        config, where = load_config(settings.pretrained, settings.revision, settings.trust_remote_code, offline)
        tokenizer = AutoTokenizer.from_pretrained(settings.pretrained, **where)
        return cls(tokenizer, config, name=settings.pretrained, yarn_factor=settings.yarn_factor)

    # ---------------------------------------------------------------------------------------------- rendering
    def _render(self, chat: list[dict[str, str]], prefix: str) -> str:
        if prefix:
            try:
                return str(
                    self.tokenizer.apply_chat_template(
                        chat, chat_template=self.chat_template, tokenize=False, continue_final_message=True
                    )
                )
            except Exception:  # noqa: BLE001 - the wrapper's own fallback: the user turn and the generation prompt
                chat = chat[:-1]
        return str(
            self.tokenizer.apply_chat_template(
                chat, chat_template=self.chat_template, tokenize=False, add_generation_prompt=True
            )
        )

    def _ids(self, prompt: str) -> list[int]:
        return list(self.tokenizer(prompt, add_special_tokens=False).input_ids)

    def _cut_context(self, context: str, tokens: int) -> str:
        """`context` less its last `tokens` tokens, as the wrapper cuts it (text_only_model.py:50-56)."""
        if not getattr(self.tokenizer, "is_fast", True):
            ids = self.tokenizer(context)["input_ids"]
            if tokens > len(ids):
                raise ValueError(f"over_length: the context has {len(ids)} tokens, and {tokens} must go")
            return str(self.tokenizer.decode(ids[:-tokens]))
        offsets = self.tokenizer([context], return_offsets_mapping=True)["offset_mapping"][0]
        if tokens > len(offsets):
            raise ValueError(f"over_length: the context has {len(offsets)} tokens, and {tokens} must go")
        return context[: offsets[-tokens][0]]

    def fitted(self, request: Request) -> Fitted:
        """The prompt as sent: rendered, and where its row says where its context stands and the prompt is longer
        than the row's length less `max_gen_toks`, rendered again with the context cut at its end."""
        prefix = request.assistant_prefix
        # One string a turn (the style's `string` content), as the template is given them.
        chat = [
            {"role": str(t["role"]), "content": str(t["content"])}
            for t in self.style.chat(request.as_sent, prefix, "<image>")
        ]
        prompt = self._render(chat, prefix)
        ids = self._ids(prompt)
        fit = request.fit_context
        if fit is None:
            return Fitted(prompt, ids)
        buffer = 64 if self._phi3_small and fit.length == 131072 else 0
        limit = fit.length - request.settings.max_gen_toks - buffer
        if len(ids) <= limit:
            return Fitted(prompt, ids)
        turn = next(i for i, m in enumerate(request.as_sent) if m.role == "user")
        text = chat[turn]["content"]
        try:
            context = fit.context_of(text)
            kept = self._cut_context(context, len(ids) - limit)
        except ValueError as err:
            return Fitted(prompt, ids, problem=str(err))
        chat[turn] = {**chat[turn], "content": text[: fit.start] + kept + text[fit.end :]}
        cut_prompt = self._render(chat, prefix)
        cut_ids = self._ids(cut_prompt)
        record = {"tokens_before": len(ids), "tokens_after": len(cut_ids), "fitted_to": limit}
        return Fitted(cut_prompt, cut_ids, {**record, "context_chars_cut": len(context) - len(kept)})

    # ----------------------------------------------------------------------------------------------- counting
    token_rule = RULE
    estimated = ""  # every count is the one sent

    def exact(self, request: Request) -> bool:
        return True

    def prompt_tokens(self, request: Request) -> int:
        """The prompt's tokens as sent, after the fit (counted once per row and length)."""
        # A truncated request is another prompt of the same row: its figures and its context tell them apart.
        key = (request.task, request.doc_id, request.text_tokens, request.settings.max_gen_toks, request.fit_context)
        if key not in self._counted:
            self._counted[key] = len(self.fitted(request).ids)
        return self._counted[key]

    def decode_encode(self, text: str) -> str:
        """Encode without special tokens, decode with the tokenizer's defaults (a task's text round trip)."""
        return str(self.tokenizer.decode(self._ids(text)))

    def sent(self, request: Request, prompt: str | None = None) -> Sent:
        """The request as sent: its prompt, and no image (each dropped, its placeholder left in the text)."""
        return Sent(self.fitted(request).prompt if prompt is None else prompt)


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
        self._loaded(batch_size)

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
