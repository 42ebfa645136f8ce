"""The official evaluation sample (commit 26197d2, `eval.py` + `data.py`), drawn once and frozen in the rows.

`eval.py` calls `transformers.set_seed(42)` before loading each test file, so every draw below starts from
`random.seed(42)` / `np.random.default_rng(42)`:

- NIAH and VRAG files: `random.sample(sorted(set(ids)), n)`, then every row of a sampled id, in file order;
- Summarization and DocVQA files: `datasets.Dataset.shuffle(seed=42).select(range(n))`, i.e. the first n of
  `np.random.default_rng(42).permutation(len(rows))`, in that order;
- ICL files: `random.shuffle` of the (domain, test example) list, the first n kept; then each row draws an
  exemplar set with `random.choice` and shuffles its demonstration rounds in place with `random.shuffle`,
  inside `datasets.map(num_proc=preprocessing_num_workers=8)`. That map forks 8 workers over contiguous
  shards, so each shard starts from the same random state (the one after the shuffle) and its own copy of
  the exemplar sets, whose in-place shuffles carry over to the shard's later rows. `icl_draws` replays that.

With `full`, the official code's `max_test_samples=None` path: every row in file order, no shuffle
(ICL rows still draw their exemplars as above).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

OFFICIAL_SEED = 42
OFFICIAL_MAP_WORKERS = 8  # arguments.py --preprocessing_num_workers default; run_eval.sh never sets it


def sampled_ids(ids: Sequence[Hashable], n: int | None, seed: int = OFFICIAL_SEED) -> set[Hashable] | None:
    """The ids `random.sample(sorted(set(ids)), min(n, #ids))` keeps after `random.seed(seed)`; None = all."""
    if n is None:
        return None
    keys = sorted(set(ids))  # type: ignore[type-var]
    return set(random.Random(seed).sample(keys, min(n, len(keys))))


def shuffled_indices(count: int, n: int | None, seed: int = OFFICIAL_SEED) -> list[int]:
    """Row indices `Dataset.shuffle(seed).select(range(min(n, count)))` yields, in its order; all rows for None."""
    if n is None:
        return list(range(count))
    permutation = np.random.default_rng(seed).permutation(count)
    return [int(i) for i in permutation[: min(n, count)]]


def contiguous_shards(count: int, shards: int) -> list[range]:
    """`datasets.Dataset.shard(num_shards, index, contiguous=True)` for every index, as `map(num_proc)` splits."""
    shards = max(1, min(shards, count))
    div, mod = divmod(count, shards)
    out = []
    start = 0
    for index in range(shards):
        size = div + (1 if index < mod else 0)
        out.append(range(start, start + size))
        start += size
    return out


def icl_draws(test_examples: list[tuple[str, Any]], exemplar_sets: dict[str, list[list[list[Any]]]],
              n: int | None, seed: int = OFFICIAL_SEED,
              workers: int = OFFICIAL_MAP_WORKERS) -> list[tuple[str, Any, list[Any]]]:
    """The ICL rows in evaluation order: (domain, test example, the exemplars in shot order).

    `test_examples` are (domain, example) in file order; `exemplar_sets[domain]` the domain's candidate
    exemplar sets, each a list of demonstration rounds (lists of exemplars).
    """
    rng = random.Random(seed)
    examples = list(test_examples)
    if n is not None:
        rng.shuffle(examples)
        examples = examples[: min(n, len(examples))]
    state = rng.getstate()
    rows: list[tuple[str, Any, list[Any]]] = []
    for shard in contiguous_shards(len(examples), workers):
        worker_rng = random.Random()
        worker_rng.setstate(state)  # a forked worker inherits the parent's state...
        worker_sets = copy.deepcopy(exemplar_sets)  # ...and its own copy of the lists it shuffles in place
        for index in shard:
            domain, example = examples[index]
            chosen = worker_rng.choice(worker_sets[domain])
            for demo_round in chosen:
                worker_rng.shuffle(demo_round)
            rows.append((domain, example, [item for demo_round in chosen for item in demo_round]))
    return rows
