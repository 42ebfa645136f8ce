"""What every API backend does alike around one request, given its settings (`settings.ApiCallSettings`): the
attempts with exponential backoff and jitter that honour `Retry-After` up to `max_backoff`, what an HTTP status or a
transport failure means, and the thread pool that sends a batch's requests `concurrency` at a time (one that reads a
prefix another of its batch writes to the provider's cache once that one has answered: `prompt_cache`) and hands
each answer to the runner as it arrives (what one attempt ends in: `outcomes`)."""

from __future__ import annotations

import importlib.util
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import ClassVar, Self, TypeVar

from harness.api import BackendFatalError, Model, Request, Response, collect
from harness.models.shared.api_client.batching import BatchInterface, request_identity
from harness.models.shared.api_client.endpoint import api_key, server_label, server_url
from harness.models.shared.api_client.outcomes import Closing, Outcome, Retry, Stop, sdk_outcome
from harness.models.shared.api_client.prompt_cache import CachePlan, CacheRule, PrefixPlanner, in_turn, prompt_shape
from harness.models.shared.api_client.replies import error_message, retry_after_seconds
from harness.models.shared.api_client.settings import ApiCallSettings

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})
FATAL_STATUSES = frozenset({401, 403, 404})
# Error codes (OpenAI, Azure; Gemini's status) that mean the provider refused this prompt.
REFUSAL_CODES = frozenset({"content_filter", "ResponsibleAIPolicyViolation", "content_policy_violation"})


