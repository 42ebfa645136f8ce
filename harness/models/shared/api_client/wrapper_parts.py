"""How a paper's official API wrappers prepared a prompt before sending it, for any API backend that sends as they
did: each image decoded, made RGB and saved as PNG (`image_format=png`), and the prompt cut around its images with
the empty texts before, between and after them sent too (`empty_text_parts`:
`harness.models.facts.prompt_style.wrapper_segments`). Which paper models were sent so, with the official code's lines:
`tasks/<benchmark>/paper_models.py`."""

from __future__ import annotations

import io

from harness.api import ImageRef
from harness.models.shared.api_client.replies import checked_image, decoded_image

# How an image may be sent: its own bytes, or as the wrappers re-encoded it.
IMAGE_FORMATS = ("original", "png")


def check_image_format(image_format: object, backend: str = "") -> None:
    """A `ValueError` where `image_format` is none of `IMAGE_FORMATS` (the message opens with `backend`, where named)."""
    if image_format not in IMAGE_FORMATS:
        said = f"{backend} backend: " if backend else ""
        raise ValueError(f"{said}image_format must be one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")


def image_as(image: ImageRef, image_format: str) -> tuple[str, bytes]:
    """(MIME type, bytes) of the image as sent in `image_format` (`IMAGE_FORMATS`): for `png`, decoded, made RGB and
    saved as PNG, as the wrappers did; the bytes are first checked to decode (one decode)."""
    if image_format == "png":
        _, _, rgb = decoded_image(image, lambda decoded: decoded.convert("RGB"))
        out = io.BytesIO()
        rgb.save(out, format="PNG")
        return "image/png", out.getvalue()
    check_image_format(image_format)
    return checked_image(image)
