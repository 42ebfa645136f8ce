"""The estimate `--screen_only` prints and `--max_cost` checks, from the screen's counts: the judge's part (its prompts
at 4 characters a token with the answer at its longest quoted in each, its replies at its max_gen_toks, at its own
price), and an answer nothing bounds, said to be so rather than priced at a cap that is not sent."""

from __future__ import annotations

import math

import pytest

from harness.models.facts.pricing import Price, PriceTable, Rates
from harness.models.shared.screen_model import OutputCap
from harness.running.cost_estimate import CacheTally, cap_notes, cost_lines, estimate, total_usd, unbounded
from harness.running.screen_only import SENT, ScreenedTask, Verdict


def _task() -> ScreenedTask:
    """Two summaries sent (1,000 prompt tokens in all, 100 answer tokens at most each), three judge calls each."""
    return ScreenedTask(
        "summ",
        samples=2,
        max_gen_toks=100,
        sent_prompt_tokens=1000,
        judge_chars=4001,
        judge_calls=6,
        judge_max_gen_toks=50,
        judge_model="judge-x",
    )


def _table() -> PriceTable:
    def price(name: str, rates: Rates) -> Price:
        return Price(name, "test", "2026-11-24", "here", rates, batch=0.5)

    return PriceTable({"model-m": price("model-m", Rates(1.0, 2.0)), "judge-x": price("judge-x", Rates(3.0, 4.0))})


def test_the_judges_part_is_its_prompts_with_the_answers_and_its_replies_at_its_price():
    model, judge = estimate("model-m", [_task()], _table(), judging=True)
    assert (model.requests, model.input_tokens, model.output_tokens) == (2, 1000, 200)
    assert model.usd == pytest.approx((1000 * 1.0 + 200 * 2.0) / 1e6)
    # 4,001 characters at 4 a token (rounded up), plus each of the 6 prompts quoting an answer at its longest (100).
    assert (judge.who, judge.served, judge.requests) == ("judge", "judge-x", 6)
    assert (judge.input_tokens, judge.output_tokens) == (math.ceil(4001 / 4) + 6 * 100, 6 * 50)
    assert judge.usd == pytest.approx(((1001 + 600) * 3.0 + 300 * 4.0) / 1e6)
    assert total_usd([model, judge]) == pytest.approx(model.usd + judge.usd)
    lines = cost_lines([model, judge])
    assert "| judge | summ | judge-x | 6 | 1,601 | 300 | 0.01 |" in lines
    assert (
        f"\nEstimated cost: ${model.usd + judge.usd:,.2f} (model ${model.usd:,.2f}, judge ${judge.usd:,.2f})." in lines
    )
    # Through the batch interfaces, both at their factor.
    batch = estimate("model-m", [_task()], _table(), judging=True, batch=True)
    assert total_usd(batch) == pytest.approx(total_usd([model, judge]) / 2)


def test_the_runs_judge_replaces_the_tasks_and_without_judging_there_is_none():
    _, judge = estimate("model-m", [_task()], _table(), "judge-y", judging=True)
    assert judge.served == "judge-y" and judge.priced_as is None and judge.usd is None
    assert "\nNo estimate: no price for judge-y in the price table" in " ".join(
        cost_lines(estimate("model-m", [_task()], _table(), "judge-y", judging=True))
    )
    assert [e.who for e in estimate("model-m", [_task()], _table(), judging=False)] == ["model"]


def test_an_answer_nothing_bounds_is_said_to_be_unbounded():
    cap = OutputCap(bounded=False, note="model-m is sent no output cap")
    model, judge = estimate("model-m", [_task()], _table(), judging=True, model_cap=cap)
    assert (model.unbounded, model.output_tokens, model.usd) == ("output", 0, pytest.approx(1000 / 1e6))
    # The judge's replies are bounded; its prompts quote answers that are not.
    assert (judge.unbounded, judge.input_tokens, judge.output_tokens) == ("input", 1001, 300)
    assert unbounded([model, judge]) == ["model-m"]
    lines = cost_lines([model, judge])
    assert "| model | summ | model-m | 2 | 1,000 | not bounded | at least 0.00 |" in lines
    assert "| judge | summ | judge-x | 6 | 1,001 and the answers | 300 | at least 0.00 |" in lines
    assert "- model-m is sent no output cap." in lines
    assert any("not an upper bound: nothing bounds the answers of model-m." in line for line in lines)


