"""The length-true fixture's images, each drawn from a seed: photos, document pages, slides and small cartoons.

Photos carry noise so that JPEG does not squeeze them to a few kB (a real photo is ~100 kB); pages and slides are
text-like marks on white, as rendered PDFs and slide decks are. Only numpy and PIL raster operations are used, so
a seed gives the same bytes on every run.
"""

from __future__ import annotations

import hashlib
import io
from functools import lru_cache

import numpy as np
from PIL import Image, ImageChops, ImageDraw

_NOISE_SIDE = 1024


def seed_of(key: str) -> int:
    """A stable seed for a name (Python's `hash` of a string changes between processes)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


@lru_cache(maxsize=1)
def _noise() -> Image.Image:
    # One noise tile (mean 128), cropped at a seeded offset for each photo: drawing fresh noise per photo costs
    # more than encoding it.
    noise = np.random.default_rng(0).normal(128, 10, (_NOISE_SIDE, _NOISE_SIDE, 3))
    return Image.fromarray(np.clip(noise, 0, 255).astype(np.uint8))


def _encode(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **({"quality": 85} if fmt == "JPEG" else {"compress_level": 6}))
    return out.getvalue()


def photo(width: int, height: int, seed: int, *, mark: bool = False) -> bytes:
    """A photo-sized JPEG (at most 1024 px a side): a colour field plus noise; `mark` pastes a small cartoon in it
    (an image needle)."""
    rng = np.random.default_rng(seed)
    corners = Image.fromarray(rng.integers(0, 256, (2, 2, 3), dtype=np.uint8))
    field = corners.resize((width, height), Image.Resampling.BILINEAR)  # a smooth colour field
    left, top = int(rng.integers(0, _NOISE_SIDE - width + 1)), int(rng.integers(0, _NOISE_SIDE - height + 1))
    image = ImageChops.add(field, _noise().crop((left, top, left + width, top + height)), offset=-128)
    if mark:
        x, y = int(rng.integers(0, width - 96)), int(rng.integers(0, height - 96))
        ImageDraw.Draw(image).ellipse([x, y, x + 96, y + 96], fill=(250, 210, 40), outline=(20, 20, 20), width=4)
    return _encode(image, "JPEG")


def cartoon(side: int, seed: int) -> bytes:
    """A small flat-colour drawing (MM-NIAH's needle and option images)."""
    rng = np.random.default_rng(seed)
    colour = tuple(int(c) for c in rng.integers(40, 250, 3))
    image = Image.new("RGB", (side, side), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.ellipse([side // 8, side // 8, side * 7 // 8, side * 7 // 8], fill=colour, outline=(0, 0, 0), width=3)
    eye = side // 10
    for x in (side * 3 // 8, side * 5 // 8):
        draw.ellipse([x - eye // 2, side * 3 // 8, x + eye // 2, side * 3 // 8 + eye], fill=(0, 0, 0))
    return _encode(image, "PNG")


def _text_lines(
    draw: ImageDraw.ImageDraw, rng: np.random.Generator, box: tuple[int, int, int, int], line_height: int, ink: int
) -> None:
    """Rows of word-sized marks filling `box`, paragraphs separated by a blank line."""
    left, top, right, bottom = box
    y = top
    while y + line_height <= bottom:
        if rng.random() < 0.12:  # a paragraph break
            y += line_height
            continue
        x = left
        end = right if rng.random() > 0.15 else left + int((right - left) * rng.uniform(0.3, 0.9))
        while True:
            word = int(rng.integers(line_height, line_height * 5))
            if x + word > end:
                break
            draw.rectangle([x, y, x + word, y + line_height * 3 // 5], fill=ink)
            x += word + line_height // 2
        y += line_height * 3 // 2


def page(width: int, height: int, seed: int) -> bytes:
    """A rendered document page (grey-scale PNG, as a PDF page at 144 DPI looks): a title and lines of text."""
    rng = np.random.default_rng(seed)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    margin = width // 10
    draw.rectangle([margin, margin, margin + int(width * rng.uniform(0.3, 0.6)), margin + 28], fill=30)
    _text_lines(draw, rng, (margin, margin + 70, width - margin, height - margin), 22, 60)
    return _encode(image, "PNG")


def slide(width: int, height: int, seed: int) -> bytes:
    """A slide (JPEG, as SlideVQA's 1024-px decks): a coloured title band and a few bullet lines."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (width, height), (250, 250, 246))
    draw = ImageDraw.Draw(image)
    band = tuple(int(c) for c in rng.integers(20, 160, 3))
    draw.rectangle([0, 0, width, height // 6], fill=band)
    _text_lines(draw, rng, (width // 12, height // 4, width * 11 // 12, height * 9 // 10), 30, 70)
    return _encode(image, "JPEG")


def flat(width: int, height: int, seed: int, fmt: str) -> bytes:
    """A flat colour field with one small block placed by the seed (distinct bytes per seed at a few kB): the
    pools past 128K need thousands of images, and only their pixel sizes are counted. PNG pages are grey-scale,
    as `page` draws them."""
    rng = np.random.default_rng(seed)
    mode = "L" if fmt == "PNG" else "RGB"
    colour, block = (rng.integers(0, 256, 3).tolist() for _ in range(2))
    image = Image.new(mode, (width, height), colour[0] if mode == "L" else tuple(colour))
    x, y = int(rng.integers(0, width - 32)), int(rng.integers(0, height - 32))
    image.paste(block[0] if mode == "L" else tuple(block), (x, y, x + 32, y + 32))
    return _encode(image, fmt)
