"""A request order for a prefix cache: requests that share a prompt prefix run one after another.

vLLM keeps the KV of full token blocks keyed by the tokens before them (images by their content hash), so a
prefill is saved only when a request that shares its prefix ran shortly before and its blocks are still held.
The rows of one haystack (an id at several needle depths or permutations, and at several lengths, where a
longer length shows more of the same haystack) share long prefixes. Long first, task by task, keeps one length's
rows of an id together only where their token counts tie, and runs its lengths tasks apart, the cache evicted between.

`prompt_key(request)` describes a prompt as the sequence of its parts (a text part by a hash of its text, an
image by its sha256), each with a rough token weight; it reads only what every `Request` carries (messages,
image sha256s, per-image token figures), no field of a particular benchmark. `cache_order` sorts keys so that
requests sharing a prefix are adjacent (trie order), cuts that sequence into groups wherever neighbours share
less than `min_shared` tokens and less than half the shorter prompt, and runs the groups long first (by their
longest request). Within a group each request extends what the cache holds: each time the request with the fewest
tokens not shared with one already run, so a haystack grows short to long (8K, then 16K, ..., each length's rows
reusing the shorter one's prefix) and the rows of one length follow the one whose haystack they share. The single
longest request of the run goes first of all, so an out-of-memory still shows at once. (`grow=False`, the order
before this one: each group from its most shared request, then the one sharing most, ties long first, so a group
ran long to short and its longest length reused nothing of the shorter ones.)
The order decides only when a request runs: answers and results files do not depend on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence

from harness.api import ImagePart, Request

# Neighbours sharing fewer prompt tokens than this, and less than half the shorter prompt, are not kept together.
MIN_SHARED_TOKENS = 1024
CHARS_PER_TOKEN = 4  # a text part's weight only groups requests; it never reaches a model or a result
TEXT_CHUNK_CHARS = 4096  # ~1K tokens: a text part is keyed in chunks of about this size (`_chunks`)

PromptKey = tuple[tuple[int, int], ...]  # (part hash, part tokens) per part, in prompt order


def _text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def prompt_key(request: Request) -> PromptKey:
    """The prompt's parts in order as (hash, tokens): messages' roles, text parts in chunks of whole paragraphs
    (`_chunks`), images (by sha256)."""
    return tuple(entry for _, _, entries in keyed_parts(request) for entry in entries)


def keyed_parts(request: Request) -> Iterator[tuple[int, int, PromptKey]]:
    """`prompt_key` part by part: (message index, content part index, its key entries), a message's role first as
    part -1. Where a provider's cache marks a prompt at a content block's end (`api_client.prompt_cache`), it reads
    which block a shared prefix ends in here."""
    image_tokens = iter(request.image_tokens)
    for m, message in enumerate(request.messages):
        yield m, -1, ((_text_hash("\x00role:" + message.role), 1),)
        for k, part in enumerate(message.content):
            if isinstance(part, ImagePart):
                yield m, k, ((_text_hash("\x00image:" + part.image.sha256), max(1, next(image_tokens, 1))),)
            else:
                yield m, k, tuple((_text_hash(t), max(1, len(t) // CHARS_PER_TOKEN)) for t in _chunks(part.text))


def _chunks(text: str) -> list[str]:
    """A text cut after the first paragraph end (blank line) past each `TEXT_CHUNK_CHARS`: two texts that share their
    first passages share their first chunks, so a haystack of passages with no image between them (VRAG's) still
    shows the prefix its rows share; chunks rather than single passages keep a 128K prompt's key to ~100 parts."""
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = text.find("\n\n", start + TEXT_CHUNK_CHARS)
        end = len(text) if end < 0 else end + 2
        chunks.append(text[start:end])
        start = end
    return chunks or [text]


def shared_tokens(a: PromptKey, b: PromptKey) -> int:
    """Weight of the parts two keys have in common from the start."""
    total = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        total += x[1]
    return total


def cache_order(
    tokens: Sequence[int], keys: Sequence[PromptKey], *, min_shared: int = MIN_SHARED_TOKENS, grow: bool = True
) -> list[int]:
    """Positions of the requests (given by their prompt tokens and keys) in the order to run them."""
    if len(tokens) != len(keys):
        raise ValueError(f"{len(tokens)} token counts for {len(keys)} keys")
    if not keys:
        return []
    weight = [sum(w for _, w in key) for key in keys]
    groups, neighbour_share = neighbour_groups(keys, sorted(range(len(keys)), key=lambda i: (keys[i], i)), min_shared)
    ordered = [_greedily(group, keys, _rank(grow, group, tokens, weight, neighbour_share)) for group in groups]
    ordered.sort(key=lambda group: (-max(tokens[i] for i in group), min(group)))
    run = [i for group in ordered for i in group]
    if not grow:
        return run
    longest = min(range(len(tokens)), key=lambda i: (-tokens[i], i))
    return [longest] + [i for i in run if i != longest]


def neighbour_groups(
    keys: Sequence[PromptKey], order: Sequence[int], min_shared: int = MIN_SHARED_TOKENS
) -> tuple[list[list[int]], dict[int, int]]:
    """`order` cut into runs of neighbours that share a prompt prefix (at least `min_shared` tokens, or half the
    shorter prompt), and the most any neighbour shares with each."""
    weight = {i: sum(w for _, w in keys[i]) for i in order}
    groups: list[list[int]] = []
    neighbour_share = dict.fromkeys(order, 0)
    for position, i in enumerate(order):
        if position:
            previous = order[position - 1]
            shared = shared_tokens(keys[previous], keys[i])
            neighbour_share[i] = max(neighbour_share[i], shared)
            neighbour_share[previous] = max(neighbour_share[previous], shared)
            if shared >= min(min_shared, min(weight[previous], weight[i]) // 2):
                groups[-1].append(i)
                continue
        groups.append([i])
    return groups, neighbour_share


def task_order(
    pending: Sequence[tuple[int, int]], keys: Mapping[int, PromptKey] | None = None
) -> list[tuple[int, int]]:
    """One task's (prompt tokens, doc id) in the order its requests run: long first, ties by doc id, so an
    out-of-memory shows at once; given the prompts' keys by doc id (`request_order=cache`), in the cache order."""
    ordered = sorted(pending, key=lambda item: (-item[0], item[1]))
    if keys is None:
        return ordered
    return [ordered[i] for i in cache_order([t for t, _ in ordered], [keys[d] for _, d in ordered])]


def _rank(
    grow: bool, group: list[int], tokens: Sequence[int], weight: Sequence[int], neighbour_share: dict[int, int]
) -> Callable[[int, int], tuple]:
    """How `_greedily` picks a group's next request, given the tokens it shares with one already run. Growing: the
    one with the fewest tokens not shared (ties: fewer tokens, then the one others reuse most, then position), short
    to long, each extending the cache. Extending (the order before growing): first the request the others reuse most,
    then each time the one that shares most (ties long first, then by position)."""
    if grow:
        return lambda i, shared: (weight[i] - shared, tokens[i], -neighbour_share[i], i)
    first = min(group, key=lambda i: (-neighbour_share[i], -tokens[i], i))
    return lambda i, shared: (i != first, -shared, -tokens[i], i)


def _greedily(group: list[int], keys: Sequence[PromptKey], rank: Callable[[int, int], tuple]) -> list[int]:
    """Each time the request `rank(position, tokens shared with one already run)` puts first."""
    rest = list(group)
    best = dict.fromkeys(rest, 0)
    order: list[int] = []
    while rest:
        pick = min(rest, key=lambda i: rank(i, best[i]))
        rest.remove(pick)
        order.append(pick)
        for i in rest:
            best[i] = max(best[i], shared_tokens(keys[pick], keys[i]))
    return order


ORDERS = ("length", "cache")


def check_order(value: str, backend: str) -> str:
    """A backend's `request_order` model arg, checked when its settings are made."""
    if value not in ORDERS:
        raise ValueError(f"{backend} backend: request_order must be one of {', '.join(ORDERS)}, got {value!r}")
    return value
