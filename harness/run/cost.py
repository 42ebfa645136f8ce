"""A run's cost before it runs, and its budget while it runs (`--screen_only`'s estimate, `--max_cost`): the screen's
counts of every request priced by the price table, without the provider's prompt cache and with it
(`harness.running.cost_estimate`), the run refused where the larger estimate is over the budget,
and the budget the runner charges each answer to, cache reads and writes at their prices (`harness.running.budget`)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.errors import UserError
from harness.models.facts.pricing import PriceTable
from harness.models.shared.screen_model import OutputCap, ScreenModel
from harness.outputs.results.cost_record import CostEntry, task_costs
from harness.run.models import judge_args, run_policies
from harness.run.plan import RunPlan
from harness.running.budget import Budget
from harness.running.cost_estimate import Estimate, cache_tallies, cap_notes, estimate, total_usd, unbounded, unpriced
from harness.running.screen_only import ScreenedTask
from harness.running.task.task import TaskResult


def screened(plan: RunPlan) -> tuple[ScreenModel, list[ScreenedTask]]:
    """The run's every request built and screened as the run would, the model not loaded."""
    from harness.models.backends.replicas.settings import split_pool_args
    from harness.running.screen_only import screen_model, screen_tasks

    try:  # replicas count alike
        model = screen_model(plan.model.backend, split_pool_args(plan.model.backend, plan.model.args)[1])
    except (ValueError, ImportError) as err:
        raise UserError(str(err)) from None
    policies = run_policies(plan)
    results = screen_tasks(
        model,
        plan.tasks,
        plan.options.gen_kwargs,
        plan.options.sampling_seed,
        plan.options.shard,
        policies if policies.by_task else None,
    )
    return model, results


def judge_cap(plan: RunPlan) -> OutputCap:
    """What bounds the judge's replies: its API backend's cap (`--judge_args`), else each call's max_gen_toks."""
    from harness.models.registry import backend_spec
    from harness.running.screen_only import screen_model

    if plan.judge is None or not (spec := backend_spec(plan.judge.backend)).priced:
        return OutputCap()
    served = spec.served_model_arg
    model = None
    if served is not None and served not in plan.judge.given:  # each task's own judge: the first's cap stands
        model = next((t.judge.model for t in plan.tasks if t.judge is not None and t.judge.model), "")
    args = judge_args(plan, model)
    try:
        return screen_model(plan.judge.backend, args).output_cap
    except (ValueError, ImportError):  # bad judge arguments: the judge, opened, says so in its own words
        return OutputCap()


def run_estimate(plan: RunPlan, model: ScreenModel, results: list[ScreenedTask]) -> list[Estimate]:
    judging = plan.judge is not None and not plan.options.predict_only
    judge_model = plan.judge.args.get("model") if plan.judge is not None else None
    table = PriceTable.load(plan.options.prices)
    caching = None
    if model.prompt_cache is not None:  # each task's requests planned in the provider's cache as the run would
        shapes = [(r.task, r.shapes) for r in results]
        caching = cache_tallies(shapes, model.prompt_cache, model.facts.request_order)
        caching = caching if any(tally.groups for tally in caching.values()) else None  # no prefix worth caching
    return estimate(
        model.checkpoint,
        results,
        table,
        judge_model,
        judging,
        plan.options.batch,
        model_cap=model.output_cap,
        judge_cap=judge_cap(plan) if judging else None,
        caching=caching,
    )


def budget_for(plan: RunPlan) -> Budget | None:
    """`--max_cost`'s budget, once the run's estimate is known to be within it (else the run is refused, one line):
    the model's answers charged at its price, each judged task's judge calls at its judge's."""
    limit = plan.options.max_cost
    if limit is None:
        return None
    model, results = screened(plan)
    estimates = run_estimate(plan, model, results)
    total = total_usd(estimates)
    cached = total_usd(estimates, cached=True)  # the larger: cache writes may cost more than the reads save
    total = max(total, cached) if total is not None and cached is not None else total
    table = PriceTable.load(plan.options.prices)
    price = table.price_of(model.checkpoint)
    if total is None or price is None:
        named = unpriced(estimates) or {model.checkpoint or "-": table.why_unpriced(model.checkpoint)}
        missing = ", ".join(f"{name} ({why})" if why else name for name, why in named.items())
        raise UserError(
            f"--max_cost needs a price for {missing}, which the price table does not have: give one with "
            "--prices FILE (docs/cost.md)"
        )
    loose = unbounded(estimates)
    if loose:
        why = "; ".join(cap_notes(estimates, unbounded_only=True))
        raise UserError(f"--max_cost cannot check this run: {why}; nothing was sent")
    if total > limit:
        raise UserError(
            f"the run's estimated cost ${total:,.2f} is over --max_cost ${limit:,.2f} (each answer at the most output "
            "it can be billed for; `--screen_only` shows it per task): nothing was sent"
        )
    judges = {e.task: e.priced_as for e in estimates if e.who == "judge" and e.priced_as is not None}
    return Budget(limit, price, batch=plan.options.batch, judge_prices=judges)


def run_costs(
    plan: RunPlan,
    task_results: list[TaskResult],
    identity: Mapping[str, object],
    judge_served: Mapping[str, str | None],
) -> dict[str, dict[str, CostEntry]]:
    """The results' `cost` record: each task's tokens and USD for the model and the judge, by the names they served
    (`judge_served`: task -> its judge's served model, each task judged by its own)."""
    name = identity.get("served_model")
    table = PriceTable.load(plan.options.prices)
    return task_costs(task_results, name if isinstance(name, str) else None, judge_served, table, plan.options.batch)
