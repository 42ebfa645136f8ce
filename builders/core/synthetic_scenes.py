"""Drawn scenes whose captions describe them completely: an offline stand-in for COCO.

Each scene is a plain background with 1-3 objects, each with a colour, a shape and a size, in
distinct cells of a 3 x 3 layout. The caption names all of them and the background, e.g.
"A large red circle in the top left and a small blue triangle in the center on a yellow
background." Scenes are drawn from one seeded stream with rejection of repeats, so every caption
(and therefore every image) of a source is distinct, and the same seed always gives the same
scenes. Drawing is a few Pillow primitives on a 256 x 256 canvas (well under a millisecond).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image, ImageDraw

from builders.core.sampling import derive_rng

GENERATOR_VERSION = "synthetic-scenes-v1"

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 160, 50),
    "blue": (30, 70, 220),
    "yellow": (245, 215, 30),
    "orange": (245, 140, 20),
    "purple": (140, 50, 180),
    "pink": (250, 140, 190),
    "brown": (130, 80, 35),
    "black": (20, 20, 20),
    "white": (245, 245, 245),
    "gray": (128, 128, 128),
    "cyan": (40, 200, 220),
}
SHAPES = ("circle", "square", "triangle", "diamond", "star")
SIZES = {"small": 0.40, "large": 0.80}  # radius as a fraction of half a cell
CELL_PHRASES = (
    "in the top left",
    "at the top",
    "in the top right",
    "on the left",
    "in the center",
    "on the right",
    "in the bottom left",
    "at the bottom",
    "in the bottom right",
)
OBJECT_COUNT_WEIGHTS = {1: 0.2, 2: 0.4, 3: 0.4}


@dataclass(frozen=True, order=True)
class SceneObject:
    cell: int  # 0..8, row-major in a 3 x 3 layout
    colour: str
    shape: str
    size: str

    def phrase(self) -> str:
        return f"{self.size} {self.colour} {self.shape} {CELL_PHRASES[self.cell]}"


@dataclass(frozen=True)
class Scene:
    background: str
    objects: tuple[SceneObject, ...]  # sorted by cell, so equal scenes compare equal

    def caption(self) -> str:
        phrases = [f"a {obj.phrase()}" for obj in self.objects]  # sizes start with a consonant
        listed = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
        article = "an" if self.background[0] in "aeiou" else "a"
        return f"{listed[0].upper()}{listed[1:]} on {article} {self.background} background."

    def draw(self, size: int = 256) -> Image.Image:
        image = Image.new("RGB", (size, size), COLOURS[self.background])
        pen = ImageDraw.Draw(image)
        cell = size / 3
        for obj in self.objects:
            row, col = divmod(obj.cell, 3)
            cx, cy = (col + 0.5) * cell, (row + 0.5) * cell
            radius = SIZES[obj.size] * cell / 2
            _draw_shape(pen, obj.shape, cx, cy, radius, COLOURS[obj.colour])
        return image


def _draw_shape(
    pen: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill: tuple[int, int, int]
) -> None:
    if shape == "circle":
        pen.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif shape == "square":
        half = r * 0.85
        pen.rectangle((cx - half, cy - half, cx + half, cy + half), fill=fill)
    elif shape == "triangle":
        pen.polygon([(cx, cy - r), (cx - r * 0.95, cy + r * 0.75), (cx + r * 0.95, cy + r * 0.75)], fill=fill)
    elif shape == "diamond":
        pen.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=fill)
    elif shape == "star":
        points = []
        for k in range(10):
            radius = r if k % 2 == 0 else r * 0.45
            angle = -math.pi / 2 + k * math.pi / 5
            points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
        pen.polygon(points, fill=fill)
    else:  # pragma: no cover - SHAPES is closed
        raise ValueError(shape)


def generate_scenes(seed: int, count: int) -> list[Scene]:
    """`count` distinct scenes, the same for the same seed."""
    rng = derive_rng(seed, GENERATOR_VERSION)
    colours = sorted(COLOURS)
    counts = sorted(OBJECT_COUNT_WEIGHTS)
    weights = [OBJECT_COUNT_WEIGHTS[c] for c in counts]
    seen: set[Scene] = set()
    scenes: list[Scene] = []
    while len(scenes) < count:
        background = colours[rng.randrange(len(colours))]
        others = [c for c in colours if c != background]
        n_objects = rng.choices(counts, weights)[0]
        cells = sorted(rng.sample(range(9), n_objects))
        objects = tuple(
            SceneObject(
                cell,
                others[rng.randrange(len(others))],
                SHAPES[rng.randrange(len(SHAPES))],
                rng.choice(("small", "large")),
            )
            for cell in cells
        )
        scene = Scene(background, objects)
        if scene in seen:
            continue
        seen.add(scene)
        scenes.append(scene)
    return scenes
