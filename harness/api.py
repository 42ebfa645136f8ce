"""The contract between the runner and model backends.

A `Request` carries dataset coordinates and lazily loaded images, never decoded pixels: a backend
asks for `image.pil()` or `image.data()` only when the batch that holds the request runs.
A backend returns one `Response` per request, in order; a failure is a `Response` with `error`
set, never an exception that would lose the rest of the batch. An error text that starts with
`over_length:`, `too_many_images:` or `invalid_input:` is recorded with that status (final, not
retried on resume); any other is `error` (retried on resume). Only a failure that concerns every
request raises, as `BackendFatalError`.
"""

from __future__ import annotations

import abc
import io
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from PIL import Image

from harness.fit_context import FitContext
from harness.row_tokens import prompt_tokens as rows_prompt_tokens
from harness.sent import CacheAsked, RoundTripRecord, Sent

# A sample's status, as its journal record keeps it (`harness.running.journal.journal_file`).
Status = Literal["ok", "empty", "over_length", "too_many_images", "invalid_input", "refused", "error"]
OK: Status = "ok"
EMPTY: Status = "empty"  # an empty answer: scored as the official scorers do (a wrong answer), and counted
OVER_LENGTH: Status = "over_length"
TOO_MANY_IMAGES: Status = "too_many_images"
INVALID_INPUT: Status = "invalid_input"
REFUSED: Status = "refused"
ERROR: Status = "error"
SCORED = frozenset({OK, EMPTY})
# Errors (timeouts, provider failures, OOM) are tried again when the run is resumed; all else is final.
FINAL = frozenset({OK, EMPTY, OVER_LENGTH, TOO_MANY_IMAGES, INVALID_INPUT, REFUSED})
STATUSES: tuple[Status, ...] = get_args(Status)
# A backend's per-sample error that names one of these statuses is recorded with it (final, not retried).
ERROR_STATUS_PREFIXES: dict[str, Status] = {
    "over_length:": OVER_LENGTH,
    "too_many_images:": TOO_MANY_IMAGES,
    "invalid_input:": INVALID_INPUT,
}


def error_status(error: str) -> Status:
    """The status a backend's per-sample error is recorded with (see the module's docstring)."""
    return next((status for prefix, status in ERROR_STATUS_PREFIXES.items() if error.startswith(prefix)), ERROR)


@dataclass(frozen=True)
class ImageRef:
    """One encoded image of a row, loaded on demand.

    `sha256` is the content hash stored by the builder (column `image_sha256`), so cache keys
    and sample logs never need the pixels. `load` returns the encoded bytes (JPEG/PNG).
    """

    sha256: str
    load: Callable[[], bytes] = field(repr=False, compare=False)
    width: int | None = None
    height: int | None = None

    def data(self) -> bytes:
        return self.load()

    def pil(self) -> Image.Image:
        image = Image.open(io.BytesIO(self.load()))
        image.load()
        return image.convert("RGB") if image.mode != "RGB" else image


@dataclass(frozen=True)
class TextPart:
    text: str
    type: str = "text"


@dataclass(frozen=True)
class ImagePart:
    image: ImageRef
    type: str = "image"


ContentPart = TextPart | ImagePart


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: tuple[ContentPart, ...]


