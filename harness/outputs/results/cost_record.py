"""Tokens and cost per task, for the model and the judge, as the results file records them (`cost`) and `harness
report` shows them: the usage the providers reported for the recorded answers (answers served from the journal or the
response cache count what they cost when generated), priced by the price table (`harness.models.facts.pricing`) under the
name the backend served; no price, no dollars (`usd` null), never a guess."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired

from typing_extensions import TypedDict

from harness.models.facts.pricing import PriceTable, tokens_of
from harness.running.task.task import TaskResult


class CostEntry(TypedDict):
    """One payee's tokens and cost on one task."""

    served: str | None  # the model's name as the backend sent it
    priced_as: str | None  # the price table's entry (None: not in the table)
    prices_as_of: str | None
    input_tokens: int
    cached_tokens: int  # of the input, read from the provider's prompt cache
    cache_write_tokens: NotRequired[int]  # of the input, written to it (results from before it was recorded lack it)
    output_tokens: int
    usd: float | None
    batch: bool  # answered through the provider's batch interface, priced at its factor


def cost_entry(
    usages: Sequence[Mapping[str, int]], served: str | None, table: PriceTable, batch: bool = False
) -> CostEntry:
    """The reported usage of each request in `usages`, summed and priced request by request (a long-context rate
    where that request's own prompt is past its threshold, as the providers bill)."""
    billed = [tokens_of(usage) for usage in usages]
    price = table.price_of(served)
    usd = round(price.bill(billed, batch=batch), 9) if price is not None else None
    return {
        "served": served,
        "priced_as": price.model if price else None,
        "prices_as_of": price.as_of if price else None,
        "input_tokens": sum(b.input for b in billed),
        "cached_tokens": sum(b.cached for b in billed),
        "cache_write_tokens": sum(b.written for b in billed),
        "output_tokens": sum(b.output for b in billed),
        "usd": usd,
        "batch": batch,
    }


def task_costs(
    task_results: Sequence[TaskResult],
    served: str | None,
    judge_served: Mapping[str, str | None],
    table: PriceTable,
    batch: bool = False,
) -> dict[str, dict[str, CostEntry]]:
    """task -> {"model": ..., "judge": ...} for every task with reported usage (`judge_served`: task -> the model
    its judge served)."""
    out: dict[str, dict[str, CostEntry]] = {}
    for r in task_results:
        entry: dict[str, CostEntry] = {}
        if r.answer_usages:
            entry["model"] = cost_entry(r.answer_usages, served, table, batch)
        if r.judge_usages:
            entry["judge"] = cost_entry(r.judge_usages, judge_served.get(r.task.name), table, batch)
        if entry:
            out[r.task.name] = entry
    return out


def cost_lines(costs: Mapping[str, Mapping[str, Mapping[str, object]]], tasks: Sequence[str]) -> list[str]:
    """The report's lines for a run's `cost` record, its tasks in order, and the run's total."""
    lines = []
    totals: dict[str, float] = {}
    unpriced = False
    for task in tasks:
        for who, entry in (costs.get(task) or {}).items():
            usd = entry.get("usd")
            dollars = f"${usd:,.2f}" if isinstance(usd, int | float) else "no price"
            priced = (
                f" as {entry.get('priced_as')}, prices of {entry.get('prices_as_of')}" if entry.get("priced_as") else ""
            )
            priced += " (batch)" if entry.get("batch") else ""
            written = entry.get("cache_write_tokens") or 0
            cached = f"{entry.get('cached_tokens', 0):,} cached" + (
                f", {written:,} written to the cache" if written else ""
            )
            lines.append(
                f"  - `{task}` {who}: {entry.get('input_tokens', 0):,} input tokens ({cached}), "
                f"{entry.get('output_tokens', 0):,} output tokens: {dollars}{priced}"
            )
            if isinstance(usd, int | float):
                totals[who] = totals.get(who, 0.0) + usd
            else:
                unpriced = True
    if not lines:
        return []
    total = ", ".join(f"{who} ${usd:,.2f}" for who, usd in totals.items()) or "no priced usage"
    note = " (some usage has no price)" if unpriced else ""
    return [f"- **tokens and cost** (reported usage): {total}{note}", *lines]
