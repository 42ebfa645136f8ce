"""An alias: a backend, a checkpoint and its settings, standing for a model whatever the benchmark: its arguments, its
training window (recorded, never enforced), its official wrapper's own input settings (`rules`, on every task), what
gives it its own context, and where any paper's run of it departs because of its backend.

What a paper did with it (the name it gave the model, the checkpoint or snapshot it ran, the arguments and per-task
input rules of that benchmark's official run) is the benchmark's (`harness.models.paper_models`): `benchmark_args`
and `run_policy` read it from the benchmarks of a run's tasks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.config.benchmark import Benchmark
from harness.errors import UserError
from harness.inputs.input_policy import InputPolicy, TaskRule, policy_for
from harness.models.paper_models import PaperModel, PaperModels, papers


@dataclass(frozen=True)
class Alias:
    backend: str
    args: dict[str, str] = field(default_factory=dict)
    note: str = ""
    trained_context: int | None = None  # informational: the training window (Table 10 of MMLongBench)
    rules: tuple[TaskRule, ...] = ()  # its own input settings (its official wrapper's, on every task: `*`)
    departs: str = ""  # where every paper's run of it departs because of its backend (a vLLM engine's length)
    own_context: dict[str, str] = field(default_factory=dict)  # what gives it its own context (`own_context`)

    def status(self, run: PaperModel) -> str:
        """How it runs a paper's model: "as the paper", or "departs: why"."""
        departs = "; ".join(filter(None, (run.departs, self.departs)))
        return f"departs: {departs}" if departs else "as the paper"

    def describe(self, name: str, benchmarks: Iterable[Benchmark] = ()) -> dict[str, object]:
        """What the results record about the alias on a run of these benchmarks, beside the arguments it resolved
        to: the paper models it runs there and how, its rules and theirs, and the prompt its official wrapper built
        (the template, system message, prefill and BOS)."""
        from harness.models.prompt_style import style_named

        runs = [(benchmark, run) for benchmark, table in papers(benchmarks) if (run := table.run_by(name))]
        rules = [*self.rules, *(rule for _, run in runs for rule in run.rules)]
        return {
            "trained_context": self.trained_context,
            "paper_name": runs[0][1].name if runs else None,
            "note": self.note,
            "papers": {
                benchmark.name.lower(): {
                    "paper_name": run.name,
                    "ran": run.ran,
                    "status": self.status(run),
                    "args": dict(run.args),
                }
                for benchmark, run in runs
            },
            "rules": [{"tasks": list(r.tasks), **r.policy.describe(), "why": r.why} for r in rules],
            "prompt": style_named(self.args.get("prompt_style", "default")).describe(),
        }


def run_policy(alias: Alias, name: str, task: str, table: PaperModels | None) -> InputPolicy:
    """The input policy of the alias `name` on `task`, a task of the benchmark whose paper models are `table`: its own
    rules, then its paper run's there (later rules over earlier ones)."""
    run = table.run_by(name) if table is not None else None
    return policy_for(task, (*alias.rules, *(run.rules if run is not None else ())))


def benchmark_args(
    name: str, alias: Alias, benchmarks: Iterable[Benchmark], given: Iterable[str] = ()
) -> dict[str, str]:
    """The alias's arguments for a run of these benchmarks: its own, with what each benchmark's paper needs over them
    (its context for a benchmark that truncates to it, its paper run's arguments); a UserError where two of the
    benchmarks need different values of one argument the command line does not set (the run cannot be both official
    runs at once)."""
    chosen: dict[str, tuple[str, str]] = {}
    given = set(given)
    for benchmark, table in papers(benchmarks):
        run = table.run_by(name)
        context = alias.own_context if table.own_context else {}
        wanted: dict[str, str] = {**alias.args, **context, **(run.args if run else {})}
        for key, value in wanted.items():
            if key in given:
                continue
            if key in chosen and chosen[key][1] != value:
                other, was = chosen[key]
                raise UserError(
                    f"alias {name}: {other} runs it with {key}={was} and {benchmark.name} with "
                    f"{key}={value}; run the two benchmarks separately, or give {key}=... in --model_args"
                )
            chosen[key] = (benchmark.name, value)
    return {**alias.args, **{key: value for key, (_, value) in chosen.items()}}