def test_a_cap_of_its_own_or_the_models_output_limit_prices_each_answer():
    for cap, most in ((OutputCap(), 100), (OutputCap(40, note="a cap"), 40), (OutputCap(65536, note="a limit"), 65536)):
        (model,) = estimate("model-m", [_task()], _table(), model_cap=cap)
        assert model.output_tokens == 2 * most and not model.unbounded


def test_a_caps_note_is_said_for_those_paid_only():
    judge_cap = OutputCap(bounded=False, note="judge-x is sent no output cap")
    model_cap = OutputCap(65536, note="model-m is priced at its output limit")
    lines = cost_lines(
        estimate("model-m", [_task()], _table(), judging=False, model_cap=model_cap, judge_cap=judge_cap)
    )
    assert "- model-m is priced at its output limit." in lines
    assert not any("judge-x" in line for line in lines)  # no judge runs (`--predict_only`): nothing of its cap
    judged = estimate("model-m", [_task()], _table(), judging=True, model_cap=model_cap, judge_cap=judge_cap)
    assert cap_notes(judged) == ["model-m is priced at its output limit", "judge-x is sent no output cap"]
    assert cap_notes(judged, unbounded_only=True) == ["judge-x is sent no output cap"]


def test_each_request_is_estimated_by_its_own_prompt_as_google_bills_it():
    task = ScreenedTask("long", max_gen_toks=1_000)
    for sample, tokens in (("a", 250_000), ("b", 100_000)):  # as the screen adds each sample
        task.add(Verdict(sample, SENT, prompt_tokens=tokens), 1_000)
    (model,) = estimate("gemini-2.5-pro", [task], PriceTable.load())
    assert (model.requests, model.input_tokens, model.output_tokens) == (2, 350_000, 2_000)
    # 250,000 x $2.50 + 1,000 x $15 = $0.640 past 200K; 100,000 x $1.25 + 1,000 x $10 = $0.135: $0.775, not the
    # $0.4575 of both at the base rates by their average prompt (175K).
    assert model.usd == pytest.approx(0.775)
    # With the provider's cache: each request's own reads, at its own tier. The 250K one reads 200,000 (x $0.625)
    # and pays 50,000 x $2.50 + 1,000 x $15 = $0.265; the 100K one reads nothing, $0.135: $0.40.
    tally = CacheTally("implicit", requests=2, read=200_000, per_request=[(250_000, 200_000, 0), (100_000, 0, 0)])
    (cached,) = estimate("gemini-2.5-pro", [task], PriceTable.load(), caching={"long": tally})
    assert cached.cached_usd == pytest.approx(0.40)


def test_each_judge_call_is_estimated_by_its_own_prompt():
    task = ScreenedTask("summ", max_gen_toks=100)
    for sample, chars in (("a", 8_000), ("b", 800)):  # one judge call each
        task.add(Verdict(sample, SENT, prompt_tokens=10, judge_chars=chars, judge_stages=1), 100)
    judged = Price("judge-l", "test", "2026-11-25", "here", Rates(1.0, 0.0), long_context=(1_000, Rates(2.0, 0.0)))
    table = PriceTable({"judge-l": judged})
    (_, judge) = estimate(None, [task], table, "judge-l", judging=True)
    # Call a: 8,000 / 4 + the answer's 100 = 2,100 tokens, past 1,000: x $2 = $0.0042; call b: 200 + 100 = 300 x $1 =
    # $0.0003; $0.0045. By their average (1,200, past 1,000) both would read $2: $0.0048.
    assert (judge.requests, judge.input_tokens, judge.prompts) == (2, 2_400, (2_100, 300))
    assert judge.usd == pytest.approx(0.0045)
