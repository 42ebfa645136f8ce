"""What a run will cost before it runs (`--screen_only`, and the check `--max_cost` makes before the first request):
the screen's token counts of the requests it would send, each answer at its `max_gen_toks` (an upper bound), priced by
the price table (`harness.models.pricing`); and, for a task with a judge (MMLongBench's summarization), the judge's
calls: its prompts with the answer at its longest, each reply at the judge's `max_gen_toks`.

A judge's prompt is text alone, counted at `CHARS_PER_TOKEN` characters a token (OpenAI's rule of thumb for English);
the model's prompts are counted as the screen counts them (its rule is named above the table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.models.pricing import Price, PriceTable
from harness.running.screen_only import ScreenedTask

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Estimate:
    task: str
    who: str  # "model" or "judge"
    priced_as: Price | None
    served: str | None  # the model's name as the run sends it
    requests: int
    input_tokens: int
    output_tokens: int  # at most: each answer at its max_gen_toks
    images: int = 0
    batch: bool = False  # through the provider's batch interface (`--batch`), at its price

    @property
    def usd(self) -> float | None:
        if self.priced_as is None:
            return None
        if not self.requests:
            return 0.0
        return self.priced_as.cost(
            self.input_tokens, self.output_tokens, images=self.images, requests=self.requests, batch=self.batch
        )


def estimate(
    model: str | None,
    results: Sequence[ScreenedTask],
    table: PriceTable,
    judge_model: str | None = None,
    judging: bool = False,
    batch: bool = False,
) -> list[Estimate]:
    """The model's estimate per task, and the judge's where the run judges (`judging`; `judge_model`: the run's own
    judge model, else each task's)."""
    out = []
    price = table.price_of(model)
    for r in results:
        out.append(
            Estimate(
                r.task,
                "model",
                price,
                model,
                r.sent,
                r.sent_prompt_tokens,
                r.sent * r.max_gen_toks,
                r.sent_images,
                batch,
            )
        )
        if judging and r.judge_calls:
            judge = judge_model or r.judge_model
            tokens = -(-r.judge_chars // CHARS_PER_TOKEN) + r.judge_calls * r.max_gen_toks
            out.append(
                Estimate(
                    r.task,
                    "judge",
                    table.price_of(judge),
                    judge,
                    r.judge_calls,
                    tokens,
                    r.judge_calls * r.judge_max_gen_toks,
                    batch=batch,
                )
            )
    return out


def total_usd(estimates: Sequence[Estimate]) -> float | None:
    """The run's estimate, or None where a model in it has no price."""
    costs = [e.usd for e in estimates if e.requests]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def cost_lines(estimates: Sequence[Estimate]) -> list[str]:
    """The estimate as the screen prints it: a table per task and who is paid (a row starts with who, as the screen's
    own rows start with the task), then the total."""
    lines = [
        "",
        "Estimated cost in USD: the prompts as counted above, each answer at its max_gen_toks (an upper bound)"
        + ("; at the batch interfaces' price (--batch)." if any(e.batch for e in estimates) else "."),
        "",
        "| for | task | priced as | requests | input tokens | output tokens (at most) | USD |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in estimates:
        usd = f"{e.usd:,.2f}" if e.usd is not None else "no price"
        priced = e.priced_as.model if e.priced_as else f"{e.served or '-'} (not in the table)"
        lines.append(
            f"| {e.who} | {e.task} | {priced} | {e.requests:,} | {e.input_tokens:,} | {e.output_tokens:,} | {usd} |"
        )
    total = total_usd(estimates)
    if total is not None:
        parts = {who: sum(e.usd or 0.0 for e in estimates if e.who == who) for who in ("model", "judge")}
        judge = f", judge ${parts['judge']:,.2f}" if any(e.who == "judge" for e in estimates) else ""
        lines.append(f"\nEstimated cost: ${total:,.2f} (model ${parts['model']:,.2f}{judge}).")
    else:
        missing = sorted({e.served or "-" for e in estimates if e.usd is None})
        lines.append(
            f"\nNo estimate: no price for {', '.join(missing)} in the price table (a local model pays no API fee; an "
            "API model's price goes in a file given with --prices FILE, docs/cost.md)."
        )
    for price in sorted({e.priced_as for e in estimates if e.priced_as}, key=lambda p: p.model):
        lines.append(f"- {price.describe()}")
    return lines
