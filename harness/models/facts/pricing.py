"""What an API model's tokens cost: the price table (`prices.json` beside this module: USD per million input, cached
input (`cached_input`: a read from the provider's prompt cache), cache write (`cache_write`: Anthropic's 5-minute
write) and output tokens, USD per million tokens an hour an explicit cache holds (`cache_storage_per_hour`: Gemini's),
per image where a provider prices images apart, the batch factor and long-context rates, each entry dated with its
provider's pricing page as the source), a user's file over it (`--prices FILE`, the same shape:
its entries replace the table's by model name), and a request's cost from its token counts or from the usage a
provider reported.

A model is priced by its served name (`gpt-4o-2024-11-20`), or by a table name it extends with a snapshot's suffix
only (`SNAPSHOT`: a date, `gpt-4o-2025-01-01` as `gpt-4o`, `claude-3-opus-20240229`; or a version, `gemini-2.0-flash-001`
as `gemini-2.0-flash`), never by a guess: another name that starts with a table name is another model (`gpt-4o-mini`
is not `gpt-4o`; a `-preview-MM-DD` or `-exp-MM-DD` snapshot had its own price, `gemini-2.5-flash-preview-04-17` not
`gemini-2.5-flash`'s), and a model without a price has none: the screen and the results say so, with the table's
reason where it names one (`unpriced`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from builders.core import contract
from harness.errors import UserError

PRICES_MOST = 4 * contract.MiB  # a price file: a few kB for every model priced

TABLE = Path(__file__).with_name("prices.json")
MILLION = 1_000_000
# What a snapshot adds to its model's name without changing its price: a date (OpenAI's -YYYY-MM-DD, Anthropic's
# -YYYYMMDD) or a version (Google's -001).
SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3})")

# The usage keys each provider reports, flattened as the backends record them (`Response.usage`).
INPUT_KEYS = ("prompt_tokens", "prompt_token_count")
CACHED_KEYS = ("prompt_tokens_details.cached_tokens", "cached_content_token_count")  # part of the input counts
WRITTEN_KEYS = ("prompt_tokens_details.cache_write_tokens",)  # OpenAI's, where a model bills writes; part of the input
OUTPUT_KEYS = ("completion_tokens", "candidates_token_count", "thoughts_token_count")  # thoughts bill as output


@dataclass(frozen=True)
class Rates:
    input: float
    output: float
    cached_input: float | None = None  # a token read from the provider's cache; None: at the input rate
    cache_write: float | None = None  # a token written to it (Anthropic's 5-minute write); None: at the input rate


class Billed(NamedTuple):
    """A reply's tokens as a provider bills them: every prompt token (`input`), of which `cached` were read from its
    cache and `written` written to it, and the output (thinking included)."""

    input: int
    cached: int
    written: int
    output: int


@dataclass(frozen=True)
class Price:
    """One model's price, USD per million tokens."""

    model: str  # the table's name for it
    provider: str
    as_of: str
    source: str
    rates: Rates
    per_image: float = 0.0  # USD an image, where the provider prices images apart from their tokens
    batch: float = 1.0  # the factor its batch interface applies
    long_context: tuple[int, Rates] | None = None  # (over this many prompt tokens, these rates)
    cache_storage_per_hour: float | None = None  # USD per million tokens an hour an explicit cache holds (Gemini's)

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int = 0,
        images: int = 0,
        batch: bool = False,
        written_tokens: int = 0,
    ) -> float:
        """USD for one request of `input_tokens`, of which `cached_tokens` were read from the provider's cache and
        `written_tokens` written to it, each at its rate, at the long-context rates where its own prompt is past their
        threshold (as Google and OpenAI bill each request: never by an average or a total, `bill`); `batch`: through
        the provider's batch interface, at its factor."""
        rates = self.rates
        if self.long_context is not None and input_tokens > self.long_context[0]:
            rates = self.long_context[1]
        cached = min(cached_tokens, input_tokens)
        written = min(written_tokens, input_tokens - cached)
        usd = (
            (input_tokens - cached - written) * rates.input
            + cached * (rates.input if rates.cached_input is None else rates.cached_input)
            + written * (rates.input if rates.cache_write is None else rates.cache_write)
            + output_tokens * rates.output
        )
        return (usd / MILLION + images * self.per_image) * (self.batch if batch else 1.0)

    def cost_of(self, billed: Billed, batch: bool = False) -> float:
        """`cost` of one request's reported usage (`tokens_of`)."""
        return self.cost(billed.input, billed.output, billed.cached, batch=batch, written_tokens=billed.written)

    def bill(self, requests: Iterable[Billed], batch: bool = False) -> float:
        """USD for `requests`, each priced by its own prompt (`cost_of`) and summed."""
        return sum((self.cost_of(billed, batch) for billed in requests), 0.0)

    def describe(self) -> str:
        rates = self.rates
        cached = f", cached ${rates.cached_input:g}" if rates.cached_input is not None else ""
        cached += f", cache write ${rates.cache_write:g}" if rates.cache_write is not None else ""
        stored = self.cache_storage_per_hour
        cached += f", cache storage ${stored:g} an hour" if stored is not None else ""
        return (
            f"{self.model}: ${rates.input:g} in{cached}, ${rates.output:g} out per 1M tokens "
            f"({self.provider}, as of {self.as_of}, {self.source})"
        )


