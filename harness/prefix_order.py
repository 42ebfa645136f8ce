"""A request order for a prefix cache: requests that share a prompt prefix run one after another.

vLLM keeps the KV of full token blocks keyed by the tokens before them (images by their content hash), so a
prefill is saved only when a request that shares its prefix ran shortly before and its blocks are still held.
The rows of one haystack (an id at several needle depths or permutations, and at several lengths, where a
longer length shows more of the same haystack) share long prefixes; a long-first order scatters them.

`prompt_key(request)` describes a prompt as the sequence of its parts (a text part by a hash of its text, an
image by its sha256), each with a rough token weight; it reads only what every `Request` carries (messages,
image sha256s, per-image token figures), no field of a particular benchmark. `cache_order` sorts keys so that
requests sharing a prefix are adjacent (trie order), cuts that sequence into groups wherever neighbours share
less than `min_shared` tokens, runs the groups long first (by their longest request, so an out-of-memory still
shows early), and within a group puts first the requests whose prefix the others reuse most.
The order decides only when a request runs: answers and results files do not depend on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from harness.api import ImagePart, Request

MIN_SHARED_TOKENS = 1024  # neighbours sharing fewer prompt tokens than this are not kept together
CHARS_PER_TOKEN = 4  # a text part's weight only groups requests; it never reaches a model or a result

PromptKey = tuple[tuple[int, int], ...]  # (part hash, part tokens) per part, in prompt order


def _text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def prompt_key(request: Request) -> PromptKey:
    """The prompt's parts in order as (hash, tokens): messages' roles, text parts, images (by sha256)."""
    parts: list[tuple[int, int]] = []
    image_tokens = iter(request.image_tokens)
    for message in request.messages:
        parts.append((_text_hash("\x00role:" + message.role), 1))
        for part in message.content:
            if isinstance(part, ImagePart):
                parts.append((int(part.image.sha256[:16], 16), max(1, next(image_tokens, 1))))
            else:
                parts.append((_text_hash(part.text), max(1, len(part.text) // CHARS_PER_TOKEN)))
    return tuple(parts)


def shared_tokens(a: PromptKey, b: PromptKey) -> int:
    """Weight of the parts two keys have in common from the start."""
    total = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        total += x[1]
    return total


def cache_order(tokens: Sequence[int], keys: Sequence[PromptKey], *, min_shared: int = MIN_SHARED_TOKENS) -> list[int]:
    """Positions of the requests (given by their prompt tokens and keys) in the order to run them."""
    if len(tokens) != len(keys):
        raise ValueError(f"{len(tokens)} token counts for {len(keys)} keys")
    trie = sorted(range(len(keys)), key=lambda i: (keys[i], i))
    groups: list[list[int]] = []
    neighbour_share: dict[int, int] = {i: 0 for i in trie}  # most any neighbour in trie order shares with i
    for position, i in enumerate(trie):
        if position:
            previous = trie[position - 1]
            shared = shared_tokens(keys[previous], keys[i])
            neighbour_share[i] = max(neighbour_share[i], shared)
            neighbour_share[previous] = max(neighbour_share[previous], shared)
            if shared >= min_shared:
                groups[-1].append(i)
                continue
        groups.append([i])
    # Within a group the request the others reuse most goes first; ties long first, then dataset position.
    ordered = [sorted(group, key=lambda i: (-neighbour_share[i], -tokens[i], i)) for group in groups]
    ordered.sort(key=lambda group: (-max(tokens[i] for i in group), min(group)))
    return [i for group in ordered for i in group]
