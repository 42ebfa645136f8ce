"""Row plans: which images each row shows, in which order, and what it asks, without a pixel.

Every decision is drawn from `derive_rng(seed, <what>, <task>, <item>, ...)`, so a row depends on the build
seed, its task, its item and (for positions) its length, never on which other rows or configs are built.
cmp and int rows of the same task, item and length show the same context in the same order.
"""

from __future__ import annotations

import colorsys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from builders.core.sampling import derive_rng
from builders.locovqa.compose import fitted_size
from builders.locovqa.configs import LocoConfig
from builders.locovqa.distractors import DEFAULT_MAX_RESAMPLES, DistractorStream
from builders.locovqa.entities import Entities, Lister, Unlisted
from builders.locovqa.images import SourceImage
from builders.locovqa.okvqa import VqaItem

if TYPE_CHECKING:
    import numpy as np

# The needle task's ten digits each get one of these (spec §1.6: "blue 3, green 7"); the transcription task's
# digits get any saturated hue.
NEEDLE_PALETTE = {
    "red": (220, 30, 30),
    "green": (30, 150, 50),
    "blue": (30, 70, 220),
    "orange": (240, 130, 20),
    "purple": (140, 50, 180),
    "magenta": (220, 40, 170),
    "cyan": (20, 170, 200),
    "brown": (130, 80, 35),
    "black": (20, 20, 20),
    "olive": (120, 130, 20),
}


@dataclass(frozen=True)
class Digit:
    """One coloured MNIST digit on its canvas: the image index and how it is drawn. `height` is drawn once per
    digit; `reference` and `canvas` come from the row that shows it (`digit_frame`)."""

    index: int
    label: int
    colour: tuple[int, int, int]
    height: float  # the strokes' height, as a fraction of `reference`
    x: float
    y: float
    reference: int = 0  # pixels: the tallest other context image of the row, as the row shows it
    canvas: int = 0  # pixels: the side of the square the digit is drawn on

    @property
    def stroke_height(self) -> int:
        return max(1, round(self.height * self.reference))

    @property
    def key(self) -> str:
        r, g, b = self.colour
        return (
            f"digit/{self.index}/{r:02x}{g:02x}{b:02x}/{self.height:.4f}/{self.x:.4f}/{self.y:.4f}/"
            f"{self.reference}/{self.canvas}"
        )


def digit_frame(others: Sequence[tuple[int, int]], mode: str, cell: int) -> tuple[int, int]:
    """(reference height, canvas side) of a row's digits, from the (width, height) of its other context images.

    The paper sizes each digit at "between 1/6 and 1/2 of the maximum height of other context images" (§3.2.1):
    the reference is the tallest of them as the row shows them. int: their own heights, and the digit's canvas
    as tall as the tallest; cmp: their heights fitted into a cell, and the canvas the cell. A row without another
    image (the needle at length 1, a context of digits only) takes the cell for both.
    """
    if mode == "cmp":
        return max((fitted_size(w, h, cell)[1] for w, h in others), default=cell), cell
    tallest = max((h for _, h in others), default=cell)
    return tallest, tallest


def _framed(digits: Sequence[Digit], others: Sequence[tuple[int, int]], mode: str, cell: int) -> list[Digit]:
    reference, canvas = digit_frame(others, mode, cell)
    return [replace(d, reference=reference, canvas=canvas) for d in digits]


@dataclass
class RowPlan:
    cfg: LocoConfig
    item_id: str
    context: list[str]  # image keys in context order (digits: `Digit.key`)
    content_positions: list[int]
    question: str
    answer: str
    answers: list[str]
    choices: list[str] = field(default_factory=list)
    subset: str = ""
    digits: list[int] = field(default_factory=list)
    n_resamples: int = 0

    @property
    def row_id(self) -> str:
        return f"{self.cfg.name}-{self.item_id}"


@dataclass(frozen=True)
class Failure:
    """An item that has no row at a length, and why (recorded in the manifest, said on stderr)."""

    config: str
    item_id: str
    reason: str


