"""Requests as the runner builds them, over tiny encoded images made with Pillow: for the tests of the backends,
the batching, the response cache and the fuzzed replies."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence

from PIL import Image

from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, TextPart


def encode_image(color: tuple[int, int, int], size: tuple[int, int], fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def image_ref(data: bytes, loads: list[str] | None = None) -> ImageRef:
    """An ImageRef over encoded bytes; `loads` (if given) records every load, to check laziness."""
    sha = hashlib.sha256(data).hexdigest()

    def load() -> bytes:
        if loads is not None:
            loads.append(sha)
        return data

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return ImageRef(sha, load, width, height)


def make_request(
    sample_id: str,
    parts: Sequence[str | bytes | ImageRef],
    *,
    system: str | None = None,
    settings: GenerationSettings | None = None,
    task: str = "task_a",
    doc_id: int = 0,
    prefix: str = "",
    text_tokens: int | None = None,
    image_tokens: Sequence[int] | None = None,
) -> Request:
    """A one-turn request: `parts` in order, str -> text, bytes/ImageRef -> image."""
    content = []
    for part in parts:
        if isinstance(part, str):
            content.append(TextPart(part))
        else:
            content.append(ImagePart(part if isinstance(part, ImageRef) else image_ref(part)))
    messages = []
    if system is not None:
        messages.append(Message("system", (TextPart(system),)))
    messages.append(Message("user", tuple(content)))
    n_images = sum(isinstance(p, ImagePart) for p in content)
    return Request(
        task=task,
        doc_id=doc_id,
        sample_id=sample_id,
        messages=tuple(messages),
        settings=settings or GenerationSettings(max_gen_toks=16),
        text_tokens=text_tokens
        if text_tokens is not None
        else sum(len(p.split()) for p in parts if isinstance(p, str)),
        image_tokens=tuple(image_tokens) if image_tokens is not None else (64,) * n_images,
        assistant_prefix=prefix,
    )
