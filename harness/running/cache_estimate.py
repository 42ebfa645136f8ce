"""What a provider's prompt cache would take off a run's bill, before it runs (`--screen_only`'s estimate and
`--max_cost`'s check): the run's requests as the screen built them, in the order the run sends them (each task long
first, or with `request_order=cache` the cache order, across tasks: `prefix_order`), cut in the backend's batches and
planned as the backend plans them (`harness.models.api_client.prompt_cache.PrefixPlanner`). Each request reads the
longest of its marked prefixes an earlier request wrote, and writes (where writes are billed apart, Anthropic's) what
lies past it up to its longest mark; both as their share of its counted prompt, by the planner's weights.

What it assumes: every marked prefix is still held when a later request reads it (the requests sharing one run in the
same batch or the next, minutes apart, within Anthropic's 5-minute lifetime, which each read renews) and the provider
caches what it is asked to (OpenAI's and Gemini's automatic caches promise no hit). The bill with caching is what the
run pays where the cache serves every shared prefix; the bill without it, what it pays where it serves none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.api import Request
from harness.models.api_client.prompt_cache import CacheRule, PrefixPlanner, PromptShape, prompt_shape
from harness.models.scheduling.prefix_order import PromptKey, cache_order, prompt_key, task_order

SHOWN_GROUPS = 3  # the groups a task's line names


@dataclass(frozen=True)
class Shaped:
    """One request the run would send, as the order and the cache see it."""

    doc_id: int
    sample_id: str
    tokens: int  # its prompt as the screen counts it
    shape: PromptShape
    key: PromptKey | None  # the cache order's key, where the run takes that order


def shaped(request: Request, tokens: int, order: str) -> Shaped:
    key = prompt_key(request) if order == "cache" else None
    return Shaped(request.doc_id, request.sample_id, tokens, prompt_shape(request), key)


@dataclass
class CacheTally:
    """One task's requests in the cache: the prompt tokens read from it and written to it, and which rows share a
    marked prefix (by the shortest prefix each marks: the rows of one haystack)."""

    how: str  # how the backend asks (`prompt_cache.HOWS`)
    requests: int = 0
    read: int = 0
    written: int = 0
    groups: dict[str, list[str]] = field(default_factory=dict)  # a group's key -> this task's rows in it
    elsewhere: dict[str, int] = field(default_factory=dict)  # a group's key -> its rows in the run's other tasks
    per_request: list[tuple[int, int, int]] = field(default_factory=list)  # each one's prompt, read, written

    def describe(self, task: str) -> str:
        sharing = sum(len(ids) for ids in self.groups.values())
        if not sharing:
            return f"{task}: no two of its {self.requests:,} requests share a prefix worth caching"
        named = sorted(self.groups.items(), key=lambda group: (-len(group[1]), group[1][0]))
        shown = ", ".join(self._group(key, ids) for key, ids in named[:SHOWN_GROUPS])
        more = f", {_count(len(named) - SHOWN_GROUPS, 'more group')}" if len(named) > SHOWN_GROUPS else ""
        written = f", {self.written:,} written to it" if self.written else ""
        return (
            f"{task}: {sharing:,} of {self.requests:,} requests share a prefix, in {_count(len(named), 'group')} "
            f"({shown}{more}); {self.read:,} prompt tokens read from the cache{written}"
        )

    def _group(self, key: str, ids: list[str]) -> str:
        name = ids[0] + (f" and {len(ids) - 1:,} more" if len(ids) > 1 else "")
        others = self.elsewhere.get(key, 0)
        return name + (f" with {_count(others, 'row')} of other tasks" if others else "")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def cache_tallies(tasks: Sequence[tuple[str, Sequence[Shaped]]], rule: CacheRule, order: str) -> dict[str, CacheTally]:
    """Each task's tally, its requests planned in the run's order and batches (`rule.chunk` requests at a time)."""
    planner = PrefixPlanner(rule.min_tokens)
    out = {task: CacheTally(rule.how) for task, _ in tasks}
    for sequence in _run_order(tasks, order):
        for start in range(0, len(sequence), rule.chunk):
            batch = sequence[start : start + rule.chunk]
            for (task, item), plan in zip(batch, planner.plan([item.shape for _, item in batch]), strict=True):
                tally, share = out[task], item.tokens / max(1, item.shape.tokens)
                read = round(plan.read * share)
                written = round(plan.written * share) if rule.writes_billed else 0
                tally.requests += 1
                tally.read += read
                tally.written += written
                tally.per_request.append((item.tokens, read, written))
                if plan.key is not None:
                    tally.groups.setdefault(plan.key, []).append(item.sample_id)
    for task, tally in out.items():  # a group's rows in the other tasks (a haystack at other lengths)
        for key in tally.groups:
            tally.elsewhere[key] = sum(len(other.groups.get(key, ())) for name, other in out.items() if name != task)
    return out


def _run_order(tasks: Sequence[tuple[str, Sequence[Shaped]]], order: str) -> list[list[tuple[str, Shaped]]]:
    """The sequences the runner generates, each in its order: a task at a time (`Runner.run_task`), or with the cache
    order and several tasks every task's requests as one (`Runner.run_together`)."""
    sequences = []
    for task, items in tasks:
        by_doc = {item.doc_id: item for item in items}
        keys = {item.doc_id: item.key or () for item in items} if order == "cache" else None
        ordered = task_order([(item.tokens, item.doc_id) for item in items], keys)
        sequences.append([(task, by_doc[doc_id]) for _, doc_id in ordered])
    if order != "cache" or len(sequences) < 2:
        return sequences
    every = [entry for sequence in sequences for entry in sequence]
    order_of = cache_order([item.tokens for _, item in every], [item.key or () for _, item in every])
    return [[every[i] for i in order_of]]
