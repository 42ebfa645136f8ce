"""What a run will cost before it runs (`--screen_only`, and the check `--max_cost` makes before the first request):
the screen's token counts of the requests it would send, each answer at the most output tokens it can be billed for
(its `max_gen_toks`, which the backend sends as its cap, or what the backend's `OutputCap` says: a cap of its own, the
model's own output limit where no cap is sent, or no bound at all), priced by the price table
(`harness.models.facts.pricing`); and, for a task with a judge (a summary a judge scores), the judge's calls: its prompts
with the answer at its longest, each reply at the judge's `max_gen_toks`.

A judge's prompt is text alone, counted at `CHARS_PER_TOKEN` characters a token (OpenAI's rule of thumb for English);
the model's prompts are counted as the screen counts them (its rule is named above the table). An answer nothing
bounds (a Gemini model sent no cap and given no `output_limit`) leaves its estimate without a bound: the prompts are
priced, and the table and the total say what is missing.

What a provider's prompt cache would take off the bill (`cache_tallies`): the run's requests as the screen built them,
in the order the run sends them (each task long first, or with `request_order=cache` the cache order, across tasks:
`prefix_order`), cut in the backend's batches and planned as the backend plans them
(`harness.models.shared.api_client.prompt_cache.PrefixPlanner`). Each request reads the longest of its marked prefixes an
earlier request wrote, and writes (where writes are billed apart, Anthropic's) what lies past it up to its longest
mark; both as their share of its counted prompt, by the planner's weights.

What it assumes: every marked prefix is still held when a later request reads it (the requests sharing one run in the
same batch or the next, minutes apart, within Anthropic's 5-minute lifetime, which each read renews) and the provider
caches what it is asked to (OpenAI's and Gemini's automatic caches promise no hit). The bill with caching is what the
run pays where the cache serves every shared prefix; the bill without it, what it pays where it serves none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.models.facts.pricing import Billed, Price, PriceTable
from harness.models.shared.scheduling.prefix_order import cache_order, task_order
from harness.models.shared.screen_model import OutputCap
from harness.running.screen_only import ScreenedTask, Shaped

if TYPE_CHECKING:  # the cache's planner is read only where a backend caches prompts
    from harness.models.shared.api_client.prompt_cache import CacheRule

CHARS_PER_TOKEN = 4
SHOWN_GROUPS = 3  # the groups a task's line names (`CacheTally.describe`)


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
    from harness.models.shared.api_client.prompt_cache import PrefixPlanner

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


@dataclass(frozen=True)
class Estimate:
    task: str
    who: str  # "model" or "judge"
    priced_as: Price | None
    served: str | None  # the model's name as the run sends it
    requests: int
    input_tokens: int
    output_tokens: int  # at most: each answer at the most its cap allows (`OutputCap`)
    images: int = 0
    batch: bool = False  # through the provider's batch interface (`--batch`), at its price
    unbounded: str = ""  # "output": its answers have no bound; "input": the judge's prompts quote such answers
    unpriced_why: str | None = None  # the table's reason for having no price, where it gives one
    cap_note: str = ""  # why its answers are priced otherwise than at max_gen_toks (`OutputCap.note`), where they are
    caching: CacheTally | None = None  # what the provider's prompt cache would read and write, where it is asked
    prompts: tuple[int, ...] = ()  # each request's input tokens (none given: each at the average, `input_tokens`)

    @property
    def usd(self) -> float | None:
        """Its bill without prompt caching."""
        return self._usd()

    @property
    def cached_usd(self) -> float | None:
        """Its bill where the provider's cache serves every shared prefix (`cache_tallies`); `usd` where it is asked
        to cache nothing."""
        return self._usd(self.caching)

    def _usd(self, caching: CacheTally | None = None) -> float | None:
        if self.priced_as is None:
            return None
        if not self.requests:
            return 0.0
        bills = self.bills(caching)
        images = self.priced_as.cost(0, 0, images=self.images, batch=self.batch)  # a fee per image, at every tier
        return self.priced_as.bill(bills, batch=self.batch) + images

    def bills(self, caching: CacheTally | None = None) -> list[Billed]:
        """Its requests one by one, as the provider bills each (a long-context rate by its own prompt): each answer at
        the most output it can be billed for; with `caching`, each request's own reads and writes."""
        answer = self.output_tokens // self.requests  # every answer at the same cap
        if caching is not None and len(caching.per_request) == self.requests:
            return [Billed(tokens, read, written, answer) for tokens, read, written in caching.per_request]
        prompts = (
            list(self.prompts) if len(self.prompts) == self.requests else _spread(self.input_tokens, self.requests)
        )
        read, written = (caching.read, caching.written) if caching is not None else (0, 0)
        reads, writes = _spread(read, self.requests), _spread(written, self.requests)  # where not planned one by one
        return [Billed(p, r, w, answer) for p, r, w in zip(prompts, reads, writes, strict=True)]


