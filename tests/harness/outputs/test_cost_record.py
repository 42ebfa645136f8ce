"""The results' `cost` record prices each answer by its own reported prompt, as the providers bill, and sums: a
Gemini 2.5 Pro pair of 250K and 100K prompts is the long-context rate for the first and the base rate for the
second, never both at the rate of their average."""

from __future__ import annotations

import pytest

from harness.models.facts.pricing import PriceTable
from harness.outputs.results.cost_record import cost_entry


def test_a_250k_and_a_100k_gemini_request_are_recorded_as_google_bills_them():
    # Gemini's keys, as the backend flattens them; thinking bills as output.
    usages = [
        {"prompt_token_count": 250_000, "candidates_token_count": 600, "thoughts_token_count": 400},
        {"prompt_token_count": 100_000, "candidates_token_count": 1_000},
    ]
    entry = cost_entry(usages, "gemini-2.5-pro", PriceTable.load())
    # 250,000 x $2.50 + 1,000 x $15 = $0.640 (past 200K: the whole request at the long-context rates); 100,000 x
    # $1.25 + 1,000 x $10 = $0.135; $0.775. The pair's average (175K) would give 352,000 tokens' worth at the base
    # rates, $0.4575.
    assert entry["usd"] == pytest.approx(0.775)
    assert (entry["input_tokens"], entry["output_tokens"], entry["priced_as"]) == (350_000, 2_000, "gemini-2.5-pro")
    # Through the batch interface, half of each.
    assert cost_entry(usages, "gemini-2.5-pro", PriceTable.load(), batch=True)["usd"] == pytest.approx(0.3875)


def test_cached_reads_are_priced_in_their_own_requests_tier():
    usages = [
        {"prompt_token_count": 250_000, "cached_content_token_count": 200_000, "candidates_token_count": 0},
        {"prompt_token_count": 100_000, "cached_content_token_count": 100_000, "candidates_token_count": 0},
    ]
    entry = cost_entry(usages, "gemini-2.5-pro", PriceTable.load())
    # 50,000 x $2.50 + 200,000 x $0.625 = $0.25 past 200K; 100,000 x $0.31 = $0.031 at the base: $0.281.
    assert entry["usd"] == pytest.approx(0.281)
    assert entry["cached_tokens"] == 300_000