def choose_items(items: Sequence[VqaItem], limit: int | None, seed: int, task: str) -> list[VqaItem]:
    """Every item, or `limit` of them drawn at random (a source's order often groups its categories), kept in
    the source's order."""
    if limit is None or limit >= len(items):
        return list(items)
    rng = derive_rng(seed, "items", task)
    chosen = set(rng.sample(range(len(items)), limit))
    return [item for i, item in enumerate(items) if i in chosen]


def position(seed: int, task: str, item_id: str, length: int) -> int:
    return derive_rng(seed, "position", task, item_id, length).randrange(length)


def plan_vqa(
    task: str,
    cfgs: Sequence[LocoConfig],
    items: Sequence[VqaItem],
    pools: Callable[[VqaItem], list[str]],
    image: Callable[[str], SourceImage],
    lister: Lister,
    seed: int,
    *,
    strict_pairwise: bool = False,
    max_resamples: int = DEFAULT_MAX_RESAMPLES,
) -> tuple[list[RowPlan], list[Failure], dict[str, int]]:
    """OK-VQA or MMStar rows for every config of `cfgs` (one task): in-distribution distractors through the
    collision filter of `lister`."""
    longest = max(cfg.length for cfg in cfgs)
    streams = {
        item.item_id: DistractorStream(
            pools(item),
            item.image,
            derive_rng(seed, "distractors", task, item.item_id),
            lister.enabled,
            strict_pairwise,
            max_resamples,
        )
        for item in items
    }
    listed: dict[str, Entities] = {}
    rounds = 0
    while True:  # list what the walks need, in batches, until every walk is done
        needed: dict[str, None] = {}
        for item in items:
            if lister.enabled and item.image not in listed:
                needed[item.image] = None
                continue
            for key in streams[item.item_id].extend(longest - 1, listed.get(item.image), listed.get):
                needed[key] = None
        if not needed:
            break
        rounds += 1
        listed.update(lister.list([image(key) for key in needed]))
    plans, failures = [], []
    for cfg in cfgs:
        for item in items:
            walk = streams[item.item_id].walk
            distractors = walk.distractors(cfg.length - 1)
            if distractors is None:
                failures.append(Failure(cfg.name, item.item_id, walk.failure or "no distractors"))
                continue
            p = position(seed, task, item.item_id, cfg.length)
            plans.append(
                RowPlan(
                    cfg,
                    item.item_id,
                    [*distractors[:p], item.image, *distractors[p:]],
                    [p],
                    item.question,
                    item.answer,
                    list(item.answers),
                    list(item.choices),
                    item.subset,
                    n_resamples=walk.resampled(cfg.length - 1),
                )
            )
    # Unlisted images (no entity known, the lister failed) are never distractors and fail their item as content.
    stats = {
        "listing_rounds": rounds,
        "images_listed": len(listed),
        "images_unlisted": sum(1 for v in listed.values() if not isinstance(v, frozenset)),
        "distractors_skipped_unlisted": sum(s.walk.unlisted for s in streams.values()),
        "items_content_unlisted": sum(1 for item in items if isinstance(listed.get(item.image), Unlisted)),
        "resamples": sum(s.walk.resampled(longest - 1) for s in streams.values()),
    }
    return plans, failures, stats


def _hue_colour(hue: float) -> tuple[int, int, int]:
    r, g, b = colorsys.hsv_to_rgb(hue, 1.0, 0.85)
    return round(r * 255), round(g * 255), round(b * 255)


def _digit(rng, index: int, label: int, colour: tuple[int, int, int]) -> Digit:
    return Digit(
        index, label, colour, round(rng.uniform(1 / 6, 1 / 2), 4), round(rng.random(), 4), round(rng.random(), 4)
    )


