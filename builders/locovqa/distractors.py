"""Drawing an item's distractors, with the collision filter (spec §1.4).

Each content item has one candidate order: the pool (less its own image) in a seeded random order that
depends only on the build seed and the item, never on the context length. Walking it, a candidate is
accepted unless its entities meet the content image's (or, with `strict_pairwise`, any accepted distractor's:
the figure's "no shared entity anywhere" reading); a rejected candidate is a resample. The first n - 1
accepted candidates are the distractors at length n, so an item keeps its distractors as the length grows
(Figure 2 shows one content image under growing contexts).

A slot that meets more than `max_resamples` collisions in a row, or a pool that runs out, ends the walk: the
item fails at the lengths that need that slot, recorded with the reason (never a silently shorter context).
Candidates whose entities are not listed yet are returned to the caller, who lists them in one batch (a VLM
lister answers many images at once) and walks again.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from builders.locovqa.entities import Entities, Unlisted

DEFAULT_MAX_RESAMPLES = 50
LOOKAHEAD = 8  # unlisted candidates asked for per walk beyond those the walk is sure to need


@dataclass
class Walk:
    """An item's distractors so far."""

    accepted: list[str] = field(default_factory=list)
    resamples: list[int] = field(default_factory=list)  # collisions resampled before each accepted one
    unlisted: int = 0  # candidates skipped because the lister could not list them
    failure: str | None = None  # why the walk cannot go on

    def distractors(self, count: int) -> list[str] | None:
        return self.accepted[:count] if len(self.accepted) >= count else None

    def resampled(self, count: int) -> int:
        return sum(self.resamples[:count])


class DistractorStream:
    def __init__(
        self,
        pool: Sequence[str],
        exclude: str | None,
        rng: random.Random,
        filtered: bool,
        strict_pairwise: bool = False,
        max_resamples: int = DEFAULT_MAX_RESAMPLES,
    ) -> None:
        self.pool = pool
        self.exclude = exclude
        self.rng = rng
        self.filtered = filtered
        self.strict_pairwise = strict_pairwise
        self.max_resamples = max_resamples
        self.available = len(set(pool) - {exclude})  # candidates there are
        self.order: list[str] = []  # the candidate order, drawn as far as needed
        self._drawn: set[str] = set()
        self.cursor = 0  # the next candidate to examine
        self.walk = Walk()
        self._run = 0  # collisions in a row at the current slot
        self._taken: set[str] = set()  # entities of the accepted distractors (strict_pairwise)

    def candidate(self, i: int) -> str | None:
        """The i-th candidate of the order (None past the pool's end): drawn uniformly without replacement."""
        while len(self.order) <= i:
            if len(self._drawn) >= self.available:
                return None
            if len(self._drawn) * 2 < self.available:  # sparse: rejection is cheap
                key = self.pool[self.rng.randrange(len(self.pool))]
                if key == self.exclude or key in self._drawn:
                    continue
            else:  # dense: draw among what is left, so the loop ends
                left = sorted(set(self.pool) - self._drawn - {self.exclude})
                key = left[self.rng.randrange(len(left))]
            self._drawn.add(key)
            self.order.append(key)
        return self.order[i]

    def extend(self, count: int, content: Entities | None, entities: Callable[[str], Entities | None]) -> list[str]:
        """Walk until `count` distractors are accepted (or the walk fails); the keys whose entities are needed
        first (empty when the walk is done)."""
        walk = self.walk
        if walk.failure is not None or len(walk.accepted) >= count:
            return []
        if self.filtered:
            if content is None:
                return []  # the caller lists the content image first
            if isinstance(content, Unlisted):
                walk.failure = f"the content image was not listed: {content.reason}"
                return []
        while len(walk.accepted) < count:
            key = self.candidate(self.cursor)
            if key is None:
                walk.failure = (
                    f"the pool ran out: {len(walk.accepted)} collision-free distractor(s) in a pool of {self.available}"
                )
                return []
            if not self.filtered:
                self.cursor += 1
                walk.accepted.append(key)
                walk.resamples.append(0)
                continue
            listed = entities(key)
            if listed is None:
                return self._unlisted_ahead(entities, count - len(walk.accepted))
            self.cursor += 1
            if isinstance(listed, Unlisted):
                walk.unlisted += 1
                continue
            assert not isinstance(content, Unlisted) and content is not None
            if listed & content or (self.strict_pairwise and listed & self._taken):
                self._run += 1
                if self._run > self.max_resamples:
                    with_what = (
                        "the content image or another distractor" if self.strict_pairwise else "the content image"
                    )
                    walk.failure = (
                        f"distractor {len(walk.accepted) + 1}: {self.max_resamples} resamples in a row "
                        f"all collided with {with_what}"
                    )
                    return []
                continue
            self._taken |= listed
            walk.accepted.append(key)
            walk.resamples.append(self._run)
            self._run = 0
        return []

    def _unlisted_ahead(self, entities: Callable[[str], Entities | None], needed: int) -> list[str]:
        out: list[str] = []
        i = self.cursor
        while len(out) < needed + LOOKAHEAD:
            key = self.candidate(i)
            if key is None:
                break
            if entities(key) is None:
                out.append(key)
            i += 1
        return out
