"""The price table: every entry dated with its source, a user's file over it, a request's cost from its tokens or from
the usage each provider reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.models.facts.pricing import PRICES_MOST, TABLE, Billed, PriceTable, tokens_of
from tests.support.deadline import within


def test_every_entry_is_dated_with_its_source():
    table = PriceTable.load()
    raw = json.loads(TABLE.read_text())
    assert set(table.prices) == set(raw["models"])
    for price in table.prices.values():
        assert price.as_of[:4].isdigit() and price.source.startswith("https://"), price
        assert price.rates.input > 0 and price.rates.output > 0


def test_a_models_price_by_its_served_name_or_the_entry_its_snapshot_extends():
    table = PriceTable.load()
    assert table.price_of("gpt-4o-2024-05-13").rates.input == 5.0  # the May snapshot, not gpt-4o's
    assert table.price_of("gpt-4o-2025-01-31").model == "gpt-4o"  # a dated snapshot of gpt-4o
    assert table.price_of("gemini-2.0-flash-002").model == "gemini-2.0-flash"  # a version of it
    assert table.price_of("Qwen/Qwen2.5-VL-7B-Instruct") is None
    assert table.price_of(None) is None


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4o-mini",  # another model: 16 times cheaper than gpt-4o
        "gpt-4o-mini-2024-07-18",
        "gpt-4o-audio-preview",
        "gemini-2.0-flash-lite",
        "gemini-2.0-flash-thinking-exp-01-21",  # an experimental snapshot
        "gemini-2.5-flash-preview-05-20",  # a preview had its own price (04-17's is not 2.5 Flash's)
        "gemini-2.5-pro-preview-06-05",
    ],
)
def test_a_name_that_only_starts_with_an_entry_has_no_price(name: str):
    assert PriceTable.load().price_of(name) is None


def api_models_named() -> dict[str, str]:
    """Every API model the project names, read where it is named: the served model of every alias of a priced
    backend, the judge model of every task (`judge.model` in its YAML), and every `model=NAME` in the docs whose name
    is an API family's (a family known by API names alone: no `model_type`, no architecture); name -> where."""
    import re

    from harness.config.task_index import TaskIndex
    from harness.models.aliases import ALIASES
    from harness.models.families import family_of_api_name
    from harness.models.registry import backend_spec
    from tests.support.paths import PROJECT

    named = {a.args["model"]: f"alias {n}" for n, a in ALIASES.items() if backend_spec(a.backend).priced}
    for task in TaskIndex().tasks.values():
        if task.judge.get("model"):
            named.setdefault(str(task.judge["model"]), f"the judge of {task.task}")
    pages = [*(PROJECT / "docs").glob("*.md"), PROJECT / "README.md", *(PROJECT / "tasks").glob("*/README.md")]
    for page in pages:
        for name in re.findall(r"\bmodel=([A-Za-z][\w.\-]*)", page.read_text(encoding="utf-8")):
            family = family_of_api_name(name)
            if family is not None and not family.model_types and not family.architectures:
                named.setdefault(name, str(page.relative_to(PROJECT)))
    return named


def test_every_api_alias_judge_and_model_the_docs_name_is_priced_or_says_why_not():
    """Issue 61: the aliases of 2026 (GPT-5.x, Gemini 3, Claude 4.x) and the judges MMLongBench V1.1
    (Doubao-Seed-1.8) and VLMEvalKit (gpt-5.5-2026-04-24) name, each priced by its own entry or the entry its
    snapshot extends, dated, with its source."""
    table = PriceTable.load()
    named = api_models_named()
    assert {"gpt-5.5-2026-04-23", "gemini-3.1-pro-preview", "claude-sonnet-4-5-20250929"} <= set(named)
    assert {"Doubao-Seed-1.8", "gpt-5.5-2026-04-24", "gpt-4o-2024-11-20"} <= set(named)  # the tasks' judges
    for name, where in named.items():
        price = table.price_of(name)
        assert price is not None or table.why_unpriced(name), f"{name} ({where}) has no price and no reason"
        if price is not None:
            assert price.as_of[:4].isdigit() and price.source.startswith("https://"), (name, price)
    assert set(table.unpriced) <= set(named)  # every reason is for a model the project names
    assert "not price as gemini-2.0-flash" in table.why_unpriced("gemini-2.0-flash-thinking-exp-01-21")
    # VLMEvalKit's judge is Azure's snapshot name of GPT-5.5: OpenAI's gpt-5.5 rate, long context included
    assert table.price_of("gpt-5.5-2026-04-24").model == "gpt-5.5"
    assert table.price_of("gpt-5.5-2026-04-24").cost(300_000, 0) == pytest.approx(3.0)  # past 272K: $10 a million


