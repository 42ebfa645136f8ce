"""Turn a row's prompt into chat messages: the i-th `<image>` placeholder becomes images[i]."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from builders.core.contract import IMAGE_PLACEHOLDER
from harness.api import ContentPart, ImagePart, ImageRef, Message, TextPart


class RowError(ValueError):
    """A row that cannot become a request (e.g. placeholders and images disagree); recorded per sample."""


def interleave(text: str, images: Sequence[ImageRef], consumed: int = 0) -> tuple[list[ContentPart], int]:
    """Split `text` on placeholders into text and image parts, taking images from index `consumed`.

    Empty text fragments are dropped; returns the parts and the new number of images consumed.
    """
    pieces = text.split(IMAGE_PLACEHOLDER)
    parts: list[ContentPart] = []
    for i, piece in enumerate(pieces):
        if piece:
            parts.append(TextPart(piece))
        if i < len(pieces) - 1:
            if consumed >= len(images):
                raise RowError(f"more {IMAGE_PLACEHOLDER} placeholders than the row's {len(images)} images")
            parts.append(ImagePart(images[consumed]))
            consumed += 1
    return parts, consumed


def messages_from_prompt(text: str, images: Sequence[ImageRef], system: str | None = None) -> tuple[Message, ...]:
    """One user turn (after an optional system turn) with text and images in prompt order."""
    placeholders = text.count(IMAGE_PLACEHOLDER)
    if placeholders != len(images):
        raise RowError(
            f"prompt has {placeholders} {IMAGE_PLACEHOLDER} placeholders but the row has {len(images)} images"
        )
    parts, _ = interleave(text, images)
    messages = [Message("system", (TextPart(system),))] if system else []
    messages.append(Message("user", tuple(parts)))
    return tuple(messages)


def with_system_instruction(messages: tuple[Message, ...], instruction: str | None) -> tuple[Message, ...]:
    """`--system_instruction`, as lm-eval places it: the system turn starts with it, before the task's own system
    text (a blank line between them); a chat without a system turn gets one."""
    if not instruction:
        return messages
    if messages and messages[0].role == "system":
        first, rest = messages[0].content[:1], messages[0].content[1:]
        if first and isinstance(first[0], TextPart):  # one text part, as the task's own system turn has
            first = (TextPart(f"{instruction}\n\n{first[0].text}"),)
        else:
            first = (TextPart(f"{instruction}\n\n"), *first)
        return (Message("system", (*first, *rest)), *messages[1:])
    return (Message("system", (TextPart(instruction),)), *messages)


def messages_from_chat(chat: Sequence[dict[str, Any]], images: Sequence[ImageRef]) -> tuple[Message, ...]:
    """`doc_to_messages` output: `[{"role", "content": str | [{"type": "text"|"image", ...}]}]`.

    Image parts and placeholders inside text both take the next image; all images must be used.
    """
    consumed = 0
    messages = []
    for turn in chat:
        role, content = turn.get("role"), turn.get("content")
        if role not in ("system", "user", "assistant"):
            raise RowError(f"message role must be system, user or assistant, got {role!r}")
        parts: list[ContentPart] = []
        for item in [content] if isinstance(content, str) else list(content or []):
            if isinstance(item, str) or item.get("type") == "text":
                new, consumed = interleave(
                    item if isinstance(item, str) else str(item.get("text", "")), images, consumed
                )
                parts.extend(new)
            elif item.get("type") == "image":
                if consumed >= len(images):
                    raise RowError(f"more image parts than the row's {len(images)} images")
                parts.append(ImagePart(images[consumed]))
                consumed += 1
            else:
                raise RowError(f"unknown content part {item!r}")
        messages.append(Message(role, tuple(parts)))
    if consumed != len(images):
        raise RowError(f"messages use {consumed} images but the row has {len(images)}")
    return tuple(messages)


def prompt_text(messages: Sequence[Message]) -> str:
    """The prompt with `<image>` markers where images go (for sample logs; never pixels)."""
    chunks = []
    for message in messages:
        body = "".join(IMAGE_PLACEHOLDER if isinstance(p, ImagePart) else p.text for p in message.content)
        chunks.append(body if len(messages) == 1 else f"[{message.role}] {body}")
    return "\n".join(chunks)
