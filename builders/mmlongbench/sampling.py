"""The official evaluation sample (commit 26197d2, `eval.py` + `data.py`), drawn once and frozen in the rows.

`eval.py` calls `transformers.set_seed(42)` before loading each test file, so every draw below starts from
`random.seed(42)` / `np.random.default_rng(42)`:

- NIAH and VRAG files: `random.sample(sorted(set(ids)), n)`, then every row of a sampled id, in file order;
- Summarization and DocVQA files: `datasets.Dataset.shuffle(seed=42).select(range(n))`, i.e. the first n of
  `np.random.default_rng(42).permutation(len(rows))`, in that order;
- ICL files: `random.shuffle` of the (domain, test example) list, the first n kept. Each row then draws
  an exemplar set with `random.choice` and shuffles its demonstration rounds with `random.shuffle`, but
  inside `datasets.map(num_proc=preprocessing_num_workers=8)`: Python's `random` reseeds itself in every
  forked worker (`os.register_at_fork`), so those draws come from OS entropy and no run, the authors'
  included, can be reproduced. `icl_draws` keeps the official procedure and distribution (the domain's
  exemplar sets, one chosen uniformly, each round shuffled uniformly) and draws each row independently
  from a seed derived from (build seed, config, row id): deterministic, and no two rows share a stream.

With `full`, the official code's `max_test_samples=None` path: every row in file order, no shuffle
(ICL rows still draw their exemplars as above).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

OFFICIAL_SEED = 42


def sampled_ids(ids: Sequence[Hashable], n: int | None, seed: int = OFFICIAL_SEED) -> set[Hashable] | None:
    """The ids `random.sample(sorted(set(ids)), min(n, #ids))` keeps after `random.seed(seed)`; None = all."""
    if n is None:
        return None
    keys = sorted(set(ids))  # type: ignore[type-var]  # one release's ids: all str or all int, which sort
    return set(random.Random(seed).sample(keys, min(n, len(keys))))


def shuffled_indices(count: int, n: int | None, seed: int = OFFICIAL_SEED) -> list[int]:
    """Row indices `Dataset.shuffle(seed).select(range(min(n, count)))` yields, in its order; all rows for None."""
    if n is None:
        return list(range(count))
    permutation = np.random.default_rng(seed).permutation(count)
    return [int(i) for i in permutation[: min(n, count)]]


def row_seed(seed: int, config: str, row_id: str) -> int:
    """A row's own seed: a hash of (build seed, config, row id), so a row's draw depends on nothing else."""
    digest = hashlib.sha256(f"{seed}\x00{config}\x00{row_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


ICLTest = tuple[str, str, Any]  # (row id, domain, test example)


def icl_draws(
    tests: list[ICLTest],
    exemplar_sets: dict[str, list[list[list[Any]]]],
    n: int | None,
    config: str,
    seed: int = OFFICIAL_SEED,
) -> list[tuple[str, str, Any, list[Any]]]:
    """The ICL rows in evaluation order: (row id, domain, test example, the exemplars in shot order).

    `tests` are in file order; `exemplar_sets[domain]` the domain's candidate exemplar sets, each a list of
    demonstration rounds (lists of exemplars). The evaluation sample is the official one (seed `seed`); each
    row's exemplar set and shot order come from its own `row_seed`.
    """
    examples = list(tests)
    if n is not None:
        random.Random(seed).shuffle(examples)
        examples = examples[: min(n, len(examples))]
    rows: list[tuple[str, str, Any, list[Any]]] = []
    for row_id, domain, example in examples:
        rng = random.Random(row_seed(seed, config, row_id))
        shots: list[Any] = []
        for demo_round in rng.choice(exemplar_sets[domain]):
            demo_round = list(demo_round)  # the release's lists stay as read: each row starts from them
            rng.shuffle(demo_round)
            shots += demo_round
        rows.append((row_id, domain, example, shots))
    return rows