def _spread(total: int, parts: int) -> list[int]:
    """`total` in `parts` as even as whole numbers go."""
    each, extra = divmod(total, parts)
    return [each + (i < extra) for i in range(parts)]


def estimate(
    model: str | None,
    results: Sequence[ScreenedTask],
    table: PriceTable,
    judge_model: str | None = None,
    judging: bool = False,
    batch: bool = False,
    *,
    model_cap: OutputCap | None = None,
    judge_cap: OutputCap | None = None,
    caching: Mapping[str, CacheTally] | None = None,
) -> list[Estimate]:
    """The model's estimate per task, and the judge's where the run judges (`judging`; `judge_model`: the run's own
    judge model, else each task's); `model_cap`, `judge_cap`: what bounds their answers (by default each request's
    max_gen_toks); `caching`: each task's requests in the provider's prompt cache, where the model asks it to cache."""
    model_cap, judge_cap = model_cap or OutputCap(), judge_cap or OutputCap()
    out = []
    price, model_unpriced = table.price_of(model), table.why_unpriced(model)
    judges: dict[str | None, tuple[Price | None, str | None]] = {}  # each judge's price and reason, looked up once
    for r in results:
        answer = model_cap.of(r.max_gen_toks)  # None: nothing bounds it
        out.append(
            Estimate(
                r.task,
                "model",
                price,
                model,
                r.sent,
                r.sent_prompt_tokens,
                r.sent * (answer or 0),
                r.sent_images,
                batch,
                unbounded="output" if answer is None else "",
                unpriced_why=model_unpriced,
                cap_note=model_cap.note,
                caching=(caching or {}).get(r.task),
                prompts=tuple(r.sent_prompts),
            )
        )
        if judging and r.judge_calls:
            judge = judge_model or r.judge_model
            if judge not in judges:
                judges[judge] = table.price_of(judge), table.why_unpriced(judge)
            reply = judge_cap.of(r.judge_max_gen_toks)
            asked = tuple(tokens + (answer or 0) for tokens in _judge_tokens(r.judge_prompt_chars))  # each quotes it
            out.append(
                Estimate(
                    r.task,
                    "judge",
                    judges[judge][0],
                    judge,
                    r.judge_calls,
                    -(-r.judge_chars // CHARS_PER_TOKEN) + r.judge_calls * (answer or 0),  # each with the answer
                    r.judge_calls * (reply or 0),
                    batch=batch,
                    unbounded="output" if reply is None else "input" if answer is None else "",
                    unpriced_why=judges[judge][1],
                    cap_note=judge_cap.note,
                    prompts=asked,
                )
            )
    return out


def _judge_tokens(chars: Sequence[int]) -> list[int]:
    """Each judge prompt's tokens at `CHARS_PER_TOKEN`, rounded so that they sum to the whole's count rounded up."""
    out, before, seen = [], 0, 0
    for n in chars:
        seen += n
        out.append(-(-seen // CHARS_PER_TOKEN) - before)
        before += out[-1]
    return out


def total_usd(estimates: Sequence[Estimate], cached: bool = False) -> float | None:
    """The run's estimate (without what nothing bounds: `unbounded`), or None where a model in it has no price;
    `cached`: where the provider's prompt cache serves every shared prefix."""
    costs = [e.cached_usd if cached else e.usd for e in estimates if e.requests]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def unbounded(estimates: Sequence[Estimate]) -> list[str]:
    """The models (by their served names) whose answers nothing bounds in `estimates`."""
    return list(dict.fromkeys(e.served or "-" for e in estimates if e.requests and e.unbounded == "output"))


def cap_notes(estimates: Sequence[Estimate], unbounded_only: bool = False) -> list[str]:
    """The notes of the output caps in `estimates` (`unbounded_only`: of those that bound nothing), each once."""
    return list(
        dict.fromkeys(e.cap_note for e in estimates if e.cap_note and (e.unbounded == "output" or not unbounded_only))
    )


def unpriced(estimates: Sequence[Estimate]) -> dict[str, str | None]:
    """The models without a price, each with the table's reason where it gives one."""
    return dict(sorted({e.served or "-": e.unpriced_why for e in estimates if e.requests and not e.priced_as}.items()))


def cost_lines(estimates: Sequence[Estimate]) -> list[str]:
    """The estimate as the screen prints it: a table per task and who is paid (a row starts with who, as the screen's
    own rows start with the task; where the model asks its provider to cache prompts, with the tokens the cache would
    read and write and the bill with it), the notes of the output caps of those paid (where an answer is priced
    otherwise than at its max_gen_toks), then the total, without caching and with it (`caching_lines`)."""
    cached = any(e.caching is not None for e in estimates)
    lines = [
        "",
        "Estimated cost in USD: the prompts as counted above, each answer at the most output it can be billed for (its "
        "max_gen_toks, which the backend sends as its cap, unless said below)"
        + ("; at the batch interfaces' price (--batch)." if any(e.batch for e in estimates) else "."),
        "",
        "| for | task | priced as | requests | input tokens | output tokens (at most) | USD |" + CACHE_COLUMNS * cached,
        "|---|---|---|---|---|---|---|" + "---|---|" * cached,
    ]
    for e in estimates:
        usd = _dollars(e.usd, e.unbounded)
        priced = e.priced_as.model if e.priced_as else f"{e.served or '-'} (not in the table)"
        given = f"{e.input_tokens:,}" + (" and the answers" if e.unbounded == "input" else "")
        output = "not bounded" if e.unbounded == "output" else f"{e.output_tokens:,}"
        row = f"| {e.who} | {e.task} | {priced} | {e.requests:,} | {given} | {output} | {usd} |"
        if cached:
            tally = e.caching
            row += (
                f" {tally.read:,} / {tally.written:,} | {_dollars(e.cached_usd, e.unbounded)} |"
                if tally
                else " - | - |"
            )
        lines.append(row)
    lines += [f"- {note}." for note in cap_notes(estimates)]
    total = total_usd(estimates)
    if total is not None:
        loose = unbounded(estimates)
        if loose:
            lines.append(
                f"\nEstimated cost: at least ${total:,.2f} {_by_payer(estimates)}, not an upper bound: nothing bounds "
                f"the answers of {', '.join(loose)}."
            )
        else:
            lines.append(f"\nEstimated cost: ${total:,.2f} {_by_payer(estimates)}.")
        lines += caching_lines(estimates)
    else:
        missing = unpriced(estimates)
        lines.append(
            f"\nNo estimate: no price for {', '.join(missing)} in the price table (a local model pays no API fee; an "
            "API model's price goes in a file given with --prices FILE, docs/cost.md)."
        )
        lines += [f"- {name}: {why}." for name, why in missing.items() if why]
    for price in sorted({e.priced_as for e in estimates if e.priced_as}, key=lambda p: p.model):
        lines.append(f"- {price.describe()}")
    return lines


def _by_payer(estimates: Sequence[Estimate], cached: bool = False) -> str:
    """The bill by who is paid, `(model $1.00, judge $0.20)` (the judge's part where the run has one)."""
    model, judge = (
        sum((e.cached_usd if cached else e.usd) or 0.0 for e in estimates if e.who == who) for who in ("model", "judge")
    )
    judged = f", judge ${judge:,.2f}" if any(e.who == "judge" for e in estimates) else ""
    return f"(model ${model:,.2f}{judged})"


CACHE_COLUMNS = " prompt tokens read from / written to the cache | USD with caching |"


def _dollars(usd: float | None, unbounded: str) -> str:
    if usd is None:
        return "no price"
    return f"at least {usd:,.2f}" if unbounded else f"{usd:,.2f}"


def caching_lines(estimates: Sequence[Estimate]) -> list[str]:
    """The bill where the provider's prompt cache serves every shared prefix, and which rows share what, task by task
    (`cache_tallies`); nothing where the model asks for no caching."""
    tallies = [(e.task, e.caching) for e in estimates if e.caching is not None and e.requests]
    total = total_usd(estimates, cached=True)
    if not tallies or total is None:
        return []
    from harness.models.shared.api_client.prompt_cache import HOWS

    return [
        f"With prompt caching ({HOWS[tallies[0][1].how]}): ${total:,.2f} {_by_payer(estimates, cached=True)} where "
        "the cache serves every shared prefix; without it, the estimate above. Rows sharing a prefix:",
        *(f"- {tally.describe(task)}." for task, tally in tallies),
    ]
