"""`ScreenModel`: what stands in for the run's backend during `--screen_only` (`harness.running.screen_only`): its
limits and its way of counting a prompt, with nothing loaded that counting does not need.

Each backend makes its own (`BackendSpec.screen`, in its package): `hf` and `vllm` count with the checkpoint's
processor where it loads offline, `openai` by the API model's family rule (`by_family`); a backend without one (the
baselines) stands in itself: it loads nothing to count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, Unpack

from harness.api import Model, ModelFacts, Request, Response, Status
from harness.models.facts.family import ImageTokens, estimated_prompt_tokens
from harness.sent import Sent

if TYPE_CHECKING:
    from harness.models.shared.api_client.prompt_cache import CacheRule


@dataclass(frozen=True)
class OutputCap:
    """The most output tokens an answer can be billed for (thinking included), as the cost estimate prices it
    (`harness.running.cost_estimate`): by default the request's `max_gen_toks`, which the backend sends as the cap."""

    tokens: int | None = None  # a cap of its own, whatever max_gen_toks says
    bounded: bool = True  # False: no cap is sent and none is known, so an answer's output has no bound
    note: str = ""  # why, where it is not the request's max_gen_toks
    extra: int = 0  # sent on top of max_gen_toks (a thinking budget the backend adds to the answer's cap)

    def of(self, max_gen_toks: int) -> int | None:
        """An answer's most output tokens, given its request's `max_gen_toks`; None where nothing bounds it."""
        if not self.bounded:
            return None
        return self.tokens if self.tokens is not None else max_gen_toks + self.extra


class StandIn(TypedDict, total=False):
    """What a stand-in says of the run's backend besides its count: its limits (`context_note`: where the context
    limit comes from, or why it is not known), how it would render a request, where the stand-in can say, what bounds
    an answer's billed output, how it asks its provider to cache prompts, where it does, and its request order."""

    context_length: int | None
    context_note: str
    max_images: int | None
    max_pixels: int | None
    render: Callable[[Request], Sent | None] | None
    output_cap: OutputCap | None
    prompt_cache: CacheRule | None
    request_order: str  # "length" where not given


class ScreenModel(Model):
    """Stands in for the run's backend during a screen-only pass: its limits and its way of counting a prompt."""

    name = "screen-only"

    def __init__(
        self,
        backend: str,
        checkpoint: str | None,
        *,
        count: Callable[[Request], int],
        rule: str,
        exact: Callable[[Request], bool] = lambda request: False,
        estimate: str = "",
        refusal: Callable[[Request], tuple[Status, str] | None] | None = None,
        chat_template: str | None = None,
        **stand_in: Unpack[StandIn],
    ) -> None:
        self.backend = backend
        # What the backend refuses beyond the limits every backend has (vLLM: an image its encoder cannot hold), as
        # the run would record it: (status, why), or None.
        self.refusal = refusal or (lambda request: None)
        self.output_cap = stand_in.get("output_cap") or OutputCap()
        self.prompt_cache = stand_in.get("prompt_cache")
        self._render = stand_in.get("render")
        self.checkpoint = checkpoint
        self._count = count
        self._exact = exact
        self.rule = rule
        self.estimate = estimate  # why a count is an estimate, when it is
        self.context_note = stand_in.get("context_note", "")
        request_order = stand_in.get("request_order", "length")
        self._facts = ModelFacts(
            context_length=stand_in.get("context_length"),
            max_images=stand_in.get("max_images"),
            max_pixels=stand_in.get("max_pixels"),
            cache_responses=False,
            request_order=request_order,
            generates_across_tasks=request_order == "cache",
            chat_template=chat_template,  # the template the run's backend would render with, where it is known
        )

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model:
        raise TypeError("a screen-only stand-in is made by `screen_model(backend, args)`")

    @property
    def token_rule(self) -> str:
        return self.rule

    def prompt_tokens(self, request: Request) -> int:
        return self._count(request)

    def count_text_by(self, text_count: Callable[[Request], int], how: str) -> None:
        """Count each prompt's text by `text_count` (a provider's own tokenizer) in place of the rows' text_tokens,
        its images as before; `how` names the counter in the rule the screen shows."""
        counted = self._count
        self._count = lambda request: counted(request) - request.text_tokens + text_count(request)
        self.rule = f"text by {how} (not the rows' text_tokens); {self.rule}"

    def count_by(
        self, count: Callable[[Request], int], exact: Callable[[Request], bool], rule: str, estimate: str
    ) -> None:
        """Count each prompt by `count` in place of the rule it was made with (a served checkpoint's own processor),
        `exact` saying where that is the model's own count and `estimate` why it is not elsewhere."""
        self._count, self._exact, self.rule, self.estimate = count, exact, rule, estimate

    def exact(self, request: Request) -> bool:
        """Whether `prompt_tokens` is the model's own count of this request (else an estimate)."""
        return self._exact(request)

    def render(self, request: Request) -> Sent | None:
        return self._render(request) if self._render is not None else None

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        raise RuntimeError("a screen-only pass generates nothing")


def by_family(
    backend: str,
    name: str | None,
    family: ImageTokens | None,
    why: str,
    *,
    settings: Mapping[str, object] | None = None,
    known: str = "",
    **stand_in: Unpack[StandIn],
) -> ScreenModel:
    """A stand-in that counts by the family's rule (an estimate), or by the rows' rule, said so, without one;
    `known`: how the family was found, or why none was (`harness.models.families.checkpoint_family`)."""
    max_pixels = stand_in.get("max_pixels")
    return ScreenModel(
        backend,
        name,
        count=lambda r: estimated_prompt_tokens(r, family, max_pixels, settings),
        rule=family_rule(family, name, known),
        estimate=why,
        **stand_in,
    )


def family_rule(family: ImageTokens | None, name: str | None, known: str = "") -> str:
    """How an estimate counts each image, in words: by the family's rule (known as `known` says), or by the rows'
    own rule where no family is known (`known`: why)."""
    from builders.core.contract import TOKEN_RULE

    if family is not None:
        found = f" (the family known by {known})" if known else ""
        return f"the rows' text_tokens + each image by the {family.name} family's rule: {family.rule}{found}"
    why = f": {known}" if known else ""
    return (
        f"the rows' text_tokens + each image by the rows' own rule ({TOKEN_RULE}): no family rule is known for "
        f"{name or 'an unnamed model'}{why}"
    )
