"""The Anthropic Messages API's request and answer: a `Request`'s turns as `messages` (images as base64 image blocks of
their own bytes, in prompt order, as MMNeedle's `needle.py:161-175` built them), its system turn as `system`, and an
answer (`Message`) as a `Response` (a `refusal` stop is a refusal)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from harness.api import ImagePart, ImageRef, Request, Response, TextPart
from harness.models.shared.api_client.replies import checked_image, flatten_usage, refusal
from harness.sent import Sent, sent_images

if TYPE_CHECKING:
    from anthropic.types import Message

Json = dict[str, object]


def base64_source(image: ImageRef) -> Json:
    """An image block's source: the image's own bytes, base64, its media type read from them (once they decode)."""
    mime, data = checked_image(image)
    return {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode("ascii")}


EPHEMERAL: Json = {"type": "ephemeral"}  # a cache breakpoint of the default, 5-minute lifetime


def build_messages(
    request: Request, source: Callable[[ImageRef], Json] = base64_source, marks: Collection[tuple[int, int]] = ()
) -> tuple[list[Json], str | list[Json] | None]:
    """(the turns as the API's JSON, the system prompt). An empty text part is left out (the API refuses an empty text
    block). `source`: an image block's source (default: its bytes, `base64_source`). `marks`: the (message, part) of
    each block to cache the prompt up to (`cache_control`; `prompt_cache.CachePlan`), a system prompt so marked sent as
    one text block."""
    messages: list[Json] = []
    system: list[str] = []
    cached_system = False
    for m, message in enumerate(request.as_sent):
        if message.role == "system":
            system.append("".join(p.text for p in message.content if isinstance(p, TextPart)))
            cached_system = cached_system or any((m, k) in marks for k in range(len(message.content)))
            continue
        blocks: list[Json] = []
        for k, part in enumerate(message.content):
            if isinstance(part, TextPart):
                if not part.text:
                    continue
                blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                blocks.append({"type": "image", "source": source(part.image)})
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
            if (m, k) in marks:
                blocks[-1]["cache_control"] = EPHEMERAL
        role = "assistant" if message.role == "assistant" else "user"
        messages.append({"role": role, "content": blocks})
    if not system:
        return messages, None
    if cached_system:
        return messages, [{"type": "text", "text": "\n".join(system), "cache_control": EPHEMERAL}]
    return messages, "\n".join(system)


def sent_messages(request: Request) -> Sent:
    """The request as `messages.create` is sent it (`harness.sent`): its `system` and `messages`, each image's source
    naming the image by its content hash in place of its bytes (and of the media type read from them)."""
    messages, system = build_messages(request, lambda image: {"type": "base64", "data": f"sha256:{image.sha256}"})
    body: Json = {"system": system} if system is not None else {}
    body["messages"] = messages
    sizes = [(image.sha256, image.width, image.height) for image in request.images]
    return Sent(json.dumps(body, ensure_ascii=False), sent_images(sizes, {}))


def parse_message(answer: Message) -> Response:
    """One `Message` -> Response: its text blocks joined (`needle.py:213-216` read the first; the API answers one);
    a `refusal` stop is a refusal; no text from a finished answer is the empty answer."""
    from anthropic.types import Message, TextBlock

    if not isinstance(answer, Message):  # the SDK hands back a body that is not JSON as it came
        return Response(text=None, error=f"malformed_response: the answer is not a message: {str(answer)[:200]!r}")
    try:  # the SDK builds a `Message` of any JSON object, unchecked: a field of another type is a malformed answer
        usage = flatten_usage(answer.usage.model_dump(exclude_none=True)) if answer.usage is not None else {}
        texts = [block.text for block in answer.content if isinstance(block, TextBlock)]
        text = "".join(texts)
    except (AttributeError, TypeError, ValueError) as err:
        return Response(text=None, error=f"malformed_response: not a message's fields: {str(err)[:200]!r}")
    stop = answer.stop_reason if answer.stop_reason is None else str(answer.stop_reason)[:200]
    if stop == "refusal":
        return refusal("the model refused (stop_reason refusal)", stop, usage)
    if not texts and stop not in ("end_turn", "max_tokens", "stop_sequence"):
        return Response(
            text=None, error=f"empty_response: no text (stop_reason={stop})", finish_reason=stop, usage=usage
        )
    return Response(text=text, finish_reason=stop, usage=usage)
