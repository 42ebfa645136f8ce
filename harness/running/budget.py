"""`--max_cost`'s budget during a run: every answer's cost from the usage its provider reported (and the answers
journalled by an earlier run of the same command, which were paid for too), charged as it is journalled, and every
judge call's as its reply comes (an earlier run's replies, served from the response cache, were paid for too): the
model's at its price, a task's judge's at that judge's. Once the spending reaches the budget the run stops as a
backend's fatal error does: what is journalled (and the judge's replies, cached) stays, and the same command (with a
larger budget) resumes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.api import BackendFatalError, Response
from harness.models.facts.pricing import Price, tokens_of


class BudgetReached(BackendFatalError):
    """The answers' reported usage has reached `--max_cost`."""


@dataclass
class Budget:
    limit: float  # USD
    price: Price  # the model's
    spent: float = 0.0
    batch: bool = False  # answers through the provider's batch interface, at its price
    judge_prices: Mapping[str, Price] = field(default_factory=dict)  # task -> its judge's price
    judged: float = 0.0  # of `spent`, the judge's

    def charge(self, usage: Mapping[str, int] | None, price: Price | None = None) -> None:
        """One answer's reported usage, at `price` (by default the model's)."""
        if usage:  # cache reads and writes at their own rates
            usd = (price or self.price).cost_of(tokens_of(usage), batch=self.batch)
            self.spent += usd
            self.judged += usd if price is not None else 0.0

    def check(self) -> None:
        if self.spent >= self.limit:
            judge = f" (the judge's replies ${self.judged:,.2f} of it)" if self.judged else ""
            raise BudgetReached(
                f"--max_cost ${self.limit:,.2f} reached: the answers journalled cost ${self.spent:,.2f}{judge} by the "
                f"usage the providers reported, the model priced as {self.price.model}; run the same command with a "
                "larger --max_cost to go on"
            )

    def judge_payer(self, task: str) -> Callable[[Sequence[Response]], None]:
        """What the judge of `task` calls with each batch of its replies: charged at its price, then the budget
        checked (a batch asked is kept whole: its replies are in the response cache)."""
        price = self.judge_prices.get(task)

        def pay(replies: Sequence[Response]) -> None:
            if price is not None:  # a task the estimate saw no judge call for
                for reply in replies:
                    self.charge(reply.usage, price)
            self.check()

        return pay
