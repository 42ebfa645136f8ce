"""`FrontView`: a `Model` whose attributes the runner reads are those of another model, its `front`: a Ray pool's
backend without weights (the runner screens, counts and orders requests with it as with the backend itself), or the
backend a response cache wraps."""

from __future__ import annotations

from collections.abc import Callable

from harness.api import Model, Request


class FrontView(Model):
    front: Model

    # The front's, read through: read-only properties over `Model`'s attributes, which mypy calls an incompatible
    # override (`# type: ignore[override]` on each).
    @property
    def context_length(self) -> int | None:  # type: ignore[override]
        return self.front.context_length

    @property
    def max_images(self) -> int | None:  # type: ignore[override]
        return self.front.max_images

    @property
    def max_pixels(self) -> int | None:  # type: ignore[override]
        return self.front.max_pixels

    @property
    def batch_size(self) -> int:  # type: ignore[override]
        return self.front.batch_size

    @property
    def chat_template(self) -> str | None:  # type: ignore[override]
        return self.front.chat_template

    @property
    def request_order(self) -> str:  # type: ignore[override]
        return self.front.request_order

    @property
    def generates_across_tasks(self) -> bool:  # type: ignore[override]
        return self.front.generates_across_tasks

    @property
    def cache_responses(self) -> bool:  # type: ignore[override]
        return self.front.cache_responses

    @property
    def decodes_images(self) -> bool:  # type: ignore[override]
        return self.front.decodes_images

    @property
    def token_rule(self) -> str:
        return self.front.token_rule

    def prompt_tokens(self, request: Request) -> int:
        return self.front.prompt_tokens(request)

    def text_round_trip(self) -> Callable[[str], str] | None:
        return self.front.text_round_trip()
