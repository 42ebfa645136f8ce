"""`constant`: one fixed answer to every request (`--model_args answer=-1`), a floor that loads nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.api import Model, ModelFacts, Request, Response
from harness.models.backend_spec import BackendSpec
from harness.models.facts.args import settings_from_args
from harness.models.registry import register_model

BACKEND = BackendSpec(module=__name__, plain=True)


@dataclass(frozen=True)
class ConstantSettings:
    answer: str


@register_model("constant")
class ConstantModel(Model):
    """Answers every request with `answer` (e.g. `--model_args answer=-1`)."""

    def __init__(self, answer: str, batch_size: int = 1) -> None:
        self.answer = answer
        # Answering costs nothing: a response cache would only add work.
        self._facts = ModelFacts(batch_size=batch_size, cache_responses=False)

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        if "answer" not in args:
            raise ValueError(
                'constant needs the answer to give: --model_args answer=-1 (quote commas: answer="1, 2, 3")'
            )
        return cls(settings_from_args(ConstantSettings, args, "constant").answer, batch_size)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(self.answer, finish_reason="stop") for _ in requests]

    def identity(self) -> dict[str, Any]:
        return {"model": "constant", "answer": self.answer}