@dataclass(frozen=True)
class GenerationSettings:
    """Explicit decoding settings; defaults are greedy."""

    max_gen_toks: int = 256
    temperature: float = 0.0
    do_sample: bool = False
    top_p: float = 1.0
    until: tuple[str, ...] = ()
    seed: int | None = None

    @property
    def sampled(self) -> bool:
        """Whether these settings sample: `do_sample` with a temperature above 0; anything else decodes greedily."""
        return self.do_sample and self.temperature > 0

    def __post_init__(self) -> None:
        """Every setting checked when made, so a bad one stops the run before any sample, naming it."""

        def integer(value: object) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        def number(value: object) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

        checks = (
            ("max_gen_toks", integer(self.max_gen_toks) and self.max_gen_toks >= 1, "a positive integer"),
            ("temperature", number(self.temperature) and self.temperature >= 0, "a number >= 0"),
            ("do_sample", isinstance(self.do_sample, bool), "true or false"),
            ("top_p", number(self.top_p) and 0 < self.top_p <= 1, "a number in (0, 1]"),
            (
                "until",
                isinstance(self.until, tuple) and all(isinstance(u, str) for u in self.until),
                "a string or a list of strings",
            ),
            ("seed", self.seed is None or integer(self.seed), "an integer"),
        )
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(f"{name}={getattr(self, name)!r}: expected {expected}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GenerationSettings:
        values = dict(values)
        beams = values.pop("num_beams", 1)  # greedy as transformers and lmms-eval spell it; no run makes a beam search
        if type(beams) is not int or beams != 1:
            raise ValueError(
                f"num_beams={beams!r}: beam search is not run; decoding is greedy (num_beams=1, the default) or sampled (do_sample=true)"
            )
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown generation setting(s) {unknown}; known: {sorted([*known, 'num_beams'])}")
        if "until" in values:
            until = values["until"]
            values["until"] = (until,) if isinstance(until, str) else tuple(until or ())
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {f: (list(v) if isinstance(v, tuple) else v) for f, v in self.__dict__.items()}

    @property
    def max_response_chars(self) -> int:
        """Longest answer accepted as an answer: far above what max_gen_toks tokens can spell. A longer one is an
        error (tried again on resume), and is never cached."""
        return 64 * self.max_gen_toks + 1024


@dataclass(frozen=True)
class TextRoundTrip:
    """A task's rule for re-decoding a prompt's text with the model's tokenizer, bound to one row
    (`harness.inputs.round_trip`): `apply(prompt, decode_encode)` gives the prompt to send."""

    rule: str  # the task's hook as its YAML names it (keys caches and journals)
    apply: Callable[[str, Callable[[str], str]], str] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Request:
    """One sample to generate for. `messages` holds the whole chat, images in prompt order.

    `assistant_prefix` is text the assistant turn starts with (a prefill); the backend renders it
    after the generation prompt and returns only what the model adds. `random_answer`, when the task
    defines one, draws a guess for this sample from the given generator (for guessing baselines).
    """

    task: str
    doc_id: int  # position of the row in the task's evaluated split
    sample_id: str  # the row's stable `id`
    messages: tuple[Message, ...]
    settings: GenerationSettings
    text_tokens: int  # precomputed by the builder (prompt text without images)
    image_tokens: tuple[int, ...]  # precomputed per image, 14x14 patches with 2x2 merge
    assistant_prefix: str = ""
    random_answer: Callable[[random.Random], str] | None = field(default=None, repr=False, compare=False)
    # Processor settings for this request only (a model's input policy on some tasks, `harness.inputs.input_policy`).
    processor_kwargs: tuple[tuple[str, object], ...] = ()
    # What the task's truncation rule dropped to make the request fit (`harness.inputs.truncation`); None: untruncated.
    truncation: dict[str, Any] | None = field(default=None, compare=False)
    # The task's re-decoding of this request's prompt by the model's tokenizer (`harness.inputs.round_trip`); None: none.
    text_round_trip: TextRoundTrip | None = None
    # The messages a backend sends, where the runner re-decoded their text (`round_tripped`), and what that changed;
    # the request's own `messages` stay its identity (the cache's and the journal's key).
    sent_messages: tuple[Message, ...] | None = field(default=None, compare=False, repr=False)
    round_trip: RoundTripRecord | None = field(default=None, compare=False)
    fit_context: FitContext | None = None  # where its context stands, for a model that cuts it (`harness.fit_context`)

    @property
    def as_sent(self) -> tuple[Message, ...]:
        """The messages a backend sends for it: after the task's text round trip, where the runner applied one."""
        return self.sent_messages if self.sent_messages is not None else self.messages

    @property
    def images(self) -> list[ImageRef]:
        return [p.image for m in self.messages for p in m.content if isinstance(p, ImagePart)]

    @property
    def num_images(self) -> int:
        return len(self.image_tokens)

    @property
    def token_count(self) -> int:
        return self.text_tokens + sum(self.image_tokens)


@dataclass
class Response:
    """What a backend produced for one request. `text` is None when nothing usable came back; then `error` says why.
    `refused` marks a provider refusal (excluded from denominators and counted, as the papers do)."""

    text: str | None
    error: str | None = None
    refused: bool = False
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    sent: Sent | None = field(default=None, compare=False)  # the request as the backend sent it (`harness.sent`)
    prompt_cache: CacheAsked | None = field(default=None, compare=False)  # what its provider's cache was asked
    prompt_ids_sha256: str | None = field(default=None, compare=False)  # of its token ids (`harness.sent`), if known

    @property
    def ok(self) -> bool:
        return self.text is not None and self.error is None


class BackendFatalError(RuntimeError):
    """A failure that concerns every request, not one sample: a rejected API key, an unknown model
    or URL, a server unreachable after every retry, an engine or replica that cannot start or died.
    The runner saves what the failing batch finished, stops the run and the CLI exits with a
    one-line message; a rerun of the same command resumes.

    `responses`, when given, holds one entry per request of the failing `generate` call: a finished
    `Response` to keep, or None for a request that was not answered (it runs again on resume).
    """

    def __init__(self, message: str, responses: Sequence[Response | None] | None = None) -> None:
        super().__init__(message)
        self.responses = list(responses) if responses is not None else None


@dataclass(frozen=True)
class ModelFacts:
    """What the runner reads of a backend beside its methods, with defaults meaning "no limit" or "nothing to do".
    One frozen object, so a wrapper of a backend (the response cache, a Ray pool) forwards it whole (`FrontView`); a
    backend whose facts change (vLLM's context once its engine reports it, `--batch_size auto`'s) replaces it."""

    context_length: int | None = None  # max prompt + generation tokens, when known
    window: int | None = None  # the checkpoint's, where a run may pass it (`past_window`): such rows say so
    max_images: int | None = None  # per prompt, when the model has a cap
    max_pixels: int | None = None  # per image: larger images are scaled down to this area before counting
    batch_size: int = 1  # requests per `generate` call with the default `batches`
    chat_template: str | None = None  # the template prompts are rendered with, when the backend renders them
    # The order pending requests run in (`harness.models.shared.scheduling.prefix_order`): "length", long first; "cache",
    # requests sharing a prompt prefix together, for an engine with a prefix cache. It never changes an answer.
    request_order: str = "length"
    # Whether the runner gives it every task's pending requests as one sequence (`Runner.run_together`): for an
    # engine that schedules its own batches (vLLM), where one call per task leaves the GPU with each task's tail.
    generates_across_tasks: bool = False
    # Whether the CLI puts the response cache in front of this backend (baselines cost nothing).
    cache_responses: bool = True
    # Whether it decodes every image itself, in this process and in the batch that sends it, and answers
    # `invalid_input` for one that does not decode (hf): the check before the response cache then verifies the
    # bytes only (`harness.inputs.integrity.image_problem`), so each image is decoded once per request. A key for
    # bytes that do not decode can hold no answer of such a backend: it never answered them.
    decodes_images: bool = False


class Model(abc.ABC):
    """A backend. Subclasses register with `@register_model("name", ...)`.

    `from_args` receives the parsed `--model_args` (strings) plus runner settings; backends parse
    them with `harness.models.facts.args.settings_from_args` and raise `ValueError` naming the bad argument.

    What the runner reads from a backend is declared here, with defaults meaning "no limit" or
    "nothing to do": its `facts` (`ModelFacts`: limits, batching, how it is run; a backend sets `_facts`),
    and the methods below.
    """

    name: str = "model"  # the registered name (a wrapper of a backend takes the backend's)
    _facts: ModelFacts = ModelFacts()

    @property
    def facts(self) -> ModelFacts:
        return self._facts

    @classmethod
    @abc.abstractmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Model: ...

    @abc.abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Generate for one batch; return one Response per request, in the same order."""

    def stream(self, requests: Sequence[Request]) -> Iterator[list[tuple[int, Response]]]:
        """One batch's responses as they arrive, in chunks of (position, response): the runner journals each
        chunk at once, so a kill loses none that arrived. The default is one chunk, when `generate` returns;
        a backend whose answers arrive one by one (an API) yields each as it comes. A `BackendFatalError`
        is raised after yielding what did arrive."""
        try:
            responses = self.generate(requests)
        except BackendFatalError as err:
            if err.responses is not None:
                yield [(i, r) for i, r in enumerate(err.responses) if r is not None]
            raise BackendFatalError(str(err)) from err
        if len(responses) != len(requests):
            raise RuntimeError(
                f"{type(self).__name__}.generate returned {len(responses)} responses for {len(requests)} requests"
            )
        yield list(enumerate(responses))

    def text_round_trip(self) -> Callable[[str], str] | None:
        """The model tokenizer's encode (no special tokens) then decode of a text, for a task that re-decodes its
        prompt as its paper's code did (`harness.inputs.round_trip`); None: no tokenizer at hand."""
        return None

    def render(self, request: Request) -> Sent | None:
        """The request as this backend sends it (`harness.sent`): what its `generate` gives the model, rendered the
        same way, for a request it does not send (screened out, answered from the cache). None: it renders nothing
        of its own (the request's turns are what it reads)."""
        return None

    def fit_batch_size(self, start: int) -> str | None:
        """`--batch_size auto`: search for the largest batch that fits in device memory, from `start` requests down
        (`harness.models.shared.scheduling.auto_batch`). None when this backend searches; else one line on why the flag means nothing here."""
        return (
            f"{self.name} pads no batch in device memory (vLLM and API servers schedule their own batches, "
            "baselines compute nothing), so it batches as it always does"
        )

    def prepare(self, max_images: int, largest_image: tuple[int, int] | None = None) -> None:  # noqa: B027 - a no-op
        """Told once before the run (an optional hook): the largest image count of any request of its tasks, and the
        largest width and height among their images where known (an engine sized once for the run reads them)."""

    @property
    def token_rule(self) -> str:
        """How `prompt_tokens` counts, recorded with the results. Here (a backend without a model's own count, such as
        the baselines) the rows' figures, said as what they are, not by the rule's id: that names Qwen2-VL, whose
        image rule MMLongBench counts its context lengths by, and no Qwen model is involved."""
        cap = f", images scaled to max_pixels={self.facts.max_pixels} first" if self.facts.max_pixels else ""
        return (
            "the rows' own figures, no model's count: their text_tokens, and each image at one token per 28x28 "
            f"pixels (the builds' rule for a context's length){cap}"
        )

    def prompt_tokens(self, request: Request) -> int:
        """The prompt's tokens as the over-length screen counts them: the row's text tokens plus each
        image's tokens under the contract's rule, after scaling to `max_pixels`. A backend that knows its
        model's own count (its processor, its tokenizer) overrides this, and `token_rule` with it."""
        return rows_prompt_tokens(request, self.facts.max_pixels)

    def batches(self, requests: Sequence[Request]) -> Iterator[list[Request]]:
        """Split a task's pending requests into batches; the runner saves after each one."""
        size = max(1, self.facts.batch_size)
        for start in range(0, len(requests), size):
            yield list(requests[start : start + size])

    def statistics(self) -> dict[str, Any]:
        """Counters worth recording with the results (retries, refusals, engine start-up, ...)."""
        return {}

    def identity(self) -> dict[str, Any]:
        """What determines this model's outputs (checkpoint, revision, settings): used in cache
        keys and written to the results' `config`."""
        return {"model": self.name}

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release engines, servers or GPU memory."""


def collect(chunks: Iterator[list[tuple[int, Response]]], count: int) -> list[Response]:
    """`generate` in terms of `stream`: every response in request order; a `BackendFatalError` carries those
    that arrived (None for the rest)."""
    responses: list[Response | None] = [None] * count
    try:
        for chunk in chunks:
            for i, response in chunk:
                responses[i] = response
    except BackendFatalError as err:
        raise BackendFatalError(
            str(err), responses if any(r is not None for r in responses) else err.responses
        ) from err
    missing = [i for i, r in enumerate(responses) if r is None]
    if missing:
        raise RuntimeError(f"the backend's stream gave no response for {len(missing)} of {count} requests")
    return [r for r in responses if r is not None]  # every one, as checked above
