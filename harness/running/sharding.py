"""`--shard i/n`: run a deterministic part of every task, for batch schedulers (one job per GPU/node).

Shards are 0-based (`0/4` … `3/4`, so `--shard $SLURM_ARRAY_TASK_ID/$N` works). A document goes to
shard `doc_id % n`, where `doc_id` is its position in the task's evaluated split (`Request.doc_id`).
Why round-robin on the position, rather than contiguous ranges or a hash of the sample id:

* a document's shard depends only on its own position and on n, not on how many documents the task
  has, so `--limit`/`--samples` select the same documents in a sharded and an unsharded run;
* shard sizes differ by at most one (a hash only balances on average: 8 documents in 4 shards can
  leave one empty), and each shard sees a spread of the task (MMNeedle rows are positives then
  negatives: contiguous ranges would give one shard only positives, so its partial results would
  say nothing about the whole).

The position is stable because a built dataset is deterministic and rows are kept in `sample_id`
order. The shard itself is not part of a sample's identity: `harness merge` checks that the shards
of one run share every other setting (see `harness.outputs.merge.journals`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SHARD = re.compile(r"^\s*([0-9]{1,9})\s*/\s*([0-9]{1,9})\s*$")  # ASCII digits, few enough to convert


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"shard count must be at least 1, got {self.count}")
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard index must be in 0..{self.count - 1} for {self.count} shards, got {self.index}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def contains(self, doc_id: int) -> bool:
        return doc_id % self.count == self.index


def parse_shard(text: str | None) -> Shard | None:
    """`"i/n"` -> Shard(i, n); None or empty -> None (no sharding). Raises ValueError with the rule."""
    if text is None or not str(text).strip():
        return None
    match = _SHARD.match(str(text))
    if not match:
        raise ValueError(f"--shard expects 'i/n' with 0 <= i < n (e.g. 0/4), got {text!r:.60}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise ValueError(f"--shard {text}: the shard count must be at least 1")
    if index >= count:
        hint = f" (shards are 0-based: the last of {count} is {count - 1}/{count})" if index == count else ""
        raise ValueError(f"--shard {text}: the index must be in 0..{count - 1}{hint}")
    return Shard(index, count)


def shard_sizes(num_docs: int, count: int) -> list[int]:
    """How many of `num_docs` contiguous doc ids (0..num_docs-1) each of `count` shards gets."""
    return [len(range(i, num_docs, count)) for i in range(count)]
