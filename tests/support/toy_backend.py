"""The toy backend, a whole backend package in one module: it looks at a prompt's images and names the colour at the
centre of the one image ("red"), or says whether two images show the same colour ("yes", "no"), as the toy benchmark
asks. docs/ADDING_A_BACKEND.md shows this file, and `test_adding_a_backend.py` adds it to a copy of the project as
`harness/models/toy/__init__.py`, with one line in `harness/models/registry.py`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.api import Model, ModelFacts, Request, Response
from harness.models.backend_spec import BackendSpec
from harness.models.facts.args import at_least, settings_from_args
from harness.models.registry import register_model

# What the harness knows of it: where its Model is, and that reports label its results "toy", not "toy (toy)". Every
# other field keeps its default: no extra to install, no --device, one CPU per Ray replica, and `--screen_only`
# counts with the backend itself, which loads nothing.
BACKEND = BackendSpec(module=__name__, plain=True)

PALETTE = {"red": (255, 0, 0), "green": (0, 160, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0)}


@dataclass(frozen=True)
class ToySettings:
    """Its `--model_args`, typed and checked by `settings_from_args` (an unknown one is refused, named)."""

    max_images: int | None = at_least(1)  # a cap the runner screens against: more images are too_many_images


def colour_name(pixel: tuple[int, int, int]) -> str:
    return min(PALETTE, key=lambda name: sum((a - b) ** 2 for a, b in zip(PALETTE[name], pixel, strict=True)))


@register_model("toy")
class ToyModel(Model):
    def __init__(self, settings: ToySettings, batch_size: int = 1) -> None:
        self.settings = settings
        # What the runner reads of it: its image cap and batch size; answering costs nothing, so no response cache.
        self._facts = ModelFacts(max_images=settings.max_images, batch_size=batch_size, cache_responses=False)

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        return cls(settings_from_args(ToySettings, args, "toy"), batch_size)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: Request) -> Response:
        colours = []
        for image in request.images:  # decoded here, in the batch that sends them
            pil = image.pil()
            colours.append(colour_name(pil.getpixel((pil.width // 2, pil.height // 2))))
        if len(colours) == 1:
            return Response(colours[0], finish_reason="stop")
        return Response("yes" if len(set(colours)) == 1 else "no", finish_reason="stop")

    def identity(self) -> dict[str, Any]:  # what its answers depend on: the response cache's key, the results' config
        return {"model": "toy", "max_images": self.settings.max_images}
