"""The harness's side of `builders.core.image_questions`: any backend or alias asked one question about one image
per request, for a build step (LoCoVQA's entity lister). Registered as the entry point `mmlongeval.image_askers`
(`harness`), so that the builders reach the models without importing the harness."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.api import GenerationSettings, ImagePart, ImageRef, Message, Request, Response, TextPart, collect
from harness.errors import UserError
from harness.models.facts.args import parse_kv
from harness.models.shared.generation import safe_generate
from harness.redact import redact_mapping
from harness.run.models import make_model
from harness.run.plan import resolve_model


class BackendImageAsker:
    def __init__(self, model: str, model_args: str = "", batch_size: int = 8) -> None:
        try:
            choice = resolve_model(model, parse_kv(model_args))
            self.model = make_model(model, choice.backend, choice.args, batch_size, None)
        except UserError as err:
            raise ValueError(str(err)) from None

    def identity(self) -> dict[str, Any]:
        return redact_mapping(self.model.identity())

    def ask(self, questions: Sequence[Any], query: str, max_new_tokens: int, task: str) -> list[Response]:
        """`questions`: `builders.core.image_questions.ImageQuestion`s (key, sha256, data, width, height)."""
        requests: list[Request] = []
        for question in questions:
            ref = ImageRef(question.sha256, _loader(question.data), question.width, question.height)
            messages = (Message("user", (ImagePart(ref), TextPart(query))),)
            requests.append(
                Request(
                    task,
                    len(requests),
                    question.key,
                    messages,
                    GenerationSettings(max_gen_toks=max_new_tokens),
                    0,
                    (0,),
                )
            )
        responses: list[Response] = []
        for batch in self.model.batches(requests):
            try:
                responses += collect(self.model.stream(batch), len(batch))
            except Exception:  # one bad request must not fail the rest: ask them one by one
                responses += safe_generate(self.model, batch)
        return responses

    def close(self) -> None:
        self.model.close()


def _loader(data: bytes) -> Callable[[], bytes]:
    return lambda: data
