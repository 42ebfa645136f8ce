"""`--max_cost`'s budget during a run: every answer's cost from the usage its provider reported (and the answers
journalled by an earlier run of the same command, which were paid for too), charged as it is journalled; once the
spending reaches the budget the run stops as a backend's fatal error does: what is journalled stays, and the same
command (with a larger budget) resumes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.api import BackendFatalError
from harness.models.pricing import Price, tokens_of


class BudgetReached(BackendFatalError):
    """The answers' reported usage has reached `--max_cost`."""


@dataclass
class Budget:
    limit: float  # USD
    price: Price
    spent: float = 0.0
    batch: bool = False  # answers through the provider's batch interface, at its price

    def charge(self, usage: Mapping[str, int] | None) -> None:
        if usage:
            input_tokens, cached, output = tokens_of(usage)
            self.spent += self.price.cost(input_tokens, output, cached, batch=self.batch)

    def check(self) -> None:
        if self.spent >= self.limit:
            raise BudgetReached(
                f"--max_cost ${self.limit:,.2f} reached: the answers journalled cost ${self.spent:,.2f} by the usage "
                f"the provider reported, priced as {self.price.model}; run the same command with a larger --max_cost "
                "to go on"
            )
