"""Task-declared truncation: what a benchmark does with a request that does not fit the model.

By default a request with more tokens than the model's context, or more images than it takes, is recorded
as `over_length` / `too_many_images` and never sent. A benchmark whose paper cuts such inputs instead (MileBench:
keep the instruction and the question, drop context text and images from the left) names its rule in its task
YAML, `truncation: !function module.fn`. The runner then calls, for each request that fails the screen,

    fn(doc, budget) -> Truncated | None

with `budget` saying what the prompt may take, in the rows' units (`Budget`: its tokens, the model's cost of each
of the row's images, its image cap). The model counts the request as it is, without its images and without
anything: that gives each image's cost, its chat template's tokens (reserved up front) and how its tokenizer
compares with the rows' text counter (`model_count`). The hook returns the prompt to send
instead (`<image>` per image kept), which of the row's images it keeps, its text tokens by the rows' counter and
what it dropped (recorded per sample), or None when nothing fits. The runner rebuilds the request, counts it the model's own way and, if
the model's count (chat template, processor-expanded images) still exceeds the context, lowers the budget by
the excess and asks again. A truncated request is screened, cached, journalled and sent like any other; its
record says what was dropped (`truncation`), and `--screen_only` shows the same decisions.

A task with `truncation` renders its prompt with `doc_to_text` (one user turn, after an optional system
prompt). A model input policy that already dropped images (`keep_last_images`) is applied first; truncation
then does not apply to that request (the hook's row figures would no longer match it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.api import OVER_LENGTH, Message, Model, Request, TextPart
from harness.inputs.prompts import messages_from_prompt
from harness.row_tokens import image_costs

ATTEMPTS = 8  # budget corrections before a request is left as it was (each one drops at least a token more)

Screen = Callable[[Request, Model, bool], "tuple[str, str] | None"]


@dataclass(frozen=True)
class Budget:
    tokens: int | None  # what the prompt's text and images may take, in the rows' text units; None: no limit
    image_tokens: tuple[int, ...]  # the model's cost of each of the row's images, in the same units
    max_images: int | None  # the most images the model takes; None: no cap


@dataclass(frozen=True)
class Truncated:
    prompt: str  # the prompt to send, `<image>` per kept image
    images: tuple[int, ...]  # the row's images kept (indices into the request's images), in prompt order
    text_tokens: int  # the prompt's text tokens by the rows' counter
    record: Mapping[str, object] = field(default_factory=dict)  # what was dropped, for the sample's record


def _system_text(messages: tuple[Message, ...]) -> str | None:
    if messages and messages[0].role == "system":
        return "".join(p.text for p in messages[0].content if isinstance(p, TextPart))
    return None


def _rebuilt(request: Request, cut: Truncated, record: dict[str, Any]) -> Request:
    refs = request.images
    kept = [refs[i] for i in cut.images]
    messages = messages_from_prompt(cut.prompt, kept, _system_text(request.messages))
    return replace(
        request,
        messages=messages,
        text_tokens=cut.text_tokens,
        image_tokens=tuple(request.image_tokens[i] for i in cut.images),
        truncation=record,
        sent_messages=None,  # the cut prompt's own, once the runner round-trips it (`fit_to_model`'s `prepare`)
        round_trip=None,
    )


@dataclass(frozen=True)
class ModelCount:
    """How the model counts a request, in the rows' units: its chat template's own tokens (`fixed`), how many of
    its tokens one of the rows' text tokens is (`scale`), and each image's tokens."""

    fixed: int
    scale: float
    image_tokens: tuple[int, ...]

    def budget(self, tokens: int) -> int:
        """`tokens` of the model as the rows count them."""
        return math.floor((tokens - self.fixed) / self.scale)


def model_count(request: Request, model: Model) -> ModelCount:
    """The model counts the request as it is, without its images, and with neither images nor text: the
    differences give what an image costs (shared among the images in proportion to their row figures, under the
    model's pixel cap), what its template adds, and how its tokenizer compares with the rows' text counter. So a
    processor that expands every image to 576 tokens charges 576 per image."""

    def without(keep_text: bool) -> Request:
        messages = tuple(
            Message(m.role, tuple(p for p in m.content if isinstance(p, TextPart) and keep_text))
            for m in request.messages
        )
        return replace(
            request,
            messages=messages,
            image_tokens=(),
            text_round_trip=None,  # not a prompt of the row
            sent_messages=None,
            round_trip=None,
            text_tokens=request.text_tokens if keep_text else 0,
        )

    whole, text, fixed = (
        model.prompt_tokens(request),
        model.prompt_tokens(without(True)),
        model.prompt_tokens(without(False)),
    )
    scale = (text - fixed) / request.text_tokens if request.text_tokens and text > fixed else 1.0
    figures = image_costs(request, model.facts.max_pixels)
    spent, total = max(0, whole - text), sum(figures)
    costs = tuple(
        math.ceil(spent * f / total / scale) if total else math.ceil(spent / len(figures) / scale) for f in figures
    )
    return ModelCount(fixed, scale, costs)


def fit_to_model(
    request: Request,
    doc: Mapping[str, object],
    hook: Callable[..., Truncated | None],
    rule: str,
    model: Model,
    check_tokens: bool,
    screen: Screen,
    prepare: Callable[[Request], Request] = lambda request: request,
) -> Request:
    """The request as the task's truncation rule makes it fit `model`; unchanged when it fits already, when the
    rule cannot make it fit, or when an input policy changed its images. `prepare`: what the runner does to each
    request before it is counted (its text round trip), done to each cut it tries."""
    if screen(request, model, check_tokens) is None:
        return request
    row_images = doc.get("num_images")
    if isinstance(row_images, int) and row_images != len(request.images):
        return request
    count = model_count(request, model)
    gen = request.settings.max_gen_toks
    before = model.prompt_tokens(request)
    tokens = None
    if check_tokens and model.facts.context_length is not None:
        tokens = count.budget(model.facts.context_length - gen)
    for _ in range(ATTEMPTS):
        cut = hook(doc, Budget(tokens, count.image_tokens, model.facts.max_images))
        if cut is None:
            return request
        record = {
            "rule": rule,
            **cut.record,
            "images_kept": len(cut.images),
            "images_dropped": len(request.images) - len(cut.images),
            "prompt_tokens_before": before,
        }
        candidate = prepare(_rebuilt(request, cut, record))
        problem = screen(candidate, model, check_tokens)
        after = model.prompt_tokens(candidate)
        if problem is None:
            record["prompt_tokens_after"] = after
            return candidate
        if problem[0] != OVER_LENGTH or tokens is None or model.facts.context_length is None:
            return request
        tokens -= max(1, math.ceil((after + gen - model.facts.context_length) / count.scale))
    return request
