"""Seeded, order-independent sampling.

Every random decision is drawn from a `random.Random` derived from the build seed and a key that
names the decision (e.g. ``("pool", 8, 42)`` or ``("row", "<config>", 17)``). Nothing touches the
global `random` state, and a decision never depends on which other decisions were taken before
it, so building 4 rows or 10,000 gives the same first 4 rows, in any order, in any process.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def derive_seed(seed: int, *key: object) -> int:
    """A 64-bit seed from the build seed and a key; stable across runs and Python versions."""
    text = "\x1f".join([str(int(seed)), *(repr(part) for part in key)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def derive_rng(seed: int, *key: object) -> random.Random:
    """An independent `random.Random` for one named decision."""
    return random.Random(derive_seed(seed, *key))


def sample_excluding(rng: random.Random, population: Sequence[T], k: int, excluded: set[T] | frozenset[T]) -> list[T]:
    """k distinct items of `population` (which holds no duplicates) that are not in `excluded`.

    Rejection sampling: uniform over the allowed items, O(k) set look-ups when the excluded part
    is small (e.g. distractors drawn from outside the images already shown). The caller guarantees that k allowed items
    exist; a runaway loop is reported instead of spinning forever.
    """
    chosen: list[T] = []
    taken: set[T] = set()
    budget = 1000 + 100 * len(population)
    while len(chosen) < k:
        budget -= 1
        if budget < 0:
            raise ValueError(f"could not find {k} items outside an excluded set of {len(excluded)}")
        item = population[rng.randrange(len(population))]
        if item in excluded or item in taken:
            continue
        taken.add(item)
        chosen.append(item)
    return chosen