def tokens_of(usage: Mapping[str, int]) -> Billed:
    """The tokens of a provider's reported usage (any of the three providers' keys) as they are billed."""
    if "input_tokens" in usage:  # Anthropic: cache reads and writes are counted apart from input_tokens
        cached = int(usage.get("cache_read_input_tokens", 0))
        written = int(usage.get("cache_creation_input_tokens", 0))
        return Billed(
            int(usage["input_tokens"]) + written + cached, cached, written, int(usage.get("output_tokens", 0))
        )

    def total(keys: tuple[str, ...]) -> int:
        return sum(int(usage.get(k, 0)) for k in keys)

    return Billed(total(INPUT_KEYS), total(CACHED_KEYS), total(WRITTEN_KEYS), total(OUTPUT_KEYS))


class PriceTable:
    def __init__(self, prices: Mapping[str, Price], unpriced: Mapping[str, str] | None = None) -> None:
        self.prices = dict(prices)
        self.unpriced = dict(unpriced or {})  # model -> why the table has no price for it

    @classmethod
    def load(cls, user_file: Path | str | None = None) -> PriceTable:
        """The table, with `user_file`'s entries over it (a bad file is one line naming it and the entry)."""
        prices, unpriced = _read(TABLE)
        if user_file is not None:
            prices.update(_read(Path(user_file))[0])
        return cls(prices, unpriced)

    def price_of(self, model: str | None) -> Price | None:
        """`model`'s entry, or the entry it extends by a snapshot's suffix only (`SNAPSHOT`); else None."""
        if not model:
            return None
        if model in self.prices:
            return self.prices[model]
        known = [name for name in self.prices if model.startswith(name) and SNAPSHOT.fullmatch(model[len(name) :])]
        return self.prices[max(known, key=len)] if known else None

    def why_unpriced(self, model: str | None) -> str | None:
        """The table's reason for having no price for `model`, where it names one."""
        return self.unpriced.get(model) if model and self.price_of(model) is None else None


def _number(entry: Mapping[str, object], key: str, where: str, unit: str = "", required: bool = False) -> float | None:
    """`entry[key]`, a number >= 0 (None where it is absent and not `required`), else one line naming it."""
    value = entry.get(key)
    if value is None and not required:
        return None
    # NaN, an infinity (JSON's NaN, Infinity, 1e400) and an integer past a float are not prices
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= sys.float_info.max:
        raise UserError(f"{where}: {key!r} must be a number{unit} >= 0, got {value!r:.80}")
    return float(value)


def _rates(entry: Mapping[str, object], where: str) -> Rates:
    def usd(key: str, required: bool = False) -> float | None:
        return _number(entry, key, where, " of USD per 1M tokens", required)

    return Rates(usd("input", True) or 0.0, usd("output", True) or 0.0, usd("cached_input"), usd("cache_write"))


def _read(path: Path) -> tuple[dict[str, Price], dict[str, str]]:
    """A price file's entries by model name, and the models it names without a price, each with its reason
    (`unpriced`)."""
    try:
        data = json.loads(contract.read_regular(path, PRICES_MOST, "a price file").decode("utf-8"))
    except OSError as err:  # no such file, not a regular file (a FIFO, /dev/zero), or past its bound
        raise UserError(f"--prices {path}: cannot be read ({err.strerror or err})") from None
    except (ValueError, RecursionError) as err:  # RecursionError: nested past the parser's depth
        raise UserError(f"--prices {path}: not JSON ({err})") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise UserError(f'{path}: expected {{"models": {{MODEL: {{"input": USD, "output": USD, ...}}}}}}')
    unpriced = data.get("unpriced")
    reasons = {str(k): str(v) for k, v in unpriced.items()} if isinstance(unpriced, dict) else {}
    sources = data.get("sources") if isinstance(data.get("sources"), dict) else {}
    out = {}
    for name, entry in models.items():
        where = f"{path}: model {name!r}"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: expected an object of rates")
        provider = str(entry.get("provider", ""))
        long_context = None
        if isinstance(entry.get("long_context"), dict):
            over = entry["long_context"].get("over_tokens")
            if not isinstance(over, int) or isinstance(over, bool) or over < 1:
                raise UserError(f"{where}: long_context.over_tokens must be a positive number of tokens")
            long_context = (over, _rates(entry["long_context"], f"{where} long_context"))
        per_image, batch, storage = (_number(entry, k, where) for k in ("per_image", "batch", "cache_storage_per_hour"))
        out[name] = Price(
            model=name,
            provider=provider,
            as_of=str(entry.get("as_of", "undated")),
            source=str(entry.get("source") or sources.get(provider) or path),
            rates=_rates(entry, where),
            per_image=per_image or 0.0,
            batch=1.0 if batch is None else batch,
            long_context=long_context,
            cache_storage_per_hour=storage,
        )
    return out, reasons
