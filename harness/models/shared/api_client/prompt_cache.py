"""Provider prompt caching: which prefix of each request an API backend asks its provider to keep, and which request of
a batch waits for the one that writes it. The model is given the same prompt either way.

A provider caches a prompt's prefix and bills a later request that starts with it less for those tokens:

- Anthropic (`cache_control`): a content block marked `{"type": "ephemeral"}` caches the request up to and including
  it; at most four marks a request; a prefix shorter than the model's minimum (1,024 tokens for Claude 3.7 Sonnet and
  3 Opus, 2,048 for the Haikus) is not cached; a write costs 1.25 times the input price (5-minute lifetime), a read 0.1
  times, reported as `usage.cache_creation_input_tokens` and `cache_read_input_tokens` (Anthropic, "Prompt caching"
  and "Pricing", platform.claude.com/docs/en/build-with-claude/prompt-caching and
  docs.anthropic.com/en/docs/about-claude/pricing; the SDK's `CacheControlEphemeralParam`, `Usage`).
- OpenAI (`prompt_cache_key`): a prompt of 1,024 tokens or more is cached automatically, and requests sent with the
  same key are routed to the same cache; reads are reported as `usage.prompt_tokens_details.cached_tokens`
  (developers.openai.com/api/docs/guides/prompt-caching; the SDK's `CompletionCreateParams.prompt_cache_key`).
- Gemini (implicit caching): automatic on 2.5 models from 1,024 (Flash) or 4,096 (Pro) tokens, nothing to send;
  reads reported as `usage_metadata.cached_content_token_count` (ai.google.dev/gemini-api/docs/caching).

Where to mark comes from the requests alone: a request's prompt is read as `prefix_order.keyed_parts` reads it (the
cache order's own key), each content block's end named by the hash of everything up to it. The planner sees a batch
at a time (the runner's chunk) and remembers the prefixes marked earlier in the run. A request's marks are the block
ends where another request of the batch, or one marked earlier, stops sharing its prompt (the longest shared prefix
with each), at least `min_tokens` long, the longest `MOST_MARKS` of them; its key names the shortest of all those (the
prefix the rows of one haystack share). A request reads the longest of its marks that an earlier one wrote; where
that one is in the same batch it is sent only once that one has answered (a cache entry can be read only once the
request that writes it has begun answering: Anthropic, "Prompt caching"). `--screen_only` runs the same planner over
the run's requests in the run's order to price both bills (`harness.running.cost_estimate.cache_tallies`).
"""

from __future__ import annotations

import hashlib
import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from typing import TypeVar

from harness.api import Request, TextPart
from harness.models.shared.scheduling.prefix_order import keyed_parts
from harness.sent import CacheAsked

T = TypeVar("T")
MOST_MARKS = 4  # Anthropic's most cache_control breakpoints a request
MIN_TOKENS = 1024  # the smallest prefix any of the three providers caches
HOWS = {
    "cache_control": "Anthropic's cache_control breakpoints, each write and read at its price",
    "prompt_cache_key": "OpenAI's automatic caching, a prompt_cache_key for each shared prefix",
    "implicit": "the provider's implicit caching, nothing sent",
}


@dataclass(frozen=True)
class CacheRule:
    """How a backend asks its provider to cache prompts: `how` (a key of `HOWS`), the shortest prefix worth a mark,
    and the batch the planner sees at a time (the backend's chunk of the runner's requests)."""

    how: str
    min_tokens: int = MIN_TOKENS
    chunk: int = 32

    @property
    def writes_billed(self) -> bool:
        """Whether writing a prefix to the cache is billed apart (Anthropic's cache writes)."""
        return self.how == "cache_control"


@dataclass(frozen=True)
class BlockEnd:
    """The end of one content block of a request: where it is (message, part) and the prefix up to it."""

    message: int
    part: int
    prefix: int  # a hash of the prompt up to and including this block
    tokens: int  # the prompt's weight up to here (`prefix_order`'s: text at 4 characters a token, images by the rows)


@dataclass(frozen=True)
class PromptShape:
    """What the planner reads of a request: its markable block ends, in arrays (a screen holds one a request of the
    run), and its whole weight."""

    prefixes: array[int]  # each block end's prefix hash
    weights: array[int]  # the prompt's weight up to each
    places: array[int]  # each one's (message, part), as message * PLACES + part
    tokens: int

    def end(self, n: int) -> BlockEnd:
        message, part = divmod(self.places[n], PLACES)
        return BlockEnd(message, part, self.prefixes[n], self.weights[n])


PLACES = 1 << 32  # (message, part) packed in one number


