"""Fuzz: what an Anthropic server sends back about its prompt cache (issue 64), and any provider's usage. Any body,
read as the SDK reads an answer (its lenient `construct_type`: no field checked), parses into one `Response`, and its
usage (`cache_creation_input_tokens`, `cache_read_input_tokens`, nested `cache_creation` counts, garbage in any of them)
is priced by every provider's price without an exception: a count that is no count never reaches a bill, a field of
another type is a `malformed_response`."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.api import Response
from harness.models.backends.anthropic_messages.wire import parse_message
from harness.models.facts.pricing import PriceTable, tokens_of
from harness.models.shared.api_client.replies import flatten_usage

from .conftest import JSON, LONG_INTEGERS, bounded, budget, counted, mutated

GOOD = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "red"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "output_tokens": 1,
        "cache_creation_input_tokens": 2048,
        "cache_read_input_tokens": 4096,
        "cache_creation": {"ephemeral_5m_input_tokens": 2048, "ephemeral_1h_input_tokens": 0},
    },
}
COUNTS = st.one_of(
    st.integers(-(2**70), 2**70),
    LONG_INTEGERS.filter(lambda digits: len(digits) < 4300).map(int),  # past that, no JSON reader makes it
    st.sampled_from([-1, 0, 2**53, 2**53 + 1, 2**63, 10**308, 10**309, True, 1.5, math.inf, math.nan, "7", None]),
)
USAGE_KEYS = ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"]


@st.composite
def cache_usage(draw: st.DrawFn) -> dict[str, object]:
    """Anthropic's usage with its cache counts drawn, some of them no count at all."""
    usage: dict[str, object] = {key: draw(COUNTS) for key in draw(st.sets(st.sampled_from(USAGE_KEYS)))}
    if draw(st.booleans()):
        usage["cache_creation"] = draw(st.dictionaries(st.sampled_from(["ephemeral_5m_input_tokens", "x"]), COUNTS))
    return usage


BODIES = st.one_of(
    mutated(GOOD),
    cache_usage().map(lambda usage: {**GOOD, "usage": usage}),
    JSON,
)
PRICES = list(PriceTable.load().prices.values())


def priced(usage: dict[str, int]) -> None:
    billed = tokens_of(usage)
    for price in PRICES:
        for batch in (False, True):
            assert isinstance(price.cost_of(billed, batch=batch), float)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # a field of another type, dumped as it came
@budget(fuzz=3000, ci=40)
@given(body=BODIES)
@example(body={**GOOD, "usage": {"input_tokens": 10**400, "output_tokens": 1}})  # once an OverflowError pricing it
@example(body={**GOOD, "content": 5})  # once a TypeError out of the batch results' reader
def test_any_anthropic_answer_parses_and_its_usage_is_priced(body: object) -> None:
    from anthropic._models import construct_type
    from anthropic.types import Message

    counted()
    with bounded(10, "an Anthropic answer"):
        answer = construct_type(type_=Message, value=body)  # as the SDK builds an answer from a body
        response = parse_message(answer)
        assert isinstance(response, Response) and (response.text is None) == (response.error is not None)
        assert all(isinstance(v, int) and 0 <= v <= 2**53 for v in response.usage.values())
        priced(response.usage)


@budget(fuzz=3000, ci=40)
@given(usage=st.one_of(cache_usage(), JSON), prefix=st.sampled_from(["", "usage."]))
def test_any_usage_flattens_to_counts_every_price_can_bill(usage: object, prefix: str) -> None:
    counted()
    with bounded(5, "usage"):
        flat = flatten_usage(usage, prefix)
        assert all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 2**53 for v in flat.values())
        priced(flat)
        json.dumps(flat)
