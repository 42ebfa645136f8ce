"""The 21 MMNeedle configs and which sample ids each build holds (spec §2.7, §2.10-2.11)."""

from __future__ import annotations

from dataclasses import dataclass

from builders.core.benchmark import select_configs

MN_PAIRS = ((1, 2), (1, 4), (1, 8), (10, 1), (10, 2), (10, 4), (10, 8))
NEEDLE_COUNTS = (1, 2, 5)
NEGATIVE_ID_START = 5000  # ids 0-4999 positive, 5000-9999 negative, in a run of 10,000 samples
SAMPLE_COUNT = 10_000  # samples per config in the released run (one past the last id)
POOL_SIZE = 10_000  # stitched images per N (Step 1)


@dataclass(frozen=True)
class NeedleConfig:
    M: int  # images in the haystack
    N: int  # grid side of each stitched image
    K: int  # needles (captions) per sample

    @property
    def name(self) -> str:
        return f"m{self.M}_n{self.N}_k{self.K}"

    @property
    def slots(self) -> int:
        return self.M * self.N * self.N

    @property
    def paper_count(self) -> int:
        """Samples per polarity the paper evaluated: the first 1,000 (K=1) or 100 (K>1)."""
        return 1000 if self.K == 1 else 100

    def in_paper_subset(self, sample_id: int, negative_start: int = NEGATIVE_ID_START) -> bool:
        offset = sample_id - negative_start if sample_id >= negative_start else sample_id
        return offset < self.paper_count

    def min_source_images(self) -> int:
        """A haystack can hold M*N*N distinct images, and K negatives must lie outside it."""
        return self.slots + self.K

    def sample_ids(
        self,
        full: bool = False,
        limit: int | None = None,
        negative_start: int = NEGATIVE_ID_START,
        end: int = SAMPLE_COUNT,
    ) -> list[int]:
        """Positives then negatives, in id order: the paper's subset, all, or the first L of each. Ids below
        `negative_start` are positives, ids from it to `end` (exclusive) negatives. The official generator makes
        sample i a positive when i < S / 2, so a run of S samples has ceil(S / 2) positives and floor(S / 2)
        negatives (5,000 each for the released 10,000; 101 and 100 for 201): each side keeps its own count."""
        sides = [negative_start, max(0, end - negative_start)]
        counts = [side if full else min(self.paper_count, side) for side in sides]
        if limit is not None:
            counts = [min(count, limit) for count in counts]
        return list(range(counts[0])) + list(range(negative_start, negative_start + counts[1]))


CONFIGS: dict[str, NeedleConfig] = {
    cfg.name: cfg for cfg in (NeedleConfig(m, n, k) for k in NEEDLE_COUNTS for m, n in MN_PAIRS)
}


def parse_configs(names: list[str] | None) -> list[NeedleConfig]:
    """Config names (comma- or space-separated; None or 'all' = all 21) in canonical order."""
    return [CONFIGS[name] for name in select_configs(names, CONFIGS)]