def plan_mnist(
    cfgs: Sequence[LocoConfig],
    samples: int,
    labels: Sequence[int] | np.ndarray,
    coco_pool: Sequence[str],
    seed: int,
    sizes: Callable[[str], tuple[int, int]],
    cell: int,
) -> tuple[list[RowPlan], list[Failure], dict[str, Digit]]:
    """Transcription rows: per length n and digit count d (1..min(8, n)), `samples` contexts of d coloured
    training digits among n - d COCO images; digits may repeat (Figure 3: [6, 6, 1, 0]). Each digit is sized
    against the row's COCO images (`digit_frame`; `sizes` gives an image's width and height)."""
    plans, failures, digits = [], [], {}
    for cfg in cfgs:
        for d in cfg.digit_counts:
            for k in range(samples):
                item_id = f"d{d}-{k:04d}"
                rng = derive_rng(seed, "mnist-digits", d, k)
                drawn = []
                for _ in range(d):
                    index = rng.randrange(len(labels))
                    drawn.append(_digit(rng, index, int(labels[index]), _hue_colour(rng.random())))
                stream = DistractorStream(coco_pool, None, derive_rng(seed, "mnist-coco", d, k), False)
                stream.extend(cfg.length - d, None, lambda key: None)
                hay = stream.walk.distractors(cfg.length - d)
                if hay is None:
                    failures.append(Failure(cfg.name, item_id, stream.walk.failure or "no distractors"))
                    continue
                slots = sorted(derive_rng(seed, "mnist-positions", d, k, cfg.length).sample(range(cfg.length), d))
                context, placed, rest = [], {}, iter(hay)
                for slot, digit in zip(slots, _framed(drawn, [sizes(key) for key in hay], cfg.mode, cell), strict=True):
                    placed[slot] = digit
                for pos in range(cfg.length):
                    context.append(placed[pos].key if pos in placed else next(rest))
                for digit in placed.values():
                    digits[digit.key] = digit
                gold = [placed[s].label for s in slots]  # in context order
                plans.append(
                    RowPlan(
                        cfg, item_id, context, slots, "", ", ".join(map(str, gold)), [str(g) for g in gold], digits=gold
                    )
                )
    return plans, failures, digits


def needle_digits(by_label: dict[int, list[int]], seed: int) -> list[Digit]:
    """The ablation's ten digits, one per number, each its own colour, the same at every length and position."""
    rng = derive_rng(seed, "needle-digits")
    colours = list(NEEDLE_PALETTE.values())
    rng.shuffle(colours)
    return [_digit(rng, by_label[g][rng.randrange(len(by_label[g]))], g, colours[g]) for g in range(10)]


def plan_needle(
    cfgs: Sequence[LocoConfig],
    digits: Sequence[Digit],
    coco_pool: Sequence[str],
    seed: int,
    sizes: Callable[[str], tuple[int, int]],
    cell: int,
) -> tuple[list[RowPlan], list[Failure], dict[str, Digit]]:
    """Needle rows: each digit at each position of each length, among the same n - 1 COCO images (the digit's
    haystack, fixed per digit so that only the position changes along a length), sized against them."""
    plans, failures, drawn = [], [], {}
    for cfg in cfgs:
        for digit in digits:
            stream = DistractorStream(coco_pool, None, derive_rng(seed, "needle-haystack", digit.label), False)
            stream.extend(cfg.length - 1, None, lambda key: None)
            hay = stream.walk.distractors(cfg.length - 1)
            if hay is None:
                failures += [
                    Failure(cfg.name, f"g{digit.label}-p{p:02d}", stream.walk.failure or "no distractors")
                    for p in range(cfg.length)
                ]
                continue
            framed = _framed([digit], [sizes(key) for key in hay], cfg.mode, cell)[0]
            drawn[framed.key] = framed
            for p in range(cfg.length):
                plans.append(
                    RowPlan(
                        cfg,
                        f"g{digit.label}-p{p:02d}",
                        [*hay[:p], framed.key, *hay[p:]],
                        [p],
                        "",
                        str(digit.label),
                        [str(digit.label)],
                        digits=[digit.label],
                    )
                )
    return plans, failures, drawn
