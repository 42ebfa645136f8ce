"""MM-NIAH's files: text or image needles in an interleaved document of passages and OBELICS-like photos."""

from __future__ import annotations

import random
from collections.abc import Sequence

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.mmlongbench import full_images
from builders.mmlongbench.full_fixture.units import (
    CARTOON_SIDE,
    COUNTED,
    MMNIAH_IMAGE_EVERY,
    FixtureSource,
    Row,
    UnitStream,
    checked,
    counted,
    insert_needles,
    made_up_name,
    needle_order,
    needle_positions,
    passage,
)
from builders.mmlongbench.leaves import Leaf


def interleaved(items: Sequence[tuple[str, str]]) -> tuple[list[dict[str, str]], list[str]]:
    """MM-NIAH's `ctxs` (passages, and `<image>` where an image goes) and `image_list`, from (kind, value) units."""
    ctxs = [{"text": IMAGE_PLACEHOLDER if kind == "image" else value} for kind, value in items]
    return ctxs, [value for kind, value in items if kind == "image"]


def mmniah_needles(src: FixtureSource, leaf: Leaf, base: int, rng: random.Random) -> tuple[list[tuple[str, str]], Row]:
    """The id's needles (units to insert) and the row's question fields."""
    root = f"mm-niah/{leaf.dataset}/{base:04d}"
    many = 1 if leaf.variants == 6 else 3
    if leaf.loader == "mmniah_text":
        if "count" in leaf.dataset:  # the answer, in the needles' order in the row, is set by `mmniah_rows`
            needles = [
                ("text", "Little penguins " + " and ".join([COUNTED] * rng.randint(1, 4)) + " were seen.")
                for _ in range(many)
            ]
            return needles, {"question": f"How many times are {COUNTED} mentioned in each needle? Answer as a list."}
        word = made_up_name(rng, 2).lower()
        if "reason" in leaf.dataset:
            people = [made_up_name(rng, 2) for _ in range(many + 1)]
            needles = [("text", f"{people[j]} is older than {people[j + 1]}.") for j in range(many)]
            return needles, {"question": f"Who is the oldest among {', '.join(sorted(people))}?", "answer": people[0]}
        return [("text", f"The secret word is {word}.")], {"question": "What is the secret word?", "answer": word}
    needles = [("image", src.photo(f"{root}/needle_{j}.jpg", mark=True)) for j in range(many)]
    if leaf.loader == "mmniah_image_count":
        cartoon = src.image(f"{root}/cartoon.png", "cartoon", (CARTOON_SIDE, CARTOON_SIDE))
        return needles, {
            "needle_image_list": [cartoon],
            "question": f"How many times does this cartoon {IMAGE_PLACEHOLDER} appear in each image? Answer as a list.",
        }
    choices = [src.image(f"{root}/choice_{c}.png", "cartoon", (CARTOON_SIDE, CARTOON_SIDE)) for c in "ABCD"]
    return needles, {
        "choices_image": choices,
        "answer": base % 4,
        "question": "Which of the following images appears in a certain image of the above document?",
    }


def mmniah_rows(src: FixtureSource, leaf: Leaf, tokens: int, base: int) -> list[Row]:
    rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}"))
    needles, fields = mmniah_needles(src, leaf, base, rng)
    root = f"mm-niah/{leaf.dataset}/{base:04d}"

    def unit(k: int) -> tuple[str, str]:
        if k % MMNIAH_IMAGE_EVERY == MMNIAH_IMAGE_EVERY - 1:
            return "image", src.photo(f"{root}/obelics_{k:05d}.jpg")
        return "text", passage(random.Random(full_images.seed_of(f"{root}/{k}")))

    def cost(item: tuple[str, str]) -> int:
        return src.image_tokens(item[1]) if item[0] == "image" else src.text_tokens(item[1])

    stream = src.stream(f"{leaf.name}/{base}", lambda: UnitStream(unit, cost))

    def row_of(items: Sequence[tuple[str, str]]) -> Row:
        ctxs, image_list = interleaved(items)
        row = {"id": f"{leaf.dataset}_{base}", "ctxs": ctxs, "image_list": image_list, **fields}
        if leaf.loader == "mmniah_image_count":  # one count per image of the document: 1 where a needle was pasted
            row["answer"] = [int(item in needles) for item in items if item[0] == "image"]
        elif "answer" not in row:  # text counting: the needles' counts in the order they appear
            row["answer"] = [item[1].split().count(COUNTED) for item in items if item in needles]
        return row

    haystack = stream.take(tokens - counted(src, leaf, row_of(needles)))
    rows = [
        row_of(
            insert_needles(
                haystack,
                needle_order(needles, variant),
                needle_positions(len(haystack), len(needles), variant, leaf.variants),
            )
        )
        for variant in range(leaf.variants)
    ]
    return checked(src, leaf, tokens, rows, max(cost(item) for item in [*haystack, *needles]))
