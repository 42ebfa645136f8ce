"""The chat-completions wire format, pure functions: request messages from a `Request` (images as
base64 data URLs of their own encoded bytes, or of the PNG the official wrappers made of them), and a response body to a `Response` (refusals, content
filters and malformed bodies become per-sample errors). What every API reads alike is in
`harness.models.shared.api_client.replies`."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.api import ImagePart, ImageRef, Message, Request, Response, TextPart
from harness.models.facts.prompt_style import wrapper_segments
from harness.models.shared.api_client.replies import error_message, flatten_usage, refusal, text_or_empty
from harness.models.shared.api_client.wrapper_parts import check_image_format, image_as

Turn = dict[str, Any]  # one chat-completions message, or one part of its content, as its JSON object

# --- request building (pure) ---------------------------------------------------------------------


def image_data_url(image: ImageRef, image_format: str = "original") -> str:
    """The image as a data URL, once its bytes are known to decode: its own bytes, or (`png`) decoded, RGB, PNG as
    MMLongBench's `openai_model.py:117-124` sent a local file (`wrapper_parts.image_as`)."""
    mime, data = image_as(image, image_format)
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


# The processor settings a request may carry for this API (an alias's per-task input policy): how its images go.
REQUEST_IMAGE_SETTINGS = ("image_detail", "image_format")
# OpenAI's detail levels (`original`: GPT-5.4 and later, developers.openai.com/api/docs/guides/images-vision).
DETAILS = ("low", "high", "original", "auto")


def request_image_settings(request: Request, detail: str | None, image_format: str) -> tuple[str | None, str]:
    """(the image detail, the image format) of `request`: an alias's input policy may set either for some tasks
    (MMLongBench ran GPT-4o with `detail: low` on natural images, Claude with PNGs at 8K/16K), over the model's."""
    kwargs = dict(request.processor_kwargs)
    unknown = sorted(set(kwargs) - set(REQUEST_IMAGE_SETTINGS))
    if unknown:
        raise ValueError(
            f"processor setting(s) {', '.join(unknown)} have no meaning for an API model; "
            f"the openai backend takes {' and '.join(REQUEST_IMAGE_SETTINGS)} only"
        )
    given_detail = kwargs.get("image_detail", detail)
    if given_detail is not None and given_detail not in DETAILS:
        raise ValueError(f"image_detail must be low, high, original or auto, got {given_detail!r}")
    given_format = kwargs.get("image_format", image_format)
    check_image_format(given_format)
    return (None if given_detail is None else str(given_detail)), str(given_format)


def build_messages(
    request: Request,
    image_detail: str | None = None,
    prefill: bool = False,
    url: Callable[[ImageRef], str] | None = None,
    empty_text_parts: bool = False,
) -> list[Turn]:
    """Chat-completions messages: roles and content parts in the request's order; images inline. The answer prefix
    is a final assistant message only with `prefill` (a server that continues it, as `vllm serve` does with
    `continue_final_message`): an API that does not would answer after an extra assistant turn, where the official
    wrappers send the user turn only. `url`: how an image is named (default: its bytes inline, a data URL). An empty
    text part is dropped, unless `empty_text_parts`: a turn with images is then cut as `openai_model.py:81-101` cut
    its prompt, the empty texts around its images sent too (`prompt_style.wrapper_segments`)."""
    return chat_messages(request.as_sent, request.assistant_prefix, image_detail, prefill, url, empty_text_parts)


def chat_messages(
    messages: Sequence[Message],
    assistant_prefix: str = "",
    image_detail: str | None = None,
    prefill: bool = False,
    url: Callable[[ImageRef], str] | None = None,
    empty_text_parts: bool = False,
) -> list[Turn]:
    """`build_messages` of a request's turns and answer prefix (what a served checkpoint's count renders too)."""
    url = url or image_data_url
    out: list[Turn] = []
    for message in messages:
        has_image = any(isinstance(p, ImagePart) for p in message.content)
        if not has_image and message.role in ("system", "assistant"):
            # Plain strings: some servers accept part lists only in user turns.
            out.append(
                {"role": message.role, "content": "".join(p.text for p in message.content if isinstance(p, TextPart))}
            )
            continue
        parts: list[Turn] = []
        for part in wrapper_segments(message.content) if empty_text_parts and has_image else message.content:
            if isinstance(part, TextPart):
                # an empty text part is rejected by some servers and means nothing (unless sent as the wrapper did)
                if part.text or empty_text_parts:
                    parts.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart):
                image_url: Turn = {"url": url(part.image)}
                if image_detail:
                    image_url["detail"] = image_detail
                parts.append({"type": "image_url", "image_url": image_url})
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        out.append({"role": message.role, "content": parts})
    if assistant_prefix and prefill:
        out.append({"role": "assistant", "content": assistant_prefix})
    return out


# --- response parsing (pure) ---------------------------------------------------------------------


def _content_text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # some gateways answer with a list of text parts
        texts = []
        for part in content:
            if not (
                isinstance(part, Mapping)
                and part.get("type", "text") in ("text", "output_text")
                and isinstance(part.get("text"), str)
            ):
                raise ValueError(f"message.content holds a non-text part: {str(part)[:100]}")
            texts.append(part["text"])
        return "".join(texts)
    raise ValueError(f"message.content of type {type(content).__name__}")


def parse_completion(body: object) -> Response:
    """One chat-completions body -> Response (refusals and malformed bodies become per-sample errors)."""
    try:
        if not isinstance(body, Mapping):
            raise ValueError(f"body is {type(body).__name__}, not an object")
        if "error" in body and not body.get("choices"):
            problem, _ = error_message(body)
            return Response(text=None, error=f"provider_error: {problem}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ValueError("no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise ValueError("choices[0] has no message")
        finish_reason = choice.get("finish_reason")
        finish_reason = str(finish_reason) if finish_reason is not None else None
        usage = flatten_usage(body.get("usage"))
        refused = message.get("refusal")
        if refused:
            return refusal(str(refused), finish_reason, usage)
        if finish_reason == "content_filter":
            return refusal("the provider's content filter stopped the answer", finish_reason, usage)
        return text_or_empty(
            _content_text(message.get("content")), finish_reason, ("stop", "length"), "no content", usage
        )
    except (ValueError, TypeError, AttributeError) as err:
        return Response(text=None, error=f"malformed_response: {str(err)[:300]}")
    except RecursionError:  # a value nested too deeply to print or walk
        return Response(text=None, error="malformed_response: a value nested too deeply to read")
