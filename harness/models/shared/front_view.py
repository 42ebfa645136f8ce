"""`FrontView`: a `Model` whose facts the runner reads are those of another model, its `front`: a Ray pool's
backend without weights (the runner screens, counts and orders requests with it as with the backend itself), or the
backend a response cache wraps."""

from __future__ import annotations

from collections.abc import Callable

from harness.api import Model, ModelFacts, Request
from harness.sent import Sent


class FrontView(Model):
    front: Model

    @property
    def facts(self) -> ModelFacts:
        """The front's, read through each time: a backend replaces its facts as it learns them (vLLM's context)."""
        return self.front.facts

    @property
    def token_rule(self) -> str:
        return self.front.token_rule

    def prompt_tokens(self, request: Request) -> int:
        return self.front.prompt_tokens(request)

    def text_round_trip(self) -> Callable[[str], str] | None:
        return self.front.text_round_trip()

    def render(self, request: Request) -> Sent | None:
        return self.front.render(request)
