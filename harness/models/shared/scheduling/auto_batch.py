"""`--batch_size auto`: the largest batch that fits in device memory, found as lm-eval finds it.

lm-eval (`find_executable_batch_size`) starts at `--max_batch_size` and halves the batch on every
out-of-memory error until one runs. Our batches differ in length (long prompts run first), so instead of
one probe before the run the search happens on the run's own batches: a batch that runs out of memory is
split into halves of the new size and run again, and every later batch is cut to the size that last fit.
Since the runner sends the longest requests first, the size found on the first batches fits the rest.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

DEFAULT_START = 64  # lm-eval's default --max_batch_size
T = TypeVar("T")
R = TypeVar("R")


def is_out_of_memory(err: BaseException) -> bool:
    """torch's CUDA out-of-memory error (by name: no torch import here), Python's MemoryError, or the
    allocator's message inside a RuntimeError (CPU: "can't allocate memory")."""
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _free_device_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


class FittingBatchSize:
    """The batch size of `--batch_size auto`: starts at `start`, halves on out-of-memory, never grows."""

    def __init__(self, start: int = DEFAULT_START) -> None:
        self.start = start
        self.size = start
        self.halvings = 0

    def split(self, batch: Sequence[T]) -> Iterator[list[T]]:
        """A batch cut into pieces of the size that fits now."""
        for begin in range(0, len(batch), self.size):
            yield list(batch[begin : begin + self.size])

    def run(self, generate: Callable[[list[T]], list[R]], batch: Sequence[T]) -> list[R]:
        """`generate` over the batch in pieces that fit: a piece that runs out of memory is tried again at half
        its size; at size 1 the error is the request's own and is raised."""
        out: list[R] = []
        begin = 0
        while begin < len(batch):
            piece = list(batch[begin : begin + self.size])
            try:
                out.extend(generate(piece))
            except Exception as err:
                if not is_out_of_memory(err) or len(piece) == 1:
                    raise
                _free_device_memory()
                self.size = max(1, len(piece) // 2)
                self.halvings += 1
                continue
            begin += len(piece)
        return out

    def describe(self) -> dict[str, Any]:
        """What the results record (`config.batch_sizes`, `backend_stats.auto_batch`)."""
        return {"start": self.start, "chosen": self.size, "halvings": self.halvings}