def prompt_shape(request: Request) -> PromptShape:
    """Each block end where a provider may mark `request`: after a non-empty text or an image (a system turn only at
    its end, and only where it opens the prompt: Anthropic caches `system` before the messages)."""
    running = hashlib.blake2b(digest_size=8)
    tokens = 0
    prefixes, weights, places = array("Q"), array("q"), array("q")
    for m, k, entries in keyed_parts(request):
        for entry, weight in entries:
            running.update(entry.to_bytes(8, "big"))
            tokens += weight
        if k < 0:
            continue
        message = request.messages[m]
        part = message.content[k]
        if isinstance(part, TextPart) and not part.text:
            continue
        if message.role == "system" and (m > 0 or k < len(message.content) - 1):
            continue
        prefixes.append(int.from_bytes(running.copy().digest(), "big"))
        weights.append(tokens)
        places.append(m * PLACES + k)
    return PromptShape(prefixes, weights, places, tokens)


@dataclass(frozen=True)
class CachePlan:
    """One request's part in the cache: the block ends it marks (shortest first), the request of its batch it waits
    for (the one writing the prefix it reads), and the tokens it reads and writes, as the planner weighs them."""

    marks: tuple[BlockEnd, ...] = ()
    leader: int | None = None
    read: int = 0
    group: int | None = None  # the shortest prefix worth caching it shares: the rows of one haystack share it

    @property
    def key(self) -> str | None:
        """The group the request belongs to, named by its prefix's hash (OpenAI's `prompt_cache_key`)."""
        return f"mmle-{self.group:016x}" if self.group is not None else None

    @property
    def written(self) -> int:
        """The tokens past the prefix it reads, up to its longest mark: what it writes."""
        return max(0, self.marks[-1].tokens - self.read) if self.marks else 0

    def asked(self, how: str) -> CacheAsked | None:
        if not self.marks:
            return None
        asked: CacheAsked = {"how": how, "marks": [mark.tokens for mark in self.marks]}
        if how == "prompt_cache_key" and self.key is not None:
            asked["key"] = self.key
        return asked


@dataclass
class PrefixPlanner:
    """Plans a run's batches one after another (`plan`), remembering what earlier batches marked."""

    min_tokens: int = MIN_TOKENS
    most_marks: int = MOST_MARKS
    marked: set[int] = field(default_factory=set)  # the prefixes marked so far this run: what the provider may hold

    def plan(self, shapes: Sequence[PromptShape]) -> list[CachePlan]:
        """Each request's plan, the batch in the order it is sent."""
        counts = Counter(prefix for shape in shapes for prefix in shape.prefixes)
        writer: dict[int, int] = {}  # a prefix marked in this batch -> the first request that marks it
        plans = []
        for i, shape in enumerate(shapes):
            branches = self._branches(shape, counts)
            marks = [shape.end(n) for n in branches[-self.most_marks :]]
            leader, read = None, 0
            for mark in reversed(marks):  # the longest prefix already written: by an earlier batch, or one to wait for
                if mark.prefix in self.marked:
                    read = mark.tokens
                    break
                if mark.prefix in writer:
                    leader, read = writer[mark.prefix], mark.tokens
                    break
            for mark in marks:
                writer.setdefault(mark.prefix, i)
            group = shape.prefixes[branches[0]] if branches else None
            plans.append(CachePlan(tuple(marks), leader, read, group))
        self.marked.update(writer)
        return plans

    def _branches(self, shape: PromptShape, counts: Counter[int]) -> list[int]:
        """The block ends, `min_tokens` or more into the prompt, where a request sharing it stops sharing it."""

        def sharing(n: int) -> int:  # how many requests hold this prefix (one marked earlier counts too)
            return counts[shape.prefixes[n]] + (shape.prefixes[n] in self.marked)

        shared = [n for n, weight in enumerate(shape.weights) if weight >= self.min_tokens and sharing(n) > 1]
        return [n for k, n in enumerate(shared) if k + 1 == len(shared) or sharing(shared[k + 1]) < sharing(n)]


def in_turn(
    pool: Executor, send: Callable[[Request], T], requests: Sequence[Request], leaders: Sequence[int | None], most: int
) -> Iterator[tuple[int, Future[T]]]:
    """Each request's future as it completes, `most` in flight at a time, in the batch's order, except that a request
    whose leader is another of the batch (`CachePlan.leader`) is sent only once that one has answered (done: whatever
    its outcome, its followers go on)."""
    waiting: dict[int, list[int]] = {}
    ready: list[int] = []
    for i, leader in enumerate(leaders):
        if leader is None:
            ready.append(i)  # in order: a heap already
        else:
            waiting.setdefault(leader, []).append(i)
    running: dict[Future[T], int] = {}
    while ready or running:
        while ready and len(running) < most:
            i = heapq.heappop(ready)
            running[pool.submit(send, requests[i])] = i
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=running.__getitem__):
            i = running.pop(future)
            for follower in waiting.pop(i, ()):
                heapq.heappush(ready, follower)
            yield i, future