def test_a_cost_in_dollars():
    price = PriceTable.load().price_of("gpt-4o-2024-11-20")
    # 125,000 prompt tokens of which 25,000 cached, 128 answer tokens: (100,000 x 2.5 + 25,000 x 1.25 + 128 x 10) / 1M
    assert price.cost(125_000, 128, cached_tokens=25_000) == pytest.approx(0.28253)
    long = PriceTable.load().price_of("gemini-2.5-pro")
    assert long.cost(100_000, 0) == pytest.approx(0.125)  # at most 200K prompt tokens: $1.25 a million
    assert long.cost(300_000, 0) == pytest.approx(0.75)  # past it: $2.50 a million
    assert price.cost(125_000, 128, cached_tokens=25_000, batch=True) == pytest.approx(0.28253 / 2)  # batch: half


def test_each_request_is_priced_by_its_own_prompt_as_google_bills_it():
    pro = PriceTable.load().price_of("gemini-2.5-pro")
    pair = [Billed(250_000, 0, 0, 1_000), Billed(100_000, 0, 0, 1_000)]
    # The 250K request is past 200K: all of it at the long-context rates, its output too: 250,000 x $2.50 + 1,000 x
    # $15 = $0.640000; the 100K one at the base rates: 100,000 x $1.25 + 1,000 x $10 = $0.135000; $0.775 in all, not
    # the $0.4575 of the pair's average prompt (175K, the base rates for all 350,000 + 2,000 tokens).
    assert pro.bill(pair) == pytest.approx(0.775)
    assert pro.bill(pair, batch=True) == pytest.approx(0.775 / 2)
    # Exactly 200K is not past it: 200,000 x $1.25 = $0.25; one token more, 200,001 x $2.50 = $0.5000025.
    assert pro.cost(200_000, 0) == pytest.approx(0.25)
    assert pro.cost(200_001, 0) == pytest.approx(0.5000025)
    # A cached read past the threshold is at the long-context cached rate: 200,000 x $0.625 + 50,000 x $2.50 = $0.25.
    assert pro.cost_of(Billed(250_000, 200_000, 0, 0)) == pytest.approx(0.25)


def test_the_usage_each_provider_reports():
    openai = {"prompt_tokens": 1000, "completion_tokens": 20, "prompt_tokens_details.cached_tokens": 400}
    gemini = {
        "prompt_token_count": 1000,
        "candidates_token_count": 20,
        "thoughts_token_count": 80,
        "cached_content_token_count": 400,
    }
    anthropic = {
        "input_tokens": 500,
        "output_tokens": 20,
        "cache_read_input_tokens": 400,
        "cache_creation_input_tokens": 100,
    }
    assert tokens_of(openai) == (1000, 400, 0, 20)
    assert tokens_of({**openai, "prompt_tokens_details.cache_write_tokens": 600}) == (1000, 400, 600, 20)
    assert tokens_of(gemini) == (1000, 400, 0, 100)  # thinking bills as output
    assert tokens_of(anthropic) == (1000, 400, 100, 20)  # Anthropic counts cache reads and writes apart from input


