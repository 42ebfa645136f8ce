"""What every family's generator is made of: the images a fixture names and the token counts that fill a row
(`FixtureSource`), an id's stream of units (`UnitStream`), made-up words and names, where needles go, and the
check that a row fits its length."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count, permutations
from typing import Any

from builders.core.contract import IMAGE_PLACEHOLDER, image_tokens
from builders.core.tokens import TextTokenCounter
from builders.mmlongbench import full_images
from builders.mmlongbench.leaves import DEPTHS, Leaf
from builders.mmlongbench.prompts import ASSEMBLERS, page_label

FULL_FIXTURE_VERSION = "1"
PHOTO_SIZES = ((640, 480), (640, 427))  # COCO's two common landscape sizes
ICL_PHOTO_SIZES = {"stanford_cars": (476, 336), "food101": (512, 480), "sun397": (448, 336), "inat2021": (500, 375)}
PAGE_SIZE = (1224, 1584)  # US Letter at 144 DPI
SLIDE_SIZE = (1024, 768)
CARTOON_SIDE = 224
# The paper's classes per ICL row (§2.3); a length past 128K keeps 50 unless the caller's schedule says otherwise.
ICL_CLASSES = {"8k": 5, "16k": 10, "32k": 20, "64k": 40, "128k": 50}
MMNIAH_IMAGE_EVERY = 16  # one OBELICS image per 15 passages: Table 3's ~59 images in a 128K text-needle row
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will more what up out into year people "
    "after some time could two them other than first new may only over most made such city also many before "
    "through back years where much your way well down should because each just those how too little state good "
    "very make world still own see men work long here between both life being under never day same another know "
    "while last might great old year off come since against go came right used take three states himself few house "
    "use during without again place around however home small found thought went say part once general high upon "
    "school every government united almost hand enough took head yet public system better set told nothing night "
    "end why called eyes find going look asked later knew point next program city business give group toward young "
    "days let room president side social given present several order national possible rather second face per "
    "among form important often things early river north market harbour railway council village museum church "
    "castle bridge station island valley mountain library garden festival century population district"
).split()
POOL_BASE = 10_000  # pool ids' numbers start past any --fixture-ids, so their names never meet a regular id's
POOL_STRIDE = 100  # DocVQA pads id b with documents x{b}, x{b+1}, ...: pool ids this far apart share none
POOL_FILE = "64k"  # the file that carries the pool ids (ICL: its 128K file carries the pool sets)
POOL_MARGIN = 1.25  # pool material per token needed: room for what `pools.py` leaves out near needles
COUNTED = "lanterns"  # the counting needles' word, not in WORDS
SYLLABLES = ("vel", "mor", "an", "tri", "sel", "dor", "ka", "len", "bri", "os", "thal", "ru", "mes", "quin", "zor")

Row = dict[str, Any]


def made_up_name(rng: random.Random, parts: int = 3) -> str:
    """A made-up proper name (never one of WORDS, so no haystack passage names the entity or the answer)."""
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def passage(rng: random.Random, words: int = 100) -> str:
    """`words` words in sentences of 8 to 18."""
    out = rng.choices(WORDS, k=words)
    start = 0
    while start < words:
        out[start] = out[start].capitalize()
        start += rng.randint(8, 18)
        out[min(start, words) - 1] += "."
    return " ".join(out)


@dataclass
class FixtureSource:
    """The images named so far (path -> how to draw it), those the rows show, and the token counts the filling
    needs."""

    counter: TextTokenCounter
    images: dict[str, tuple[str, int, int, bool]] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)  # what the files name: the images to draw
    flat: bool = False  # set by `drawn_flat`
    _text_cache: dict[str, int] = field(default_factory=dict)
    _streams: dict[str, UnitStream] = field(default_factory=dict)

    def stream(self, key: str, make: Callable[[], UnitStream]) -> UnitStream:
        """The id's stream (`key`: leaf/id), kept across lengths so a longer length extends a shorter one."""
        if key not in self._streams:
            self._streams[key] = make()
        return self._streams[key]

    @contextmanager
    def drawn_flat(self) -> Iterator[None]:
        """Within it, the photos, pages and slides named are drawn flat (`full_images.flat`): pool ids and sets."""
        self.flat = True
        try:
            yield
        finally:
            self.flat = False

    def image(self, path: str, kind: str, size: tuple[int, int], mark: bool = False) -> str:
        if self.flat and kind != "cartoon":
            kind = "flat"
        self.images.setdefault(path, (kind, size[0], size[1], mark))
        return path

    def photo(self, path: str, mark: bool = False) -> str:
        return self.image(path, "photo", PHOTO_SIZES[full_images.seed_of(path) % len(PHOTO_SIZES)], mark)

    def image_tokens(self, path: str) -> int:
        _, width, height, _ = self.images[path]
        return image_tokens(width, height)

    def text_tokens(self, text: str) -> int:
        if text not in self._text_cache:
            self._text_cache[text] = self.counter.count(text)
        return self._text_cache[text]

    def counted(self, prompt: str, images: Sequence[str], shown: bool = False) -> int:
        """The row's length as the builder counts it (`rows.make_row`): prompt text + image tokens; `shown`: the
        row goes into a file, so its images are drawn."""
        if shown:
            self.shown.update(images)
        return self.counter.count(prompt.replace(IMAGE_PLACEHOLDER, "")) + sum(self.image_tokens(p) for p in images)

    def draw(self, path: str) -> bytes:
        kind, width, height, mark = self.images[path]
        seed = full_images.seed_of(path)
        if kind == "photo":
            return full_images.photo(width, height, seed, mark=mark)
        if kind == "page":
            return full_images.page(width, height, seed)
        if kind == "slide":
            return full_images.slide(width, height, seed)
        if kind == "flat":
            return full_images.flat(width, height, seed, "PNG" if path.endswith(".png") else "JPEG")
        return full_images.cartoon(width, seed)


