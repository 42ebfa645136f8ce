"""The sequences of requests the runner hands a model: each request built from its row only when asked for, so
memory holds one batch of requests at a time, not one request per sample."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate

from harness.api import GenerationSettings, Request
from harness.running.task import Task


class LazyRequests(Sequence[Request]):
    """A task's pending requests in run order, each built from its row only when asked for, so
    memory holds one batch of requests at a time, not one request per sample."""

    def __init__(
        self,
        task: Task,
        settings: GenerationSettings,
        doc_ids: list[int],
        policy: Callable[[Request], Request] | None = None,
    ) -> None:
        self.task = task
        self.settings = settings
        self.doc_ids = doc_ids
        self.policy = policy

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        doc_id = self.doc_ids[index]
        request = self.task.build_request(doc_id, self.task.doc(doc_id), self.settings)
        assert isinstance(request, Request), request  # it was built once already, while screening
        return self.policy(request) if self.policy else request


class OrderedRequests(Sequence[Request]):
    """Requests taken from `source` in the order of `order` (positions into it), each built when asked for."""

    def __init__(self, source: Sequence[Request], order: Sequence[int]) -> None:
        self.source = source
        self.order = list(order)

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.source[self.order[index]]


class ChainedRequests(Sequence[Request]):
    """Several tasks' `LazyRequests` end to end: one sequence for the model, each request built when asked for."""

    def __init__(self, parts: Sequence[LazyRequests]) -> None:
        self.parts = list(parts)
        self.ends = list(accumulate(len(part) for part in self.parts))

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        part = bisect_right(self.ends, index)
        return self.parts[part][index - (self.ends[part - 1] if part else 0)]
