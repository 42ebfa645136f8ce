"""A served checkpoint's count (issue 96, item 4): where the `openai` backend's `model` names a checkpoint on this
machine, a local folder or a Hub id in the local Hub cache (as `vllm serve FOLDER` serves it, under that name), each
prompt is counted as such a server counts it, by the checkpoint's own hf processor loaded without weights, offline
(`hf_counting.ProcessorCount`, which `hf` and `vllm` count with):

* the chat is the one the backend sends (`wire.chat_messages`: its turns, an empty text dropped, images in prompt
  order), each turn's content as a list of typed parts, as vLLM's server gives a template that loops over a turn's
  parts (`{"type": "text", "text": ...}`, `{"type": "image"}`); the answer prefix a final assistant turn continued
  only where the backend sends it so (`continue_final_message`);
* rendered by the checkpoint's own template, as `vllm serve FOLDER` renders it;
* tokenized with no special tokens beyond the template's own: a chat-completions request's `add_special_tokens` is
  false, where `hf` and `vllm`'s `LLM.generate` have the tokenizer add its BOS (`ServedCount`);
* each image expanded by the processor at its own size (the server is sent the image's bytes), with `max_pixels`
  as the server's processor setting where given.

Elsewhere (an API model's name, a checkpoint whose processor does not load offline) the count is what it was:
the rows' figures in the run, the family's rule and tiktoken on the screen; the token rule says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from harness.api import Message, Request
from harness.models.backends.openai_chat.wire import Turn, chat_messages
from harness.models.facts.checkpoint import load_failure, read_checkpoint
from harness.models.facts.prompt_style import PromptStyle
from harness.models.shared.hf_counting import ProcessorCount


@dataclass(frozen=True)
class SentStyle(PromptStyle):
    """The chat the `openai` backend sends, as a server gives it to the checkpoint's template (see module doc)."""

    empty_text_parts: bool = False  # the backend's setting: the empty texts around images sent too

    def chat(self, messages: Sequence[Message], prefix: str, image_token: str) -> list[dict[str, object]]:
        sent = chat_messages(messages, prefix, None, self.prefill, lambda image: "", self.empty_text_parts)
        return [{"role": turn["role"], "content": _typed_parts(turn["content"])} for turn in sent]


def _typed_parts(content: str | list[Turn]) -> list[dict[str, object]]:
    """A turn's content as vLLM's server hands it to a template that loops over parts: a string as one text part,
    an image part as `{"type": "image"}`."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part if part["type"] == "text" else {"type": "image"} for part in content]


class ServedCount(ProcessorCount):
    """A `ProcessorCount` of the chat as sent, less the special tokens the tokenizer adds to a text: a
    chat-completions server tokenizes the rendered template with `add_special_tokens=False`."""

    @cached_property
    def added_special_tokens(self) -> int:
        with_special, without = (self.tokenizer("a", add_special_tokens=flag).input_ids for flag in (True, False))
        return len(with_special) - len(without)

    def prompt_tokens(self, request: Request) -> int:
        return super().prompt_tokens(request) - self.added_special_tokens

    @property
    def served_rule(self) -> str:
        return (
            f"{self.token_rule}, as a server of {self.name} counts it: the chat as sent, rendered by the checkpoint's "
            "template, no special tokens added (chat completions' add_special_tokens=false)"
        )


def served_count(
    model: str, *, continue_final_message: bool, empty_text_parts: bool, max_pixels: int | None
) -> tuple[ServedCount | None, str]:
    """The count of the checkpoint `model` names, sent as the backend's settings send it, or None and why not: ""
    where the name is no checkpoint on this machine (an API model's), else why its processor did not load offline."""
    if read_checkpoint(model) is None:
        return None, ""
    style = SentStyle("as sent", prefill=continue_final_message, empty_text_parts=empty_text_parts)
    processor = {"max_pixels": max_pixels} if max_pixels is not None else {}
    try:
        count = ServedCount.load(model, offline=True, processor_kwargs=processor, style=style)
    except Exception as err:  # a processor that needs remote code, transformers not installed: today's count
        return None, f"{model} is a checkpoint here, but {load_failure(model, err, offline=True)}"
    assert isinstance(count, ServedCount)  # `load` makes its own class
    count.images_alone = True  # as `vllm serve` expands each image (`ProcessorCount.images_alone`)
    return count, ""