def fit(budget: int, costs: Iterable[int]) -> int:
    """How many units of a stream, taken in order, fit in `budget` tokens (stopping at the first that does not)."""
    fitted = used = 0
    for cost in costs:
        if used + cost > budget:
            return fitted
        used += cost
        fitted += 1
    return fitted


class UnitStream:
    """An id's units, made on first use and kept, so every length and depth of the id shows the same ones."""

    def __init__(self, make: Callable[[int], Any], cost: Callable[[Any], int]) -> None:
        self._make, self._cost = make, cost
        self._items: list[Any] = []

    def __getitem__(self, k: int) -> object:
        while len(self._items) <= k:
            self._items.append(self._make(len(self._items)))
        return self._items[k]

    def costs(self) -> Iterator[int]:
        return (self._cost(self[k]) for k in count())

    def take(self, budget: int) -> list[Any]:
        return [self[k] for k in range(fit(budget, self.costs()))]


def needle_positions(count: int, needles: int, variant: int, variants: int) -> list[int]:
    """Where an id's needles go among `count` haystack units: a single needle at depth DEPTHS[variant]; several,
    for permutation `variant` of `variants`, the j-th in the j-th of `needles` equal stretches, (variant + 0.5) /
    variants of the way through it (so each permutation moves every needle)."""
    if variants == len(DEPTHS) and needles == 1:
        return [round(DEPTHS[variant] * count)]
    return [round(count * (j + (variant + 0.5) / variants) / needles) for j in range(needles)]


def insert_needles(haystack: Sequence[object], needles: Sequence[object], positions: Sequence[int]) -> list[Any]:
    out = list(haystack)
    for needle, position in sorted(zip(needles, positions, strict=True), key=lambda pair: -pair[1]):
        out.insert(position, needle)
    return out


def needle_order(needles: Sequence[object], variant: int) -> list[Any]:
    orders = list(permutations(range(len(needles))))
    return [needles[k] for k in orders[variant % len(orders)]]


def page_images(src: FixtureSource, root: str, doc: str, count: int, slides: bool = False) -> list[str]:
    if slides:
        return [src.image(f"{root}/{doc}/{doc}-{p + 1}-1024.jpg", "slide", SLIDE_SIZE) for p in range(count)]
    return [src.image(f"{root}/{doc}/{doc}_page{p}.png", "page", PAGE_SIZE) for p in range(count)]


def page_cost(src: FixtureSource, path: str, split_index: int) -> int:
    """A page's label (as the official loader writes it) and its image."""
    return src.text_tokens(page_label(path, split_index).replace(IMAGE_PLACEHOLDER, "")) + src.image_tokens(path)


class LengthError(RuntimeError):
    """A row the generator made does not fit its label as the builder counts it: a bug here, not bad input."""


def check_length(where: str, tokens: int, counted: int, unit: int, exhausted: bool = False) -> None:
    if counted > tokens or (counted <= tokens - unit and not exhausted):
        raise LengthError(f"{where}: {counted:,} counted tokens, expected within {unit:,} under {tokens:,}")


def counted(src: FixtureSource, leaf: Leaf, row: Row, shown: bool = False) -> int:
    assembled = ASSEMBLERS[leaf.loader](row, leaf.name)
    return src.counted(assembled.prompt, assembled.images, shown)


def checked(
    src: FixtureSource, leaf: Leaf, tokens: int, rows: list[Row], unit: int, exhausted: bool = False
) -> list[Row]:
    for row in rows:
        check_length(f"{leaf.name} {row['id']}", tokens, counted(src, leaf, row, shown=True), unit, exhausted)
    return rows
