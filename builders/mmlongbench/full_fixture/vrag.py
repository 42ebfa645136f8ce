"""VRAG's files: the entity's gold passages among passages of random words."""

from __future__ import annotations

import random

from builders.mmlongbench import full_images
from builders.mmlongbench.full_fixture.units import (
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
from builders.mmlongbench.prompts import PASSAGE_TEMPLATE


def vrag_rows(src: FixtureSource, leaf: Leaf, tokens: int, base: int) -> list[Row]:
    rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}"))
    entity, city = f"{made_up_name(rng)} Castle", made_up_name(rng, 2)
    golds = [
        {
            "doc_id": f"{leaf.dataset}-{base}-gold{g}",
            "title": entity,
            "text": f"{entity} stands in {city}. " + passage(rng, 90),
        }
        for g in range(2 if leaf.variants == 3 else 1)
    ]
    row: Row = {
        "id": f"{leaf.dataset}_{base}",
        "question": " Where is the castle in this picture?",
        "original_question": f"Where is {entity}?",
        "answer": [city, f"{city} town"],
        "image": src.photo(f"vrag/{leaf.dataset}/{base:04d}.jpg"),
        "positive_ctxs": golds,
    }

    def negative(k: int) -> dict[str, str]:
        passage_rng = random.Random(full_images.seed_of(f"{leaf.name}/{base}/{k}"))
        return {
            "doc_id": f"{leaf.dataset}-{base}-{k}",
            "title": made_up_name(passage_rng, 2),
            "text": passage(passage_rng),
        }

    stream = src.stream(
        f"{leaf.name}/{base}", lambda: UnitStream(negative, lambda p: src.text_tokens(PASSAGE_TEMPLATE.format(**p)))
    )
    fixed = counted(src, leaf, {**row, "ctxs": golds})
    negatives = stream.take(tokens - fixed)
    rows = []
    for variant in range(leaf.variants):
        positions = needle_positions(len(negatives), len(golds), variant, leaf.variants)
        rows.append({**row, "ctxs": insert_needles(negatives, needle_order(golds, variant), positions)})
    unit = max(src.text_tokens(PASSAGE_TEMPLATE.format(**p)) for p in [*negatives, *golds])
    return checked(src, leaf, tokens, rows, unit)
