"""Baselines that never look at the images: `constant` (one fixed answer) and `random` (a uniform
guess over the task's answer space). They give floors to compare with and exercise the whole
harness at no model cost."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from harness.api import Model, Request, Response
from harness.models.args import reject_unknown, take
from harness.models.registry import register_model


@register_model("constant")
class ConstantModel(Model):
    """Answers every request with `answer` (e.g. `--model_args answer=-1`)."""

    cache_responses = False  # answering costs nothing: a response cache would only add work

    def __init__(self, answer: str, batch_size: int = 1) -> None:
        self.answer = answer
        self.batch_size = batch_size

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        args = dict(args)
        if "answer" not in args:
            raise ValueError('constant needs the answer to give: --model_args answer=-1 (quote commas: answer="1, 2, 3")')
        answer = take(args, "answer", str, model="constant")
        reject_unknown(args, "constant", ["answer"])
        return cls(answer, batch_size)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(self.answer, finish_reason="stop") for _ in requests]

    def identity(self) -> dict[str, Any]:
        return {"model": "constant", "answer": self.answer}


@register_model("random")
class RandomModel(Model):
    """Guesses uniformly from each request's `answer_space`, `answer_slots` times (joined by the
    request's separator). Seeded per sample from (seed, task, sample id), so a rerun, a resumed
    run or a different batch order gives the same guesses. A task without an answer space gives
    a per-sample error."""

    cache_responses = False

    def __init__(self, seed: int | None = None, batch_size: int = 1) -> None:
        self.seed = seed
        self.batch_size = batch_size

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        args = dict(args)
        seed = take(args, "seed", int, model="random")
        reject_unknown(args, "random", ["seed"])
        return cls(seed, batch_size)

    def _rng(self, request: Request) -> random.Random:
        seed = self.seed if self.seed is not None else (request.settings.seed or 0)
        key = f"{seed}\x00{request.task}\x00{request.sample_id}".encode()
        return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        responses = []
        for request in requests:
            if not request.answer_space:
                responses.append(Response(None, error=f"task {request.task!r} defines no answer space to guess from"))
                continue
            rng = self._rng(request)
            guess = request.answer_separator.join(rng.choice(request.answer_space) for _ in range(request.answer_slots))
            responses.append(Response(guess, finish_reason="stop"))
        return responses

    def identity(self) -> dict[str, Any]:
        return {"model": "random", "seed": self.seed}
