"""Visual Haystack's files: the needle photos among haystack photos."""

from __future__ import annotations

from builders.mmlongbench.full_fixture.units import (
    FixtureSource,
    Row,
    UnitStream,
    checked,
    counted,
    insert_needles,
    needle_order,
    needle_positions,
)
from builders.mmlongbench.leaves import Leaf


def vh_rows(src: FixtureSource, leaf: Leaf, tokens: int, base: int) -> list[Row]:
    needles = [src.photo(f"vh/needle/{leaf.dataset}/{base:04d}_{j}.jpg") for j in range(1 if leaf.variants == 6 else 2)]
    row: Row = {
        "id": f"{leaf.dataset}_{base}",
        "question": "For the image with a cat, is there a dog?",
        "answer": "Yes" if base % 2 == 0 else "No",
    }
    stream = src.stream(
        f"{leaf.name}/{base}",
        lambda: UnitStream(lambda k: src.photo(f"vh/haystack/{leaf.dataset}/{base:04d}/{k:05d}.jpg"), src.image_tokens),
    )
    haystack = stream.take(tokens - counted(src, leaf, {**row, "ctxs": needles}))
    rows = [
        {
            **row,
            "ctxs": insert_needles(
                haystack,
                needle_order(needles, variant),
                needle_positions(len(haystack), len(needles), variant, leaf.variants),
            ),
        }
        for variant in range(leaf.variants)
    ]
    return checked(src, leaf, tokens, rows, max(src.image_tokens(p) for p in [*haystack, *needles]))