def test_cache_reads_and_writes_are_billed_at_their_rates():
    """Anthropic's table entries give a 5-minute write at 1.25 times input, a read at 0.1 times; a user's file prices
    a write the table leaves out at the input rate, and reads the storage price of an explicit cache."""
    sonnet = PriceTable.load().price_of("claude-3-7-sonnet-20250219")
    assert (sonnet.rates.cached_input, sonnet.rates.cache_write) == (0.3, 3.75)
    billed = tokens_of(
        {"input_tokens": 500, "output_tokens": 0, "cache_read_input_tokens": 400, "cache_creation_input_tokens": 100}
    )
    # 500 x $3 + 400 x $0.30 + 100 x $3.75, a million tokens
    assert sonnet.cost_of(billed) == pytest.approx((1500 + 120 + 375) / 1e6)
    assert sonnet.cost(1000, 0) == pytest.approx(3000 / 1e6)  # nothing read or written: the input rate
    assert "cache write $3.75" in sonnet.describe()
    assert PriceTable.load().price_of("gemini-2.5-pro").cache_storage_per_hour == 4.5


def test_a_price_file_gives_cache_rates_or_leaves_them_at_input(tmp_path: Path):
    mine = tmp_path / "prices.json"
    entry = {"input": 2.0, "output": 1.0, "cache_write": 2.5, "cache_storage_per_hour": 1.0}
    mine.write_text(json.dumps({"models": {"mine": entry, "bare": {"input": 2.0, "output": 1.0}}}))
    table = PriceTable.load(mine)
    assert table.price_of("mine").cost(1000, 0, written_tokens=1000) == pytest.approx(2500 / 1e6)
    assert table.price_of("bare").cost(1000, 0, cached_tokens=500, written_tokens=500) == pytest.approx(2000 / 1e6)
    mine.write_text(json.dumps({"models": {"mine": {**entry, "cache_write": -1}}}))
    with pytest.raises(UserError, match="'cache_write' must be a number of USD per 1M tokens >= 0"):
        PriceTable.load(mine)


def test_a_users_file_replaces_entries_by_name(tmp_path: Path):
    mine = tmp_path / "prices.json"
    mine.write_text(
        json.dumps(
            {
                "models": {
                    "gpt-4o-2024-11-20": {"input": 1, "output": 2, "as_of": "2030-01-01"},
                    "my-vlm": {"input": 0.5, "output": 0.5},
                }
            }
        )
    )
    table = PriceTable.load(mine)
    assert table.price_of("gpt-4o-2024-11-20").rates.input == 1.0
    assert table.price_of("my-vlm").source == str(mine)  # no provider: the file is the source
    assert table.price_of("claude-3-opus-20240229").rates.input == 15.0  # the rest of the table stays


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"models": []}', 'expected {"models"'),
        ('{"models": {"m": {"input": "cheap", "output": 1}}}', "model 'm': 'input' must be a number"),
        ('{"models": {"m": {"input": 1, "output": 1, "batch": -1}}}', "'batch' must be a number >= 0"),
        # issue 77, item 3: what JSON reads but no price is, and a nesting past the parser's depth
        ('{"models": {"m": {"input": NaN, "output": 1}}}', "'input' must be a number of USD per 1M tokens >= 0"),
        ('{"models": {"m": {"input": 1, "output": Infinity}}}', "'output' must be a number"),
        ('{"models": {"m": {"input": 1, "output": 1%s}}}' % ("0" * 400), "'output' must be a number"),
        ("[" * 100_000, "not JSON"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, text: str, message: str):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(UserError, match=message) as caught:
        PriceTable.load(bad)
    assert str(bad) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(UserError, match="cannot be read"):
        PriceTable.load(tmp_path / "missing.json")


def test_a_price_file_that_is_no_regular_file_or_past_its_bound_is_one_line(tmp_path: Path):
    """Issue 77, item 3: `--prices FIFO` hung and `--prices /dev/zero` ran out of memory."""
    fifo = tmp_path / "prices.json"
    os.mkfifo(fifo)
    large = tmp_path / "large.json"
    with large.open("wb") as out:
        out.truncate(PRICES_MOST + 1)
    for path, why in [
        (fifo, "a FIFO, not a regular file"),
        (Path("/dev/zero"), "a character device, not a regular file"),
        (large, f"{PRICES_MOST + 1:,} bytes, over the 4 MiB that a price file can hold; not read"),
    ]:
        with within(10, f"--prices {path}"), pytest.raises(UserError) as caught:
            PriceTable.load(path)
        assert str(caught.value) == f"--prices {path}: cannot be read ({why})"
