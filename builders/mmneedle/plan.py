"""What each MMNeedle sample holds, before any pixel is touched.

A `RowPlan` names the haystack (stitched pool image keys, in order), the K needle source images
and their 0-based (index, row, col) locations. A pool maps a stitched image key to its N*N source
image names, row-major. Two planners produce them:

- `RegeneratePlanner`: Steps 1-4 of the paper (spec §2.3-2.6), re-implemented with sorted inputs
  and per-decision RNGs (`builders.core.sampling`). Not the paper's samples (those depend on the
  authors' `os.listdir` order), but the same procedure, and the same for the same seed.
- `OfficialPlanner` (`builders.mmneedle.official`): the authors' released metadata.
Both are pure functions of (config, sample id), so rows can be planned twice (once to learn which
stitched images are needed, once while writing) instead of being held in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from builders.core.sampling import derive_rng, sample_excluding
from builders.mmneedle.configs import NEGATIVE_ID_START, POOL_SIZE, SAMPLE_COUNT, NeedleConfig

NEGATIVE_LOCATION = (-1, -1, -1)


@dataclass(frozen=True)
class RowPlan:
    sample_id: int
    positive: bool
    haystack: tuple[str, ...]  # stitched pool image keys, in haystack order
    needle_files: tuple[str, ...]  # K source image names, in caption order
    locations: tuple[tuple[int, int, int], ...]  # 0-based (index, row, col); NEGATIVE_LOCATION for negatives


class Pool(Protocol):
    N: int

    def tiles(self, key: str) -> tuple[str, ...]: ...


class Planner(Protocol):
    mode: str

    def pool(self, N: int) -> Pool: ...

    def negative_start(self, cfg: NeedleConfig) -> int:
        """The first negative sample id of a config (positives are the ids below it)."""
        ...

    def sample_end(self, cfg: NeedleConfig) -> int:
        """One past the last sample id of a config (negatives are the ids from `negative_start` to it)."""
        ...

    def plan(self, cfg: NeedleConfig, sample_id: int) -> RowPlan: ...


class RegeneratedPool:
    """Step 1: 10,000 stitched images of N*N distinct source images each (N = 1: 10,000 distinct
    images, or all of them if the source is smaller). Defined lazily: the sub-images of pool image
    i come from their own RNG, so only the pool images a build uses are ever computed."""

    def __init__(self, N: int, names: Sequence[str], seed: int) -> None:
        self.N = N
        self._names = names
        self._seed = seed
        self._cache: dict[int, tuple[str, ...]] = {}
        if N == 1:
            size = min(POOL_SIZE, len(names))
            chosen = derive_rng(seed, "pool", 1).sample(range(len(names)), size)
            self._single = [names[i] for i in chosen]
            self.size = size
        else:
            self.size = POOL_SIZE

    def key(self, index: int) -> str:
        return f"stitched_{self.N}x{self.N}_{index:04d}"

    def index(self, key: str) -> int:
        return int(key.rsplit("_", 1)[1])

    def tiles(self, key: str) -> tuple[str, ...]:
        index = self.index(key)
        cached = self._cache.get(index)
        if cached is None:
            if self.N == 1:
                cached = (self._single[index],)
            else:
                rng = derive_rng(self._seed, "pool", self.N, index)
                cached = tuple(self._names[i] for i in rng.sample(range(len(self._names)), self.N * self.N))
            self._cache[index] = cached
        return cached


class RegeneratePlanner:
    mode = "regenerate"

    def __init__(self, names: Sequence[str], seed: int) -> None:
        self.names = list(names)  # sorted by the source
        self.seed = seed
        self._pools: dict[int, RegeneratedPool] = {}

    def negative_start(self, cfg: NeedleConfig) -> int:
        return NEGATIVE_ID_START

    def sample_end(self, cfg: NeedleConfig) -> int:
        return SAMPLE_COUNT

    def pool(self, N: int) -> RegeneratedPool:
        if N not in self._pools:
            self._pools[N] = RegeneratedPool(N, self.names, self.seed)
        return self._pools[N]

    def plan(self, cfg: NeedleConfig, sample_id: int) -> RowPlan:
        pool = self.pool(cfg.N)
        rng = derive_rng(self.seed, "row", cfg.name, sample_id)
        # Step 2: M = 1 uses pool image i for sample i (as the official code); M = 10 draws 10
        # distinct pool images per sample, independently across samples.
        indices = [sample_id] if cfg.M == 1 else rng.sample(range(pool.size), cfg.M)
        haystack = tuple(pool.key(i) for i in indices)
        grids = [pool.tiles(key) for key in haystack]
        if sample_id < NEGATIVE_ID_START:
            return self._positive(cfg, sample_id, rng, haystack, grids)
        # Step 4: K distinct images from outside the haystack (by name, as the official code).
        inside = {name for grid in grids for name in grid}
        needles = sample_excluding(rng, self.names, cfg.K, inside)
        return RowPlan(sample_id, False, haystack, tuple(needles), (NEGATIVE_LOCATION,) * cfg.K)

    @staticmethod
    def _positive(cfg: NeedleConfig, sample_id: int, rng, haystack, grids) -> RowPlan:  # noqa: ANN001
        # Step 3, the official sampler's rule (sample_multiple_needles.py): a uniform slot j over all
        # M*N*N sub-images -> (index, row, col); the K needles take distinct slots, unless every slot is
        # taken already (m1_n2_k5: 4 slots, 5 needles). Two slots may hold the same image (it repeats
        # across the stitched images of an M = 10 haystack): its caption is then asked twice, and
        # `all_locations` lists every place it is.
        per_image = cfg.N * cfg.N
        used_slots: set[int] = set()
        files: list[str] = []
        locations: list[tuple[int, int, int]] = []
        for _ in range(cfg.K):
            while True:
                j = rng.randrange(cfg.slots)
                if j not in used_slots or len(used_slots) >= cfg.slots:
                    break
            used_slots.add(j)
            index, cell = divmod(j, per_image)
            row, col = divmod(cell, cfg.N)
            files.append(grids[index][cell])
            locations.append((index, row, col))
        return RowPlan(sample_id, True, haystack, tuple(files), tuple(locations))


def all_locations(needle: str, grids: Sequence[Sequence[str]], N: int) -> list[str]:
    """Every 1-based "m, r, c" where `needle` appears in the haystack (spec A15)."""
    found = []
    for m, grid in enumerate(grids):
        for cell, name in enumerate(grid):
            if name == needle:
                row, col = divmod(cell, N)
                found.append(f"{m + 1}, {row + 1}, {col + 1}")
    return found
