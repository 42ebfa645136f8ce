"""`random`: the task's own guess for each sample (its `random_answer` hook), a floor that loads nothing."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.api import Model, ModelFacts, Request, Response
from harness.models.backend_spec import BackendSpec
from harness.models.facts.args import settings_from_args
from harness.models.registry import register_model
from harness.models.shared.scheduling.prefix_order import check_order

BACKEND = BackendSpec(module=__name__, plain=True, reads_random_answer=True)


@dataclass(frozen=True)
class RandomSettings:
    seed: int | None = None
    # A hard limit to screen against, as a real model's (e.g. 131072: what a 128K model records past 128K).
    context_length: int | None = None
    request_order: str = "length"  # answers never depend on it; "cache" exercises that order

    def __post_init__(self) -> None:
        check_order(self.request_order, "random")


@register_model("random")
class RandomModel(Model):
    """Answers each request with its task's `random_answer` hook, drawing from a generator seeded per
    sample from (seed, task, sample id), so a rerun, a resumed run or a different batch order gives the
    same guesses. A task without the hook gives a per-sample error."""

    def __init__(
        self,
        seed: int | None = None,
        batch_size: int = 1,
        context_length: int | None = None,
        request_order: str = "length",
    ) -> None:
        self.seed = seed
        self._facts = ModelFacts(
            context_length=context_length,
            batch_size=batch_size,
            request_order=check_order(request_order, "random"),
            cache_responses=False,
        )

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        settings = settings_from_args(RandomSettings, args, "random")
        return cls(settings.seed, batch_size, settings.context_length, settings.request_order)

    def _rng(self, request: Request) -> random.Random:
        seed = self.seed if self.seed is not None else (request.settings.seed or 0)
        key = f"{seed}\x00{request.task}\x00{request.sample_id}".encode()
        return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        responses = []
        for request in requests:
            if request.random_answer is None:
                responses.append(
                    Response(
                        None,
                        error=f"task {request.task!r} defines no answer space to guess from (no `random_answer` hook)",
                    )
                )
                continue
            responses.append(Response(request.random_answer(self._rng(request)), finish_reason="stop"))
        return responses

    def identity(self) -> dict[str, Any]:
        context = self.facts.context_length
        limit = {"context_length": context} if context is not None else {}
        return {"model": "random", "seed": self.seed, **limit}