class ApiModel(Model):
    """The shared part of an API backend: a subclass sets `settings` and `where` (its server's URL, for messages),
    and implements `_send` (one request, through `with_retries`)."""

    label: ClassVar[str] = "api"
    settings_type: ClassVar[type[ApiCallSettings]]  # the backend's `--model_args`
    client_package: ClassVar[tuple[str, str]]  # the module its client needs, and that package's name for the error
    # The environment variables the provider's SDK reads for its address and its key, and its own address.
    environment: ClassVar[tuple[tuple[str, ...], tuple[str, ...]]] = ((), ())
    default_url: ClassVar[str] = ""
    settings: ApiCallSettings
    where: str
    _client: object | None  # the backend's client (an SDK's, or the HTTP client itself), opened when first needed

    def __init__(self, settings: ApiCallSettings, *, batch_size: int = 1) -> None:
        """What every API backend's constructor does first: its client's package is there, and its server and key
        are found (`server`)."""
        module, package = self.client_package
        if importlib.util.find_spec(module) is None:
            raise ImportError(f"the {self.label} backend needs {package}: pip install -e '.[{self.label}]'")
        self.settings = settings
        self._facts = settings.facts(batch_size)
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._fatal: str | None = None
        self._reached = False  # whether any request of this run got an HTTP answer
        self._pool: ThreadPoolExecutor | None = None
        self._planner: PrefixPlanner | None = None
        self._plans: dict[int, CachePlan] = {}  # by id: the plans of the batch being sent (`cache_plan`)
        self._http: Closing | None = None  # the HTTP client the backend's client sends through, once opened
        self.base_url, self._api_key = self.server()
        self.where = self.base_url

    def server(self) -> tuple[str, str | None]:
        """The server's base URL and the key sent to it: the `--model_args`', else the `environment`'s, else the
        provider's own address (`api_client.endpoint`: only a loopback server goes without a key)."""
        base_url = server_url(self.settings, self.environment[0], self.default_url)
        return base_url, api_key(self.settings, self.environment[1], base_url)

    def served(self, model: str) -> dict[str, object]:
        """An identity's opening: the backend, its server (never its credentials: two servers answer differently)
        and the model it answers with."""
        return {"model": self.label, "server": server_label(self.base_url), "served_model": model}

    @classmethod
    def from_args(cls, args: dict[str, str], *, batch_size: int = 1, max_batch_tokens: int | None = None) -> Self:
        return cls(cls.settings_type.from_args(args), batch_size=batch_size)

    @property
    def token_rule(self) -> str:
        return super().token_rule + " (an estimate: the server counts with its own processor)"

    def cache_rule(self) -> CacheRule | None:
        return self.settings.cache_rule(self.facts.batch_size)

    def cache_plan(self, request: Request) -> CachePlan:
        """`request`'s part in its provider's cache (the marks `payload` sends), planned with its batch (`stream`)."""
        return self._plans.get(id(request)) or CachePlan()

    def _plan(self, requests: Sequence[Request], rule: CacheRule | None) -> list[CachePlan]:
        if rule is None:
            return [CachePlan()] * len(requests)
        if self._planner is None:
            self._planner = PrefixPlanner(rule.min_tokens)
        plans = self._planner.plan([prompt_shape(r) for r in requests])
        self._plans = {id(r): plan for r, plan in zip(requests, plans, strict=True) if plan.marks}
        self._count("prompt_cache_requests", len(self._plans))
        return plans

    def statistics(self) -> dict[str, object]:
        return dict(self.stats)

    def _count(self, key: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[key] += n

    def response_cap(self, request: Request) -> int:
        """The most bytes the answer to `request` may hold (`max_response_bytes`)."""
        return self.settings.max_response_bytes or 8 * request.settings.max_response_chars + 65536

    def status_outcome(self, status: int, message: str, code: str | None, headers: Mapping[str, str]) -> Outcome:
        """What a non-200 answer means."""
        self._reached = True
        if status in RETRY_STATUSES:
            return Retry(f"HTTP {status}: {message}", retry_after_seconds(headers))
        if status in FATAL_STATUSES:
            return Stop(f"HTTP {status} from {self.where}: {message}", f"provider_error: HTTP {status}: {message}")
        refused = code in REFUSAL_CODES
        if refused:
            self._count("refusals")
        prefix = "refused" if refused else "provider_error"
        return Response(text=None, error=f"{prefix}: HTTP {status}: {message}", refused=refused)

    def with_retries(self, once: Callable[[], T | Retry | Stop]) -> T | Response:
        """`once` attempted until it gives something other than a `Retry` (an answer, this sample's error, a file
        uploaded) or a `Stop`, or `max_retries` retries are spent."""
        last = "no attempt made"
        unreachable = False
        for attempt in range(self.settings.max_retries + 1):
            if attempt:
                self._count("retries")
            self._count("attempts")
            outcome = once()
            if isinstance(outcome, Stop):
                self._fatal = outcome.fatal
                return Response(text=None, error=outcome.error)
            if not isinstance(outcome, Retry):  # the server answered (a refusal is counted where it is read)
                self._reached = True
                return outcome
            last, unreachable = outcome.reason, outcome.unreachable
            if unreachable and not self._reached:
                # Nothing of this run ever reached the server: a wrong address or a server that is down, not a
                # blip; say so now instead of after every retry's backoff.
                self._fatal = f"cannot connect to {self.where} ({last}); is the server running?"
                return Response(text=None, error=f"provider_error: {last}")
            if attempt == self.settings.max_retries:
                break
            wait, most = outcome.wait, self.settings.max_backoff
            # exponential backoff with jitter, unless the server said how long to wait
            delay = (
                min(most, self.settings.backoff * 2**attempt) * random.uniform(0.5, 1.0)
                if wait is None
                else min(wait, most)
            )
            asked = f" (the server asked for {wait:g}s; max_backoff bounds it)" if wait and wait > delay else ""
            log.warning(
                "%s: %s; retry %d/%d in %.1fs%s", self.label, last, attempt + 1, self.settings.max_retries, delay, asked
            )
            time.sleep(delay)
        self._count("failures")
        if unreachable:  # still no connection after every retry: the server is down, not this sample
            self._fatal = f"cannot connect to {self.where} ({last})"
        return Response(
            text=None, error=f"provider_error: gave up after {self.settings.max_retries + 1} attempts: {last}"
        )

    @staticmethod
    def status_of(err: BaseException) -> tuple[int, object, Mapping[str, str]] | None:
        """What the backend's SDK's HTTP error says: (status code, body, headers); None for an error that is not
        one."""
        return None

    def sdk_attempt(self, call: Callable[[], T], cap: int) -> T | Outcome:
        """One HTTP exchange through a provider's SDK, bounded in time and bytes (`deadline`, `capped`); its failure as
        a `Retry`, a `Stop` or this sample's error (`status_of` reads an SDK's HTTP error)."""
        from harness.models.shared.api_client.deadline import capped, deadline

        try:
            with deadline(self.settings.timeout), capped(cap):
                return call()
        except Exception as err:
            found = self.status_of(err)
            if found is not None:
                code, body, headers = found
                message, kind = error_message(body)
                return self.status_outcome(code, message, kind, headers)
            outcome = sdk_outcome(err, self.settings.timeout)
            if outcome is None:
                raise
            return outcome

    def built(self, request: Request, build: Callable[[Request], T]) -> T | Response:
        """What `build` makes of the request to send it (its payload), or the answer that ends it unsent: the run has
        stopped, it holds more images than `max_images`, an image the disk could not read, an input refused."""
        if self._fatal:
            return Response(text=None, error=f"not_sent: {self._fatal}")
        cap = self.facts.max_images
        if cap is not None and request.num_images > cap:
            return Response(text=None, error=f"too_many_images: {request.num_images} > max_images={cap}")
        return self.payload_or_error(request, build)

    @staticmethod
    def payload_or_error(request: Request, build: Callable[[Request], T]) -> T | Response:
        """What `build` makes of the request, or this sample's error: an image the disk could not read, an input
        refused."""
        try:
            return build(request)
        except OSError as err:  # the disk failed to read an image: not the bytes' fault, so tried again on resume
            return Response(text=None, error=f"error: an image could not be read ({err.strerror or err})")
        except (ValueError, TypeError) as err:
            return Response(text=None, error=f"invalid_input: {err}")

    def counted(self, response: Response) -> Response:
        """A generation's answer, its refusal counted."""
        if response.refused:
            self._count("refusals")
        return response

    def sdk_generation(self, call: Callable[[], T], cap: int, parse: Callable[[T], Response]) -> Response:
        """A generation through a provider's SDK, attempt after attempt (`sdk_attempt`, `with_retries`), its answer
        read by `parse`."""

        def once() -> Outcome:
            answer = self.sdk_attempt(call, cap)
            return answer if isinstance(answer, Response | Retry | Stop) else self.counted(parse(answer))

        return self.with_retries(once)

    def retried(self, what: str, once: Callable[[], T | Outcome]) -> T:
        """A call besides a generation (an upload, the batch interface's) with a generation's attempts
        (`with_retries`); its result, or a `BackendFatalError` saying `what` failed."""
        result: T | Response = self.with_retries(once)
        if isinstance(result, Response):
            raise BackendFatalError(f"{what}: {result.error}")
        return result

    def sdk_call(self, what: str, call: Callable[[], T], cap: int) -> T:
        """`retried` through the provider's SDK (`sdk_attempt`)."""
        return self.retried(f"{self.label}: {what}", lambda: self.sdk_attempt(call, cap))

    def _send(self, request: Request) -> Response:
        raise NotImplementedError

    def _as_sent(self, request: Request, response: Response, how: str | None = None) -> Response:
        """`response` with the request as this backend sent it (`render`: the journal's and the viewer's prompt), and
        what its provider's cache was asked (`how`, where the backend asks it)."""
        if how is not None and (response.text is not None or response.usage):
            response = replace(response, prompt_cache=self.cache_plan(request).asked(how))
        try:
            sent = self.render(request)
        except Exception as err:  # never loses the answer: the runner records the request's turns instead
            log.warning("%s: the request as sent could not be rendered: %s: %s", self.label, type(err).__name__, err)
            return response
        return replace(response, sent=sent)

    def _open(self) -> object:
        """Make the backend's client (called before the first batch is sent)."""

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return collect(self.stream(requests), len(requests))

    def batch_interface(self) -> BatchInterface:
        """The provider's batch calls (`--batch`)."""
        raise ValueError(f"the {self.label} backend has no batch interface")

    def check_request(self, request: Request) -> None:
        """Raise `ValueError` (or `OSError`) where `request` cannot be sent (an image that does not decode)."""

    def _batch_item(self, request: Request) -> dict[str, object] | Response:
        """What one request's batch item sends, as JSON that names each image by its hash (checked here), or the
        answer that ends it unsent (`built`)."""

        def body(request: Request) -> dict[str, object]:
            self.check_request(request)
            return {"model": self.identity(), "request": request_identity(request)}

        return self.built(request, body)

    def stream(self, requests: Sequence[Request]) -> Iterator[list[tuple[int, Response]]]:
        """Each response as it arrives (the runner journals it at once: a killed run sends none again)."""
        if self._fatal:
            raise BackendFatalError(f"{self.label} backend stopped: {self._fatal}")
        if not requests:
            return
        self._open()
        rule = self.cache_rule()
        how = rule.how if rule is not None else None
        leaders = [plan.leader for plan in self._plan(requests, rule)]
        journal = self.settings.batch_journal
        try:
            answers = self._batched(requests, Path(journal)) if journal else self._pooled(requests, leaders)
            for i, response in answers:
                if not (response.error or "").startswith("not_sent:"):
                    yield [(i, self._as_sent(requests[i], response, how))]
        finally:
            self._plans = {}
        self._count("requests", len(requests))
        if self._fatal:
            # Stop now, not one batch later (a small run would otherwise end "successfully" with every
            # sample failed); what this batch did get has been handed over already.
            raise BackendFatalError(f"{self.label} backend stopped: {self._fatal}")

    def _batched(self, requests: Sequence[Request], journal: Path) -> Iterator[tuple[int, Response]]:
        from harness.models.shared.api_client.batching import BatchJournal, BatchRun

        s = self.settings
        run = BatchRun(self.batch_interface(), BatchJournal(journal), s.batch_poll, s.batch_wait)
        return run.stream(requests, [self._batch_item(r) for r in requests], self._send)

    def _pooled(self, requests: Sequence[Request], leaders: Sequence[int | None]) -> Iterator[tuple[int, Response]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix=self.label)
        for i, future in in_turn(self._pool, self._send, requests, leaders, self.settings.concurrency):
            try:
                response = future.result()
            except Exception as err:  # a bug in one sample's handling must not lose the batch
                log.exception("%s: unexpected error", self.label)
                response = Response(text=None, error=f"error: {type(err).__name__}: {err}")
            yield i, response

    def close(self) -> None:
        """Stop the pool, close the HTTP client; the backend's client (`_client`) opens again when next needed."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._http is not None:
            self._http.close()
            self._http = None
            self._client = None
