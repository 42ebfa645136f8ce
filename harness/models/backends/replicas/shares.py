"""How a pool divides one batch of an engine that schedules its own batches (vLLM) between its replicas: the
requests that share a prompt prefix stay together (their replica's prefix cache serves them), and the shares are
balanced by prompt tokens, the longest groups placed first; and the largest image of the requests the backend plans
its batches with, which each replica's engine is sized by (`LargestImage`)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.api import Request
from harness.models.shared.scheduling.prefix_order import neighbour_groups, prompt_key


def prefix_groups(requests: Sequence[Request]) -> list[list[int]]:
    """Positions of `requests` in runs of neighbours that share a prompt prefix (the rule `prefix_order.cache_order`
    groups by)."""
    return neighbour_groups([prompt_key(request) for request in requests], range(len(requests)))[0]


def split_shares(requests: Sequence[Request], parts: int) -> list[list[int]]:
    """Positions of `requests` in at most `parts` shares, whole prefix groups each, of similar prompt tokens; the
    heaviest share first, each in the batch's order."""
    groups = prefix_groups(requests)
    costs = [sum(requests[i].token_count for i in group) for group in groups]
    parts = max(1, min(parts, len(groups)))
    loads = [0] * parts
    shares: list[list[int]] = [[] for _ in range(parts)]
    for g in sorted(range(len(groups)), key=lambda g: (-costs[g], g)):
        target = min(range(parts), key=lambda p: (loads[p], p))
        shares[target] += groups[g]
        loads[target] += costs[g]
    order = sorted(range(parts), key=lambda p: (-loads[p], p))
    return [sorted(shares[p]) for p in order if shares[p]]


class LargestImage:
    """The largest width and height among the images of the requests seen (as `Model.prepare` takes them)."""

    def __init__(self) -> None:
        self.width = self.height = 0

    @property
    def size(self) -> tuple[int, int] | None:
        return (self.width, self.height) if self.width and self.height else None

    def see(self, size: tuple[int, int] | None) -> None:
        if size is not None:
            self.width, self.height = max(self.width, size[0]), max(self.height, size[1])

    def covering(self, requests: Sequence[Request]) -> tuple[int, int] | None:
        """The size, grown to cover `requests` too."""
        for request in requests:
            for image in request.images:
                self.see((image.width or 0, image.height or 0))
        return self.size

    def seeing(self, requests: Sequence[Request]) -> Sequence[Request]:
        """`requests`, each one's images seen as it is read: a backend that reads every request before its first
        batch (vLLM) has the pool know the run's largest image before a replica builds its engine, without a
        request built a second time."""
        return _Seen(requests, self)


class _Seen(Sequence[Request]):
    def __init__(self, requests: Sequence[Request], largest: LargestImage) -> None:
        self.requests = requests
        self.largest = largest

    def __len__(self) -> int:
        return len(self.requests)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        request = self.requests[index]
        self.largest.covering((request,))
        return request
