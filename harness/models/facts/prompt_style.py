"""How an official wrapper turned a sample into the chat its model's template renders: which content shape the
template is given (a list of typed parts, or one string with each image as a marker in place), the key a text part's
text goes under, the system message the wrapper sent, whether the task's answer prefix starts the assistant's turn
(a prefill, continued with `continue_final_message`, as the official HF wrappers do) or is not sent at all, which BOS
the prompt starts with, for wrappers that never used the checkpoint's template, the conversation they built (a
template bundled beside the family's module), and the variables a wrapper gave the template (MiniCPM-V 4.5's
`model.chat(enable_thinking=...)`).

Each family module declares its styles (`harness.models.families`, where `style_named` finds one by name); `default`,
the typed parts with the answer prefix continued, is every family's unless it says otherwise. A backend takes one by
name (`prompt_style=NAME` in `--model_args` of `hf` and `vllm`); the aliases name the style of their official
wrapper; the backend's identity records it, so the results say how every prompt was built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.api import ContentPart, ImagePart, Message, Request, TextPart


def wrapper_segments(parts: Sequence[ContentPart]) -> list[ContentPart]:
    """A turn's parts as the wrappers' `re.split(r'(<image>)', text)` cut their prompt (the HF wrappers' `format_chat`;
    the API wrappers', `api_client.wrapper_parts`): text and images alternating, adjacent texts joined, an empty text
    before, between and after images where the prompt had none (the wrappers sent those too, and some templates
    render one: Idefics' "User: " for a turn that starts with text, LLaVA's space)."""
    out: list[ContentPart] = []
    for part in parts:
        if isinstance(part, TextPart):
            if out and isinstance(out[-1], TextPart):
                out[-1] = TextPart(out[-1].text + part.text)
            else:
                out.append(part)
        else:
            if not out or not isinstance(out[-1], TextPart):
                out.append(TextPart(""))
            out.append(part)
    if not out or not isinstance(out[-1], TextPart):
        out.append(TextPart(""))
    return out


@dataclass(frozen=True)
class PromptStyle:
    name: str
    content: str = "parts"  # "parts": typed parts; "string": one string, each image as `image_marker`
    image_marker: str = "{token}"  # {n}: the image's number from 1; {token}: the processor's image token
    joiner: str = ""  # what a string content puts between its pieces (MiniCPM-V's `model.chat`: "\n")
    text_key: str = "text"  # the key a text part's text goes under
    prefill: bool = True  # the answer prefix as a final assistant message, continued; False: never sent
    assistant_content: str = "parts"  # how the prefill message holds its text: "parts" or "string"
    system: str | None = None  # a system message the wrapper sent first (unless the request has one)
    bos: str = "processor"  # "processor": the tokenizer adds its BOS to the rendered text; "template": only the
    # template's own (transformers' `apply_chat_template(tokenize=True)`, which then adds no special tokens)
    chat_template: str | None = None  # a bundled template's name (`<name>.jinja` beside its family's module)
    template_text: str | None = field(default=None, repr=False)  # that template, as its file holds it
    # Variables the template is rendered with (`apply_chat_template(**kwargs)`, vLLM's `chat_template_kwargs`)
    template_kwargs: tuple[tuple[str, bool], ...] = ()

    def __post_init__(self) -> None:
        checks = (
            (self.content in ("parts", "string"), "content", "parts or string"),
            (self.assistant_content in ("parts", "string"), "assistant_content", "parts or string"),
            (self.bos in ("processor", "template"), "bos", "processor or template"),
            ((self.chat_template is None) == (self.template_text is None), "chat_template", "a bundled template"),
        )
        for ok, name, expected in checks:
            if not ok:
                raise ValueError(f"prompt style {self.name}: {name}={getattr(self, name)!r}, expected {expected}")

    def continues(self, request: Request) -> bool:
        """Whether the request's answer prefix is sent, as the start of the assistant's turn."""
        return bool(request.assistant_prefix) and self.prefill

    def chat(self, messages: Sequence[Message], prefix: str, image_token: str) -> list[dict[str, Any]]:
        """The conversation the chat template is given: the wrapper's system message, the turns in this style's
        content shape (images in prompt order, numbered across the conversation), the prefill where it sends one."""
        out: list[dict[str, Any]] = []
        if self.system is not None and not (messages and messages[0].role == "system"):
            out.append({"role": "system", "content": self.system})
        number = 0
        for message in messages:
            if self.content == "string":
                pieces = []
                for part in message.content:
                    if isinstance(part, ImagePart):
                        number += 1
                        pieces.append(self.image_marker.format(n=number, token=image_token))
                    elif isinstance(part, TextPart):
                        pieces.append(part.text)
                out.append(
                    {"role": message.role, "content": self.joiner.join(p for p in pieces if p or not self.joiner)}
                )
            else:
                parts = [
                    {"type": "text", self.text_key: p.text} if isinstance(p, TextPart) else {"type": "image"}
                    for p in wrapper_segments(message.content)
                ]
                out.append({"role": message.role, "content": parts})
        if prefix and self.prefill:
            text = prefix if self.assistant_content == "string" else [{"type": "text", self.text_key: prefix}]
            out.append({"role": "assistant", "content": text})
        return out

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "content": self.content}
        if self.content == "string":
            out["image_marker"] = self.image_marker
            if self.joiner:
                out["joiner"] = self.joiner
        out.update(text_key=self.text_key, prefill=self.prefill, bos=self.bos)
        if self.system is not None:
            out["system"] = self.system
        if self.chat_template:
            out["chat_template"] = self.chat_template
        if self.template_kwargs:
            out["template_kwargs"] = dict(self.template_kwargs)
        return out


# The official HF wrappers' `format_chat`: typed parts, the answer prefix continued.
DEFAULT = PromptStyle("default")
# A thinking model's: typed parts, no answer prefix sent (a prefix continued where the model starts its thinking would
# answer without it; Qwen3-VL-Thinking's template even closes an empty thinking block before a final assistant turn).
THINKING = PromptStyle("thinking", prefill=False)
# A text LLM's chat (the `hf` backend's `text_only=true`, `harness.models.backends.hf.text_only`): one string per turn, each
# image left as the `<image>` placeholder its prompt held, the answer prefix continued, the tokenizer's special tokens
# never added to the rendered text (MMLongBench's `vlm_model/text_only_model.py:8-35`).
TEXT_ONLY = PromptStyle(
    "text_only", content="string", image_marker="<image>", assistant_content="string", bos="template"
)
