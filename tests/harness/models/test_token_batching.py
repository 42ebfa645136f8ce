"""Token-budget batching: property checks over random lengths, plus the edge cases."""

from __future__ import annotations

import random

import pytest

from harness.api import GenerationSettings
from harness.models.shared.scheduling.batching import Batch, plan_batches, request_cost, token_budget_batches
from tests.support.model_requests import make_request


def _check_plan(costs, images, plan, *, max_tokens, max_size, max_images, padded, sort_long_first):
    seen = sorted(i for b in plan for i in b.indices)
    assert seen == list(range(len(costs))), "every item exactly once"
    for batch in plan:
        members = [costs[i] for i in batch.indices]
        cost = len(members) * max(members) if padded else sum(members)
        assert batch.tokens == cost
        assert batch.images == sum(images[i] for i in batch.indices)
        if batch.oversized:
            assert len(batch.indices) == 1
            assert (max_tokens is not None and cost > max_tokens) or (
                max_images is not None and batch.images > max_images
            )
            continue
        if max_tokens is not None:
            assert cost <= max_tokens
        if max_size is not None:
            assert len(batch.indices) <= max_size
        if max_images is not None:
            assert batch.images <= max_images
        if sort_long_first:
            assert members == sorted(members, reverse=True)
    if sort_long_first:
        # Batches come long-first: the first batch holds the longest request.
        assert max(costs[i] for i in plan[0].indices) == max(costs)


@pytest.mark.parametrize("padded", [True, False])
def test_random_plans_respect_every_cap(padded):
    rng = random.Random(1234)
    for _ in range(300):
        n = rng.randint(1, 60)
        costs = [rng.choice([rng.randint(1, 50), rng.randint(50, 5000)]) for _ in range(n)]
        images = [rng.randint(0, 12) for _ in range(n)]
        max_tokens = rng.choice([None, rng.randint(100, 8000)])
        max_size = rng.choice([None, rng.randint(1, 16)])
        max_images = rng.choice([None, rng.randint(1, 30)])
        groups = [rng.choice("ab") for _ in range(n)] if rng.random() < 0.5 else None
        plan = plan_batches(
            costs,
            max_batch_tokens=max_tokens,
            max_batch_size=max_size,
            images=images,
            max_batch_images=max_images,
            groups=groups,
            padded=padded,
        )
        if groups is not None:
            assert all(len({groups[i] for i in b.indices}) == 1 for b in plan), "a batch mixes groups"
        longest = [max(costs[i] for i in b.indices) for b in plan]
        assert longest == sorted(longest, reverse=True), "batches are not long-first"
        _check_plan(
            costs,
            images,
            plan,
            max_tokens=max_tokens,
            max_size=max_size,
            max_images=max_images,
            padded=padded,
            sort_long_first=True,
        )


def test_unsorted_plan_keeps_input_order_within_batches():
    rng = random.Random(7)
    costs = [rng.randint(1, 400) for _ in range(80)]
    plan = plan_batches(costs, max_batch_tokens=1000, max_batch_size=10, padded=False, sort_long_first=False)
    assert [i for b in plan for i in b.indices] == list(range(80))
    assert all(b.tokens <= 1000 and len(b.indices) <= 10 for b in plan)


def test_oversized_request_goes_alone_and_first():
    plan = plan_batches([10, 5000, 20, 30], max_batch_tokens=100, padded=False)
    assert plan[0] == Batch((1,), 5000, 0, oversized=True)
    assert [b.indices for b in plan[1:]] == [(3, 2, 0)]
    assert not plan[1].oversized


def test_padded_budget_counts_the_longest():
    # 4 x 100 padded = 400 > 300, so the fourth short one opens a new batch; a plain sum would fit it.
    costs = [100, 10, 10, 10]
    assert [b.indices for b in plan_batches(costs, max_batch_tokens=300, padded=True)] == [(0, 1, 2), (3,)]
    assert [b.indices for b in plan_batches(costs, max_batch_tokens=300, padded=False)] == [(0, 1, 2, 3)]


def test_ties_keep_input_order_and_plan_is_deterministic():
    costs = [5, 7, 5, 7, 5]
    plan = plan_batches(costs, max_batch_size=2)
    assert [b.indices for b in plan] == [(1, 3), (0, 2), (4,)]
    assert plan == plan_batches(costs, max_batch_size=2)


def test_request_batches_never_mix_generation_settings():
    short, long_ = GenerationSettings(max_gen_toks=8), GenerationSettings(max_gen_toks=64, until=("\n",))
    requests = [
        make_request(f"s{i}", ["x " * (i + 1)], settings=short if i % 2 else long_, doc_id=i, image_tokens=())
        for i in range(10)
    ]
    batches = list(token_budget_batches(requests, max_batch_tokens=10_000, max_batch_size=4))
    assert sorted(r.sample_id for b in batches for r in b) == sorted(r.sample_id for r in requests)
    for batch in batches:
        assert len({r.settings for r in batch}) == 1
        costs = [request_cost(r) for r in batch]
        assert costs == sorted(costs, reverse=True)


def test_request_cost_counts_images_and_generation(jpeg_red):
    request = make_request(
        "a",
        ["hi there", jpeg_red, jpeg_red],
        text_tokens=12,
        image_tokens=(100, 200),
        settings=GenerationSettings(max_gen_toks=30),
    )
    assert request_cost(request) == 12 + 300 + 30
    (batch,) = list(token_budget_batches([request], max_batch_tokens=100))
    assert batch == [request]  # over the budget: alone, never dropped


def test_bad_caps_and_inputs():
    with pytest.raises(ValueError, match="max_batch_tokens must be at least 1"):
        plan_batches([1], max_batch_tokens=0)
    with pytest.raises(ValueError, match="images has 1 entries for 2 costs"):
        plan_batches([1, 2], images=[1])
    assert plan_batches([]) == []
