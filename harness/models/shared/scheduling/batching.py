"""Batching by token budget, from the token figures every row carries (no image is decoded).

lm-eval's `Collator` sorts by text length only; for long multi-image prompts the images dominate, so
here a request costs `Request.token_count` (text + vision tokens) plus its generation budget
`max_gen_toks`. `plan_batches` packs requests greedily into batches that respect

* `max_batch_tokens`: with `padded=True` (the default, right for padded `hf` batches) a batch costs
  `len(batch) * longest cost`, the size of the padded tensors; with `padded=False` the plain sum
  (right for an engine without padding, e.g. to bound how many decoded images a vLLM chunk holds);
* `max_batch_size` requests and `max_batch_images` images.

Requests are sorted long-first (ties keep their order), so a batch that runs out of memory shows up
at once, not hours into a run; a request that alone exceeds a cap goes in a batch of its own,
marked `oversized`. Batches never mix generation settings (one `generate` call decodes one way).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from harness.api import Request


@dataclass(frozen=True)
class Batch:
    """Positions (into the planned sequence) of one batch, with what it costs."""

    indices: tuple[int, ...]
    tokens: int  # cost under the plan's counting rule (padded or sum)
    images: int
    oversized: bool = False  # a single request over a cap: it runs alone


def request_cost(request: Request) -> int:
    """Tokens a request occupies: its prompt (text + vision) plus the tokens it may generate."""
    return request.token_count + request.settings.max_gen_toks


def _batch_tokens(count: int, total: int, longest: int, padded: bool) -> int:
    return count * longest if padded else total


def plan_batches(
    costs: Sequence[int],
    *,
    max_batch_tokens: int | None = None,
    max_batch_size: int | None = None,
    images: Sequence[int] | None = None,
    max_batch_images: int | None = None,
    groups: Sequence[object] | None = None,
    padded: bool = True,
    sort_long_first: bool = True,
) -> list[Batch]:
    """Pack items (given by their token costs) into batches under the caps.

    `groups[i]` (any hashable) keeps items of different groups in different batches. Every index
    of `costs` appears in exactly one batch. Within a group, items are taken long-first when
    `sort_long_first`, else in input order.
    """
    for name, cap in (
        ("max_batch_tokens", max_batch_tokens),
        ("max_batch_size", max_batch_size),
        ("max_batch_images", max_batch_images),
    ):
        if cap is not None and cap < 1:
            raise ValueError(f"{name} must be at least 1, got {cap}")
    n = len(costs)
    if images is not None and len(images) != n:
        raise ValueError(f"images has {len(images)} entries for {n} costs")
    if groups is not None and len(groups) != n:
        raise ValueError(f"groups has {len(groups)} entries for {n} costs")
    if any(c < 0 for c in costs):
        raise ValueError("token costs must be non-negative")
    image_counts = images if images is not None else [0] * n

    # Group first, in order of first appearance, so the plan is deterministic.
    by_group: dict[object, list[int]] = {}
    for i in range(n):
        by_group.setdefault(groups[i] if groups is not None else None, []).append(i)

    batches: list[Batch] = []
    for members in by_group.values():
        order = sorted(members, key=lambda i: -costs[i]) if sort_long_first else members
        batches.extend(_pack(order, costs, image_counts, max_batch_tokens, max_batch_size, max_batch_images, padded))
    if sort_long_first and len(by_group) > 1:
        batches.sort(key=lambda b: -costs[b.indices[0]])  # long-first across groups too (stable)
    return batches


def _pack(
    order: Sequence[int],
    costs: Sequence[int],
    images: Sequence[int],
    max_tokens: int | None,
    max_size: int | None,
    max_images: int | None,
    padded: bool,
) -> list[Batch]:
    """Greedy packing of one group, in the given order."""
    out: list[Batch] = []
    current: list[int] = []
    total = longest = n_images = 0
    for i in order:
        cost, imgs = costs[i], images[i]
        if (max_tokens is not None and cost > max_tokens) or (max_images is not None and imgs > max_images):
            out.append(Batch((i,), cost, imgs, oversized=True))
            continue
        new_longest = max(longest, cost)
        fits = (
            (max_size is None or len(current) + 1 <= max_size)
            and (max_tokens is None or _batch_tokens(len(current) + 1, total + cost, new_longest, padded) <= max_tokens)
            and (max_images is None or n_images + imgs <= max_images)
        )
        if current and not fits:
            out.append(Batch(tuple(current), _batch_tokens(len(current), total, longest, padded), n_images))
            current, total, n_images, new_longest = [], 0, 0, cost
        current.append(i)
        total += cost
        longest = new_longest
        n_images += imgs
    if current:
        out.append(Batch(tuple(current), _batch_tokens(len(current), total, longest, padded), n_images))
    # An oversized request is emitted while a batch is still open: put batches back in `order`.
    position = {i: p for p, i in enumerate(order)}
    return sorted(out, key=lambda b: position[b.indices[0]])


def token_budget_batches(
    requests: Sequence[Request],
    *,
    max_batch_tokens: int | None,
    max_batch_size: int | None = None,
    sort_long_first: bool = True,
    cost: Callable[[Request], int] = request_cost,
) -> Iterator[list[Request]]:
    """Yield padded batches of requests (see `plan_batches`); what a backend's `batches()` can return."""
    plan = plan_batches(
        [cost(r) for r in requests],
        max_batch_tokens=max_batch_tokens,
        max_batch_size=max_batch_size,
        groups=[r.settings for r in requests],
        sort_long_first=sort_long_first,
    )
    for batch in plan:
        yield [requests[i] for i in batch.indices]
