"""The Anthropic Messages API's request and answer: a `Request`'s turns as `messages` (images as base64 image blocks of
their own bytes, in prompt order, as MMNeedle's `needle.py:161-175` built them), its system turn as `system`, and an
answer (`Message`) as a `Response` (a `refusal` stop is a refusal)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from harness.api import ImagePart, Request, Response, TextPart
from harness.models.api_client.replies import checked_image, flatten_usage

if TYPE_CHECKING:
    from anthropic.types import Message

Json = dict[str, object]


def build_messages(request: Request) -> tuple[list[Json], str | None]:
    """(the turns as the API's JSON, the system prompt). An empty text part is left out (the API refuses an empty text
    block)."""
    messages: list[Json] = []
    system: list[str] = []
    for message in request.messages:
        if message.role == "system":
            system.append("".join(p.text for p in message.content if isinstance(p, TextPart)))
            continue
        blocks: list[Json] = []
        for part in message.content:
            if isinstance(part, TextPart):
                if part.text:
                    blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                mime, data = checked_image(part.image)
                source = {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode("ascii")}
                blocks.append({"type": "image", "source": source})
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        role = "assistant" if message.role == "assistant" else "user"
        messages.append({"role": role, "content": blocks})
    return messages, ("\n".join(system) if system else None)


def parse_message(answer: Message) -> Response:
    """One `Message` -> Response: its text blocks joined (`needle.py:213-216` read the first; the API answers one);
    a `refusal` stop is a refusal; no text from a finished answer is the empty answer."""
    from anthropic.types import Message, TextBlock

    if not isinstance(answer, Message):  # the SDK hands back a body that is not JSON as it came
        return Response(text=None, error=f"malformed_response: the answer is not a message: {str(answer)[:200]!r}")
    usage = flatten_usage(answer.usage.model_dump(exclude_none=True)) if answer.usage is not None else {}
    stop = answer.stop_reason
    if stop == "refusal":
        return Response(
            text=None,
            error="refused: the model refused (stop_reason refusal)",
            refused=True,
            finish_reason=stop,
            usage=usage,
        )
    texts = [block.text for block in answer.content if isinstance(block, TextBlock)]
    if not texts and stop not in ("end_turn", "max_tokens", "stop_sequence"):
        return Response(
            text=None, error=f"empty_response: no text (stop_reason={stop})", finish_reason=stop, usage=usage
        )
    return Response(text="".join(texts), finish_reason=stop, usage=usage)
