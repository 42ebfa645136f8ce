"""The Gemini API's request and answer, as google-genai builds and reads them: a `Request`'s turns as `Content`s (text
parts and image parts in prompt order), the generation config with exactly the fields asked for, an image as the
official wrapper sent it (decoded, RGB, PNG: `vlm_model/gemini.py:73,80` at EdinburghNLP/MMLongBench 26197d2;
`harness.models.shared.api_client.wrapper_parts`), and
an answer (`GenerateContentResponse`) as a `Response` (blocked prompts and safety stops are refusals)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.api import ContentPart, ImagePart, ImageRef, Request, Response, TextPart
from harness.models.facts.prompt_style import wrapper_segments
from harness.models.shared.api_client.replies import flatten_usage, refusal, text_or_empty
from harness.sent import Sent, sent_images

if TYPE_CHECKING:
    from google.genai import types

# A candidate that stopped for one of these produced no answer the provider would let through.
REFUSED_FINISH = frozenset(
    {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT"}
)


def turns(
    request: Request, *, empty_text_parts: bool = False
) -> tuple[list[tuple[str, list[ContentPart]]], str | None]:
    """(each turn as sent: its role as the API names it, "user" or "model", and its parts; the system instruction). An
    empty text part is dropped unless `empty_text_parts` (the wrapper's own empties, `wrapper_segments`)."""
    out: list[tuple[str, list[ContentPart]]] = []
    system: list[str] = []
    for message in request.as_sent:
        if message.role == "system":
            system.append("".join(p.text for p in message.content if isinstance(p, TextPart)))
            continue
        parts = wrapper_segments(message.content) if empty_text_parts else list(message.content)
        kept = [p for p in parts if empty_text_parts or not isinstance(p, TextPart) or p.text]
        out.append(("model" if message.role == "assistant" else "user", kept))
    return out, ("\n".join(system) if system else None)


def build_contents(
    request: Request, image_part: Callable[[ImageRef], types.Part], *, empty_text_parts: bool = False
) -> tuple[list[types.Content], str | None]:
    """(the turns as `Content`s, the system instruction): `turns`, each image made a part by `image_part`."""
    from google.genai import types

    contents: list[types.Content] = []
    found, system = turns(request, empty_text_parts=empty_text_parts)
    for role, parts in found:
        built: list[types.Part] = []
        for part in parts:
            if isinstance(part, TextPart):
                built.append(types.Part(text=part.text))
            elif isinstance(part, ImagePart):
                built.append(image_part(part.image))
            else:
                raise TypeError(f"unsupported content part {type(part).__name__}")
        contents.append(types.Content(role=role, parts=built))
    return contents, system


def sent_contents(request: Request, *, images: str, image_format: str, empty_text_parts: bool = False) -> Sent:
    """The request as `generateContent` is sent it (`harness.sent`): its `contents` and `systemInstruction` as the
    SDK writes them, each image part naming the image by its content hash in place of its file URI (`images=upload`)
    or its bytes (`inline`); each image with how it was sent (`images`, `image_format`)."""
    where, key = ("fileData", "file_uri") if images == "upload" else ("inlineData", "data")
    found, system = turns(request, empty_text_parts=empty_text_parts)
    contents = [
        {
            "parts": [
                {"text": part.text} if isinstance(part, TextPart) else {where: {key: f"sha256:{part.image.sha256}"}}
                for part in parts
                if isinstance(part, TextPart | ImagePart)
            ],
            "role": role,
        }
        for role, parts in found
    ]
    body: dict[str, object] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = {"parts": [{"text": system}], "role": "user"}
    sizes = [(image.sha256, image.width, image.height) for image in request.images]
    return Sent(
        json.dumps(body, ensure_ascii=False), sent_images(sizes, {"images": images, "image_format": image_format})
    )


def parse_answer(answer: types.GenerateContentResponse) -> Response:
    """One `GenerateContentResponse` -> Response: the first candidate's text (its thoughts left out, as `.text` reads
    it); no text from a candidate that finished (STOP, MAX_TOKENS) is the empty answer, as `gemini.py:161` took it."""
    usage = _usage(answer)
    try:
        feedback = getattr(answer, "prompt_feedback", None)
        blocked = getattr(feedback, "block_reason", None) if feedback is not None else None
        candidates = list(getattr(answer, "candidates", None) or [])
        if blocked:
            reason = _name(blocked)
            return Response(text=None, error=f"refused: the prompt was blocked ({reason})", refused=True, usage=usage)
        if not candidates:
            return Response(text=None, error="empty_response: no candidates", usage=usage)
        finish = _name(candidates[0].finish_reason) if candidates[0].finish_reason is not None else None
        if finish in REFUSED_FINISH:
            return refusal(f"the answer was stopped ({finish})", finish, usage)
        return text_or_empty(_text(candidates[0]), finish, ("STOP", "MAX_TOKENS"), "no text", usage)
    except (ValueError, TypeError, AttributeError) as err:
        return Response(text=None, error=f"malformed_response: {str(err)[:300]}", usage=usage)


def _text(candidate: types.Candidate) -> str | None:
    content = getattr(candidate, "content", None)
    parts = getattr(content, "parts", None) if content is not None else None
    texts = [
        p.text for p in parts or () if isinstance(getattr(p, "text", None), str) and not getattr(p, "thought", None)
    ]
    return "".join(texts) if texts else None


def _name(value: object) -> str:
    return str(getattr(value, "value", value))


def _usage(answer: types.GenerateContentResponse) -> dict[str, int]:
    usage = getattr(answer, "usage_metadata", None)
    if usage is None:
        return {}
    try:
        return flatten_usage(usage.model_dump(exclude_none=True))
    except (AttributeError, TypeError, ValueError):
        return {}
