"""Image sizing and token counting by the data contract's rule (`builders.core.contract`), shared by the
request contract (`harness.api.Model.prompt_tokens`, the default count), the inputs (truncation), the backends
(resizing, batching) and the runner (screening, logs): a base module, importing nothing of the harness."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from builders.core.contract import image_tokens


class _Sized(Protocol):
    @property
    def width(self) -> int | None: ...

    @property
    def height(self) -> int | None: ...


class TokenFigures(Protocol):
    """What counting needs of a request (`harness.api.Request` has it): not the request type itself, since
    `harness.api`, whose default count is this module's, sits above it."""

    @property
    def text_tokens(self) -> int: ...

    @property
    def image_tokens(self) -> Sequence[int]: ...

    @property
    def images(self) -> Sequence[_Sized]: ...


def fit_within_pixels(width: int, height: int, max_pixels: int | None) -> tuple[int, int]:
    """The size an image is scaled down to so that width*height <= max_pixels (aspect kept).

    Images already within the cap, or a cap of None, keep their size; sides never go below 1 px.
    """
    if not max_pixels or width * height <= max_pixels:
        return width, height
    scale = math.sqrt(max_pixels / (width * height))
    new_w, new_h = max(1, int(width * scale)), max(1, int(height * scale))
    while new_w * new_h > max_pixels:  # float rounding can leave one pixel row too many
        if new_w >= new_h:
            new_w -= 1
        else:
            new_h -= 1
    return new_w, new_h


def image_costs(request: TokenFigures, max_pixels: int | None) -> list[int]:
    """Each image's tokens by the rows' rule: the row's figure, or with a pixel cap and known sizes, the tokens
    at the size the image is scaled down to."""
    sizes = known_sizes(request.images)
    if not max_pixels or sizes is None:
        return list(request.image_tokens)
    return [
        image_tokens(*fit_within_pixels(width, height, max_pixels), max_pixels=max_pixels) for width, height in sizes
    ]


def known_sizes(images: Sequence[_Sized]) -> list[tuple[int, int]] | None:
    """Each image's (width, height), or None where any image's size is unknown."""
    sizes = [(i.width, i.height) for i in images]
    known = [(width, height) for width, height in sizes if width is not None and height is not None]
    return known if len(known) == len(sizes) else None


def prompt_tokens(request: TokenFigures, max_pixels: int | None) -> int:
    """Prompt tokens by the rows' counting rule; with a pixel cap and known image sizes, each image is
    counted at the size it is scaled down to (never more than the row's own figures)."""
    counted = sum(image_costs(request, max_pixels))
    return request.text_tokens + min(counted, sum(request.image_tokens) or counted)
