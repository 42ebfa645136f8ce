"""One replica: a backend built in a Ray worker process from the run's model arguments, answering the batches the
pool sends it one at a time. Made a Ray actor by the pool (`ray.remote(Replica)`), so this module imports without Ray.

Ray restarts a replica whose process died by building it again, so nothing a replica needs lives only in its memory:
each batch comes with the run's state (`ReplicaState`: the largest image count and image, the batch size searched
for)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.api import Model, Request, Response
from harness.inputs.build_images import BuildFiles, unreadable
from harness.inputs.integrity import release_mapped_pages
from harness.models.shared.generation import safe_generate

# Builds a replica's backend: (backend name, its --model_args, batch size, max batch tokens) -> Model.
Build = Callable[[str, dict[str, str], int, int | None], Model]


def build_backend(backend: str, args: dict[str, str], batch_size: int, max_batch_tokens: int | None) -> Model:
    """The backend as a single-process run builds it."""
    from harness.models.registry import get_model_class

    return get_model_class(backend).from_args(args, batch_size=batch_size, max_batch_tokens=max_batch_tokens)


@dataclass(frozen=True)
class ReplicaState:
    """What the run told its model before generating, sent with every batch."""

    max_images: int = 0  # `Model.prepare`: the largest image count of the run (vLLM sizes its engine by it)
    largest_image: tuple[int, int] | None = None  # and the largest width and height among its images, where known
    fit_batch_size: int | None = None  # `--batch_size auto`: where the search for a batch that fits starts


@dataclass(frozen=True)
class Answered:
    """A batch's responses, and the replica's statistics once it has answered them: Ray restarts a dead replica as a
    new process, whose statistics start again, so the pool keeps each process's last (`Slot.before_restart`)."""

    responses: list[Response]
    statistics: dict[str, object]


class Replica:
    def __init__(
        self,
        rank: int,
        backend: str,
        args: dict[str, str],
        batch_size: int,
        max_batch_tokens: int | None,
        build: Build | None = None,
    ) -> None:
        self.rank = rank
        self.model = (build or build_backend)(backend, args, batch_size, max_batch_tokens)
        self._fitting = False

    def ready(self) -> dict[str, Any]:
        """Where this replica runs and what model it holds (the pool checks every replica holds the same one)."""
        import ray

        return {
            "rank": self.rank,
            "pid": os.getpid(),
            "node": ray.util.get_node_ip_address(),
            "gpus": [str(g) for g in ray.get_gpu_ids()],
            "identity": self.model.identity(),
        }

    def unreadable(self, files: BuildFiles) -> str | None:
        """Why this replica cannot read a build's files itself; None when it can."""
        return unreadable(files)

    def run(self, batch: list[Request], state: ReplicaState) -> Answered:
        """One batch's responses, in order: a backend error on one request fails that request only (as in a single
        process run); a `BackendFatalError` stops the run."""
        if state.max_images:
            self.model.prepare(state.max_images, state.largest_image)
        if state.fit_batch_size and not self._fitting:
            self.model.fit_batch_size(state.fit_batch_size)
            self._fitting = True
        try:
            responses = safe_generate(self.model, batch)
            return Answered(responses, self.model.statistics())
        finally:
            release_mapped_pages()  # hold the images of one batch, not of every batch this replica read

    def statistics(self) -> dict[str, Any]:
        return self.model.statistics()

    def close(self) -> None:
        self.model.close()
